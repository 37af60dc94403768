"""Shared GM bandwidth: one HBM server and one L2 server for all cores, and L2 residency.

Model (chosen from the two in DESIGN.md): each GM transfer reserves the L2 server for
``bytes / l2_bytes_per_cycle`` and the HBM server for ``miss_bytes / hbm_bytes_per_cycle``, first
come first served at transfer granularity; a transfer finishes when both reservations have run.
The aggregate throughput of each server never exceeds its rate, whatever the core count. A core's
own MTE rate and the GM latency are charged by the instruction on its pipe; the transfer ends at
the later of the two.

Error of the model: FIFO instead of fair sharing. With ``n`` transfers of ``B`` bytes starting
together, processor sharing would finish them all at ``n*B/bw``; here they finish at ``B/bw``,
``2B/bw``, ... ``n*B/bw``: the last one and the total are exact, the earlier ones are up to
``(n-1)*B/bw`` early.

L2 residency is tracked per ``l2_line_bytes`` line of GM. A transfer touches the lines its blocks
overlap, and only those: a strided read marks the lines of its blocks resident, never the gaps
between them. A read hits on resident lines and misses to HBM on the others; a missed line is
filled whole, so a read that ends inside a line pays for all of it and the next tile's read of
the rest hits. Both reads and writes allocate their lines; writes go through to HBM
(write-through), so an operator's outputs always cost HBM bandwidth. When L2 is full the lines
inserted first are evicted first (FIFO, not LRU). An operator's inputs start in HBM, not in L2.
Not modelled: HBM bank/channel conflicts, refresh, L2 set associativity, read/write turnaround.
"""

from collections import deque

import numpy as np
from numpy.lib.stride_tricks import as_strided

from npusim.engine.memory import anonymous_mapping
from npusim.isa.move import block_span


