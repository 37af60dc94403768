"""HBM and L2 accounting of strided GM reads: a read marks resident only the L2 lines its blocks
touch, so a later read of the gaps misses to HBM (it used to mark the whole span resident and
count the gaps as L2 hits of data that never came from HBM)."""

import numpy as np
import pytest

from npusim import load_chip
from npusim.dsl import DataCopyParams, Kernel, TPosition, TQue, data_copy
from npusim.engine.bandwidth import GmBandwidth
from npusim.engine.launch import launch
from npusim.engine.memory import GlobalMemory

SPAN, STRIDE, BLOCK, READS = 256 * 1024, 4096, 32, 64


class StridedReads(Kernel):
    """``READS`` reads of SPAN / STRIDE blocks of 32 B, STRIDE apart, each shifted 32 B."""

    def init(self, x):
        self.x = x
        self.que = TQue(TPosition.VECIN, 1, name="inQueue")
        self.pipe.init_buffer(self.que, 1, SPAN // STRIDE * BLOCK)

    def process(self):
        per = BLOCK // self.x.dtype.itemsize
        for i in range(READS):
            t = self.que.alloc_tensor(self.x.dtype)
            data_copy(t, self.x[i * per], DataCopyParams(
                block_count=SPAN // STRIDE, block_len=1, src_stride=STRIDE // BLOCK - 1))
            self.que.enque(t)
            self.que.free_tensor(self.que.deque())


@pytest.mark.parametrize("chip_name", ["atlas-a2", "atlas-training"])
def test_strided_reads_pay_hbm_for_every_line_they_touch(chip_name):
    chip = load_chip(chip_name)
    gm = GlobalMemory()
    x = gm.tensor("x", np.float16, SPAN, np.zeros(SPAN, np.float16))
    r = launch(StridedReads, chip=chip, block_dim=1, gm=gm, args=dict(x=x), outputs={})
    line = chip.l2_line_bytes
    lines = SPAN // STRIDE * (READS * BLOCK // line)   # distinct lines the reads touch
    charged = READS * SPAN // STRIDE * max(BLOCK, chip.gm_burst_bytes)  # whole bursts
    assert r.stats["gm"]["hbm_bytes"] == lines * line
    assert r.stats["gm"]["l2_hit_bytes"] == charged - lines * line


def test_a_read_of_the_gaps_misses():
    chip = load_chip("atlas-a2")
    bw = GmBandwidth(chip, 1 << 20)
    line = chip.l2_line_bytes
    bw.transfer(0.0, [(0, 16, line, 4 * line)], 16 * line, False)
    assert bw.hbm_bytes == 16 * line and bw.l2_hit_bytes == 0
    bw.transfer(0.0, [(line, 16, line, 4 * line)], 16 * line, False)   # the gaps: all miss
    assert bw.hbm_bytes == 32 * line and bw.l2_hit_bytes == 0
    bw.transfer(0.0, [(0, 1, 2 * line, 2 * line)], 2 * line, False)    # lines 0 and 1: hits
    assert bw.hbm_bytes == 32 * line and bw.l2_hit_bytes == 2 * line


def test_a_dense_read_after_a_strided_one_pays_only_for_the_gaps():
    chip = load_chip("atlas-a2")
    bw = GmBandwidth(chip, 1 << 20)
    line = chip.l2_line_bytes
    bw.transfer(0.0, [(0, 8, line, 2 * line)], 8 * line, False)
    bw.transfer(0.0, [(0, 1, 16 * line, 16 * line)], 16 * line, False)
    assert bw.hbm_bytes == 16 * line and bw.l2_hit_bytes == 8 * line



def test_strided_shortcuts_match_the_general_paths():
    """Blocks a whole number of lines (bursts) apart take a strided view of the residency bits
    (a product for the bursts); misses, residency and FIFO order are the general path's."""
    from npusim.engine.bandwidth import L2Cache
    from npusim.isa.move import burst_bytes

    class General(L2Cache):
        def _fresh_lines(self, addr, count, length, stride):
            return self._fresh_lines_general(addr, count, length, stride)

    rng = np.random.default_rng(3)
    line = 128
    fast, slow = L2Cache(1 << 20, 64 * line, line), General(1 << 20, 64 * line, line)
    for _ in range(400):
        count, length = int(rng.integers(2, 20)), int(rng.integers(1, 5 * line))
        stride = line * (-(-(length + line) // line) + int(rng.integers(0, 3)))
        addr = int(rng.integers(0, 4096)) * line + int(rng.integers(0, line))
        assert fast.access_blocks(addr, count, length, stride) == \
            slow.access_blocks(addr, count, length, stride)
        assert np.array_equal(fast.resident, slow.resident)
        assert _entries(fast) == _entries(slow)
        burst = 32 * int(rng.integers(1, 5))
        bstride = burst * int(rng.integers(1, 40))
        starts = (addr + bstride * np.arange(count)).tolist()
        assert burst_bytes(addr, count, length, bstride, burst) == \
            sum(-(-(s + length) // burst) - s // burst for s in starts) * burst


def _entries(l2):
    """The FIFO as plain values: ``(a, b)`` ranges and single lines."""
    out = []
    for e in l2.order:
        out.extend([e] if isinstance(e, tuple) else e.tolist())
    return out


class LineByLine:
    """The eviction rule written out: an ``access`` range is one entry, every line that
    ``access_blocks`` inserts is its own entry, oldest out first until L2 holds its capacity."""

    def __init__(self, gm_bytes, l2_bytes, line):
        self.line, self.capacity = line, l2_bytes // line
        self.resident, self.order = set(), []

    def _evict(self):
        while len(self.resident) > self.capacity and self.order:
            e = self.order.pop(0)
            self.resident -= set(range(*e)) if isinstance(e, tuple) else {e}

    def access(self, lo, hi):
        a, b = lo // self.line, -(-hi // self.line)
        fresh = set(range(a, b)) - self.resident
        if fresh:
            self.resident |= fresh
            self.order.append((a, b))
            self._evict()
        return len(fresh)

    def access_blocks(self, addr, count, length, stride):
        if count <= 1 or stride - length < self.line:
            end = addr + stride * (count - 1) + length
            return self.access(addr, end)
        lines = sorted({ln for i in range(count) for ln in range(
            (addr + i * stride) // self.line, (addr + i * stride + length - 1) // self.line + 1)})
        fresh = [ln for ln in lines if ln not in self.resident]
        self.resident |= set(fresh)
        self.order.extend(fresh)
        self._evict()
        return len(fresh)


@pytest.mark.parametrize("seed", range(4))
def test_l2_eviction_is_line_by_line_fifo(seed):
    """Ranges and strided reads of every kind, in an L2 a few reads fill: misses and residency
    are those of one FIFO entry per inserted line (a range: one entry)."""
    from npusim.engine.bandwidth import L2Cache

    rng = np.random.default_rng(seed)
    line = 128
    l2, ref = L2Cache(1 << 22, 96 * line, line), LineByLine(1 << 22, 96 * line, line)
    for _ in range(500):
        addr = int(rng.integers(0, 600 * line))
        if rng.random() < 0.3:
            hi = addr + int(rng.integers(1, 20 * line))
            assert l2.access(addr, hi) == ref.access(addr, hi)
        else:
            count, length = int(rng.integers(1, 24)), int(rng.integers(1, 3 * line))
            stride = length + int(rng.integers(0, 4 * line))
            if rng.random() < 0.5:
                stride = -(-stride // line) * line
            assert l2.access_blocks(addr, count, length, stride) == \
                ref.access_blocks(addr, count, length, stride)
        assert set(np.flatnonzero(l2.resident).tolist()) == ref.resident


def test_burst_bytes_is_the_sum_over_blocks():
    """Whatever the stride, the bytes charged are every block's bursts added up (the path
    that sums one period of burst offsets included)."""
    from npusim.isa.move import burst_bytes

    rng = np.random.default_rng(5)
    for _ in range(3000):
        burst = int(rng.choice([32, 128, 512]))
        count, length = int(rng.integers(2, 60)), int(rng.integers(1, 700))
        stride = length + int(rng.choice([0, 32, 64, 96, int(rng.integers(1, 1000))]))
        addr = int(rng.integers(0, 1 << 16))
        if stride == length and addr % burst == 0:
            continue   # a contiguous aligned copy is charged as one span
        blocks = sum(-(-(addr + i * stride + length) // burst) - (addr + i * stride) // burst
                     for i in range(count))
        assert burst_bytes(addr, count, length, stride, burst) == blocks * burst


def test_a_copys_charge_depends_on_its_address_only_within_a_burst():
    """DataCopy.validate keeps one charge per (chip, path, address within its burst, count,
    length, stride): copies of one geometry at addresses a whole number of bursts apart
    cost the same bytes and cycles, and each is what burst_bytes and the rate give."""
    from npusim.engine.memory import Buffer, LocalTensor
    from npusim.isa.move import DataCopy, burst_bytes

    chip = load_chip("atlas-a2")
    gm = GlobalMemory()
    src = gm.tensor("x", np.float16, 1 << 16)
    ub = LocalTensor(Buffer("UB", "aiv0", 1 << 16), 0, np.dtype(np.float16), 1 << 15,
                     1 << 16, "ub")
    rng = np.random.default_rng(11)
    for _ in range(400):
        count, length = int(rng.integers(1, 20)), 32 * int(rng.integers(1, 8))
        stride = length + 32 * int(rng.integers(0, 5))
        offset = 16 * int(rng.integers(0, 2000))          # elements: 32-byte steps
        copy = DataCopy(dst=ub, src=src[offset], block_count=count, block_len=length,
                        src_stride=stride, dst_stride=length)
        copy.validate(chip)
        charged = burst_bytes(src.addr + 2 * offset, count, length, stride,
                              chip.gm_burst_bytes)
        assert copy.charged_bytes(chip) == charged
        assert copy.body(chip) == charged / chip.rate("gm_to_ub_bytes_per_cycle", charged)
