"""Reads of on-chip bytes that nothing wrote: the race detector's second finding.

On the chip an on-chip buffer holds whatever the last kernel left there; the simulator's
buffers start as zeros, so a kernel that reads bytes it never wrote (a ``data_copy_l0c_to_ub``
of half the tile, then a vector op over the whole tile) gives a wrong answer quietly. The
detector keeps, per buffer, the byte ranges written so far in this launch (merged, sorted), and
a read that reaches past them is a finding: ``UnwrittenReadError: read of bytes never written``.

It is reported at the end of the run, not at the read: in simulated time a pipe that lacks a
``wait_flag`` may read before the write it should have followed; the write then races with the
read and the race is what the detector reports (a missing flag is the real defect). A read that
nothing wrote before the end of the run and no write raced with is the finding. Only the first
such read is reported.

Scope, from what the chip does: a move from GM (``data_copy``, ``data_copy_pad``) writes
on-chip memory in whole 32-byte blocks, so the tail of its last block (DataCopyPad's padding,
undefined without ``is_pad``) counts as written: kernels legitimately compute over that padding
and copy out only the valid part (TransData's ``trans_data_to_5hd`` over a 232-byte row). A
move's written bytes are its ``writes()`` span, first to last block, gaps included (fewer
findings, never a false one). An instruction whose bytes read depend on the data (``checks_data``:
gather, whose ``reads()`` names its source's whole window, not the elements it picks) is not
checked; nor is ``trans_data_to_5hd`` (``UNCHECKED``), which transposes whole 16-row blocks: a
kernel with fewer rows lets the rest be padding whose outputs land in columns it never copies
out (TransData's ``transpose_back``), as Ascend C's TransDataTo5HD users do; nor ``brcb``,
which takes its source 8 elements a repeat: a kernel broadcasting one value (CrossEntropyLoss-
Grad's ``scaleBuf``) reads 7 more it never wrote and uses only the first block it fills; nor
``load_data`` (LoadData2D, L1 -> L0A/L0B), which moves whole 16 x 16 fractals: a block of A with
fewer than 16 rows (M not a multiple of 16), or a k that ends inside a fractal (``matmul`` with
K not a multiple of 16), reads the fractal's rest, whose products land in rows FixPipe never
writes out, or meet A's k padding that ND2NZ wrote as zeros (not modelled: a NaN left in B's
unwritten k rows, which on the chip would make 0 x NaN a NaN); nor ``local_copy`` (DataCopy
UB -> UB), which moves whole 32-byte blocks: a row whose length is not a whole block is read with
the rest of its last block, which lands in the destination's padding (CrossEntropyLossGrad's
fp32 work rows). GM is not checked here (the operator's inputs are written by the host).
"""

from bisect import bisect_right

from npusim.engine.race_message import nth, operand_label
from npusim.errors import UnwrittenReadError

# read padding by design (see above)
UNCHECKED = frozenset({"trans_data_to_5hd", "brcb", "load_data", "local_copy"})


class Unwritten:
    """Per buffer, the merged ``[lo, hi)`` ranges written so far; the first read outside them."""

    __slots__ = ("starts", "ends", "found")

    def __init__(self):
        self.starts: dict = {}     # buffer -> sorted starts of the written ranges
        self.ends: dict = {}       # buffer -> their ends
        self.found = None          # (buffer, lo, hi, thread, inst, ordinal) of the first read

    def add(self, store, lo: int, hi: int) -> None:
        """Bytes [lo, hi) of ``store`` are written."""
        starts = self.starts.get(store)
        if starts is None:
            self.starts[store], self.ends[store] = [lo], [hi]
            return
        ends = self.ends[store]
        i = bisect_right(starts, lo) - 1
        if i >= 0 and ends[i] >= hi:
            return                                  # already written: the common case
        j = bisect_right(starts, hi)                # ranges starting at or before hi
        if i >= 0 and ends[i] >= lo:                # joins the range before it
            lo = starts[i]
        else:
            i += 1
        hi = max(hi, ends[j - 1]) if j > i else hi
        starts[i:j], ends[i:j] = [lo], [hi]

    def check(self, store, lo: int, hi: int, thread: int, inst, ordinal: int) -> None:
        """A read of [lo, hi): note the first unwritten bytes of it, if any (the first such read
        only)."""
        if self.found is not None:
            return
        starts = self.starts.get(store)
        if starts is not None:
            i = bisect_right(starts, lo) - 1
            if i >= 0 and self.ends[store][i] >= hi:
                return
        gap = self._gap(store, lo, hi)
        if gap is not None:
            self.found = (store, *gap, thread, inst, ordinal)

    def _gap(self, store, lo: int, hi: int) -> tuple | None:
        """The first range of [lo, hi) no written range covers."""
        at = lo
        for s, e in zip(self.starts.get(store, ()), self.ends.get(store, ()), strict=True):
            if e <= at:
                continue
            if s > at:
                return at, min(s, hi)
            at = e
            if at >= hi:
                return None
        return (at, hi) if at < hi else None

    def finish(self, names: dict) -> None:
        """Raise the finding, if any (``names``: thread -> ``aiv0 PIPE-V``)."""
        if self.found is None:
            return
        store, lo, hi, thread, inst, n = self.found
        label = operand_label(inst, store, lo, hi)
        of = f" of {label!r}" if label else ""
        raise UnwrittenReadError(
            f"read of bytes never written: {inst.name} on {names[thread]} (its {nth(n)} "
            f"{inst.name}) reads {store!r} bytes [{lo}, {hi}){of}, which no instruction of "
            "this launch wrote before it; on the chip they hold whatever was there before "
            "(the simulator's zeros would hide it). Write them first, or read only the bytes "
            "written (a copy or a vector op shorter than the tile leaves the rest unwritten)")

