"""Atomic adds into the same GM bytes serialise: the read-modify-write at L2 holds the bytes.

Two atomic-add moves whose GM destination is the same byte range (the same output row chunk)
cannot overlap: the later one's add starts when the earlier one's ends, and takes its own
occupancy (its body on the atomic path) from there. This is what makes many cores adding into
one hot row slow, and why CANN sums runs of one index in UB before the atomic flush.

Modelled: exact-range serialisation, in simulated start order. Not modelled: partly
overlapping ranges (they do not serialise), the L2 atomic unit's own throughput across
different ranges (only the shared L2/HBM servers of ``npusim/engine/bandwidth.py`` apply).
"""


class AtomicLines:
    """When each GM destination range of atomic adds is next free."""

    def __init__(self):
        self.free_at: dict[tuple, float] = {}

    def order(self, key: tuple, start: float, end: float, occupancy: float) -> float:
        """The end of an atomic add into ``key`` that would run [start, end) alone."""
        free = self.free_at.get(key, 0.0)
        if free > start:
            end = max(end, free + occupancy)
        self.free_at[key] = end
        return end