class L2Cache:
    """Which GM lines are resident in L2 (a bit per line, FIFO eviction). ``order`` holds the
    insertions, oldest first: ``(a, b)`` line ranges and arrays of lines."""

    def __init__(self, gm_bytes: int, l2_bytes: int, line_bytes: int):
        self.line = line_bytes
        self.capacity = l2_bytes // line_bytes
        # a byte per line in an anonymous mapping (untouched pages cost no RAM): numpy's view
        # for the strided work, a slice of the bytes themselves for the short ranges most
        # transfers touch (a C count, no numpy call)
        lines = gm_bytes // line_bytes + 2
        held = anonymous_mapping(lines, shared=False)
        self.bits = held if held is not None else bytearray(lines)
        self.resident = np.frombuffer(self.bits, np.bool_)
        self.count = 0
        self.order: deque = deque()

    def access(self, lo: int, hi: int) -> int:
        """Touch [lo, hi); return how many of its lines were not resident (now they are)."""
        a, b = lo // self.line, -(-hi // self.line)
        missed = self.bits[a:b].count(0)      # 0 for an empty range
        if missed:
            self.resident[a:b] = True
            self.count += missed
            self.order.append((a, b))
            if self.count > self.capacity:
                self._evict()
        return missed

    def access_blocks(self, addr: int, count: int, length: int, stride: int) -> int:
        """Touch ``count`` blocks of ``length`` bytes ``stride`` apart from ``addr``; return how
        many of the lines they overlap were not resident. Gaps between blocks are not touched."""
        if count <= 1 or stride - length < self.line:   # no gap can hold a whole line
            return self.access(addr, addr + block_span(addr, count, length, stride))
        grid = self._grid(addr, count, length, stride)
        if grid is not None:                  # the two common cases without index arrays
            hits = int(np.count_nonzero(grid))
            if hits == grid.size:
                return 0
            if hits == 0:
                return self._insert_rows(grid, addr // self.line, stride // self.line)
        fresh = self._fresh_lines(addr, count, length, stride)
        if fresh.size:
            self.resident[fresh] = True
            self.count += int(fresh.size)
            self.order.append(fresh)   # evicted a line at a time (see _evict)
            if self.count > self.capacity:
                self._evict()
        return int(fresh.size)

    def _grid(self, addr: int, count: int, length: int, stride: int):
        """The residency bits of the blocks' lines as a (count, lines per block) view, when
        the stride is whole lines and the blocks' lines are apart; else None."""
        line = self.line
        if stride % line:
            return None
        first, step = addr // line, stride // line
        per = (addr + length - 1) // line - first + 1
        if per >= step or first + count * step > len(self.resident):
            return None
        return self.resident[first:first + count * step].reshape(count, step)[:, :per]

    def _insert_rows(self, grid, first: int, step: int) -> int:
        """Every line of ``grid`` was absent: its lines, in address order, become one entry
        (as in access_blocks' general path)."""
        grid[...] = True
        count, per = grid.shape
        self.count += count * per
        rows = np.arange(first, first + count * step, step, dtype=np.int64)
        self.order.append((rows[:, None] + np.arange(per, dtype=np.int64)).ravel())
        if self.count > self.capacity:
            self._evict()
        return count * per

    def _fresh_lines(self, addr: int, count: int, length: int, stride: int) -> np.ndarray:
        """The lines of the blocks that are not resident, ascending. The gap of at least a
        line keeps every block's lines apart and the blocks in address order, so the lines
        are sorted and distinct."""
        line = self.line
        if stride % line == 0:   # every block spans the same number of lines: a strided view
            first, per = addr // line, (addr + length - 1) // line - addr // line + 1
            grid = as_strided(self.resident[first:], shape=(count, per),
                              strides=(stride // line, 1))
            k = np.flatnonzero(~grid)
            return first + (k // per) * (stride // line) + k % per
        return self._fresh_lines_general(addr, count, length, stride)

    def _fresh_lines_general(self, addr: int, count: int, length: int,
                             stride: int) -> np.ndarray:
        line = self.line
        starts = addr + stride * np.arange(count, dtype=np.int64)
        first, last = starts // line, (starts + length - 1) // line
        lines = first[:, None] + np.arange(int((last - first).max()) + 1)[None, :]
        lines = lines[lines <= last[:, None]]
        return lines[~self.resident[lines]]

    def _evict(self) -> None:
        """Evict first-inserted first. An ``access`` range, an ``(a, b)`` entry, goes whole;
        the lines ``access_blocks`` inserted, an array entry, go a line at a time, as if each
        line were its own entry: only those that bring the count down to the capacity."""
        order, resident = self.order, self.resident
        while self.count > self.capacity and order:
            entry = order.popleft()
            if isinstance(entry, tuple):
                window = resident[entry[0]:entry[1]]
                self.count -= int(np.count_nonzero(window))
                window[:] = False
                continue
            there = resident[entry]
            excess, held = self.count - self.capacity, int(np.count_nonzero(there))
            if held >= excess:   # the last entry this eviction touches: cut it
                k = int(np.searchsorted(np.cumsum(there), excess)) + 1
                if k < entry.size:
                    order.appendleft(entry[k:])
                entry, held = entry[:k], excess
            resident[entry] = False
            self.count -= held


class GmBandwidth:
    """The HBM and L2 servers shared by every core of a launch; times are in cycles."""

    def __init__(self, chip, gm_bytes: int):
        self.hbm_rate = chip.hbm_bytes_per_cycle
        self.l2_rate = chip.l2_bytes_per_cycle
        self.l2 = L2Cache(gm_bytes, chip.l2_bytes, chip.l2_line_bytes)
        self.hbm_free = 0.0
        self.l2_free = 0.0
        self.hbm_bytes = 0.0
        self.l2_hit_bytes = 0.0

    def transfer(self, now: float, blocks, nbytes: int, write: bool) -> float:
        """Reserve the servers for one transfer starting at ``now``; return its finish time.
        ``blocks`` are the GM side's (addr, count, length, stride) groups, in bytes."""
        l2 = self.l2
        missed = (l2.access_blocks(*blocks[0]) if len(blocks) == 1
                  else sum(l2.access_blocks(*g) for g in blocks))
        return self._serve(now, missed * l2.line, nbytes, write)

    def _serve(self, now: float, missed_bytes: int, nbytes: int, write: bool) -> float:
        """Reserve L2 for ``nbytes`` and HBM for what a write writes or a read takes from it
        (``missed_bytes``); when both reservations end."""
        self.l2_free = max(now, self.l2_free) + nbytes / self.l2_rate
        hbm = nbytes if write else missed_bytes
        self.l2_hit_bytes += max(nbytes - hbm, 0.0) if not write else 0.0
        if hbm <= 0:
            return self.l2_free
        self.hbm_bytes += hbm
        self.hbm_free = max(now, self.hbm_free) + hbm / self.hbm_rate
        return max(self.l2_free, self.hbm_free)

    def reserve(self, now: float, nbytes: float, hbm: float) -> float:
        """Hold both servers for ``nbytes`` through L2 and ``hbm`` of them to HBM, with no
        lines touched: the transfers a fast run's steady skip left out (isa/steady.py).
        Returns when both reservations end."""
        return self._serve(now, hbm, nbytes, write=False)
