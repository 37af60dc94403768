"""The stable Sort of non-negative int32 keys with their positions, shared by the families that
sort indices (the embedding's Sort before EmbeddingDenseGradV2, kernels.md §4(b); MoeTokenPermute's
two sorts, kernels.md §5(a)).

The keys are read as fp32 bit patterns (non-negative int32 values order like their float
patterns, NaN patterns excepted: keys up to 0x7F800000). ``sort_keys`` picks the kernels:

- up to ``chunk`` keys: ``SortIndicesKernel``, one vector core copies the keys into UB, runs the
  vector Sort (``isa/vector_index.py``: Sort32 + MrgSort passes, stable) and copies the sorted
  keys and the uint32 positions back out as int32;
- more: ``launch_sort``. ``SortChunksKernel``: each core sorts chunks of ``chunk`` keys in UB
  (vector Sort, stable) and writes the sorted keys and their rows (the Sort's positions plus the
  chunk's first row, an Adds on int32) to a GM run. ``MergeKernel``: each core merges one pair of
  neighbouring runs A (the earlier rows) and B into one, ``window`` keys of each at a time: both
  windows go into UB side by side, one stable Sort orders them by (key, A before B, row); the
  scalar finds, by binary search with GetValue, the prefix that is final: with a = A's last
  loaded key and b = B's (either absent when its run is used up), every key < a plus A's keys ==
  a when a <= b, else every key <= b. The prefix's rows are gathered (Gather by the Sort's
  positions) and both go out; one of the windows is always wholly used, so the merge advances.
  Passes double the run length until one run is left: the result is the stable sort of all
  keys, as aclnn's Sort gives.

Modelled: the traffic, Sort, Gather and the scalar's binary searches. Not modelled: CANN's own
multi-core sorts (the Sort operator's tiling was not examined; MoeTokenPermute's VBS / VMS /
SortOut kernels with their 4-way MrgSort were read but are not reproduced): these kernels stand
for them.
"""

import numpy as np

from npusim.dsl import (
    DataCopyExtParams,
    HardEvent,
    Kernel,
    TBuf,
    TPosition,
    TQue,
    data_copy_pad,
    get_block_idx,
    get_block_num,
    get_value,
    set_flag,
    wait_flag,
)
from npusim.dsl import vector as vec
from npusim.ops.common import round_up

SORT_BYTES_PER_ROW = 12  # one-UB Sort: key in, key out, uint32 position out
MERGE_BYTES = 40    # UB bytes per window key: keys, rows, sorted keys, positions, gathered rows
CHUNK_BYTES = 12    # UB bytes per key of a chunk sort: keys, sorted keys, positions


def merge_window(chip) -> int:
    return chip.ub_bytes // MERGE_BYTES // 32 * 32


def _copy(dst, src, n: int) -> None:
    data_copy_pad(dst, src, DataCopyExtParams(block_count=1, block_len=n * 4))


def _sync(event: str) -> None:
    set_flag(event)
    wait_flag(event)


class SortChunksKernel(Kernel):
    """Runs of ``chunk`` sorted keys with their rows."""

    def init(self, keys, run_keys, run_pos, rows: int, chunk: int):
        self.keys, self.run_keys, self.run_pos = keys, run_keys, run_pos
        self.rows, self.chunk = rows, chunk
        self.buf = TBuf(TPosition.VECCALC, name="chunkSortBuf")
        self.pipe.init_buffer(self.buf, CHUNK_BYTES * chunk)

    def process(self):
        c, n_cores = get_block_idx(), get_block_num()
        work, k = self.buf.get("float32"), self.chunk
        keys, values, slots = work[0], work[k], self.buf.get("uint32")[2 * k]
        for first in range(c * k, self.rows, k * n_cores):
            n = min(k, self.rows - first)
            _copy(keys, self.keys[first], n)
            _sync(HardEvent.MTE2_V)
            vec.sort_ascending(values, slots, keys, n)
            pos = slots.reinterpret_cast("int32")
            vec.adds(pos, pos, first, n)
            _sync(HardEvent.V_MTE3)
            _copy(self.run_keys[first], values, n)
            _copy(self.run_pos[first], pos, n)
            _sync(HardEvent.MTE3_MTE2)
            _sync(HardEvent.MTE3_V)


class MergeKernel(Kernel):
    """Pairs of runs of ``run`` keys merged into runs of 2 x ``run`` (pair p on core
    p mod block_num)."""

    reads_data = True

    def init(self, src_keys, src_pos, dst_keys, dst_pos, rows: int, run: int, window: int):
        self.src_keys, self.src_pos, self.dst_keys, self.dst_pos = (src_keys, src_pos,
                                                                    dst_keys, dst_pos)
        self.rows, self.run, self.w = rows, run, window
        self.buf = TBuf(TPosition.VECCALC, name="mergeBuf")
        self.pipe.init_buffer(self.buf, MERGE_BYTES * window)

    def process(self):
        w2 = 2 * self.w
        f32, i32 = self.buf.get("float32"), self.buf.get("int32")
        self.keys, self.rows_in = f32[0], i32[w2]
        self.values, self.slots = f32[2 * w2], self.buf.get("uint32")[3 * w2]
        self.gathered = i32[4 * w2]
        pairs = -(-self.rows // (2 * self.run))
        for p in range(get_block_idx(), pairs, get_block_num()):
            start, rows = p * 2 * self.run, self.rows
            self.a = [min(start, rows), min(start + self.run, rows)]
            self.b = [min(start + self.run, rows), min(start + 2 * self.run, rows)]
            self.out = self.a[0]
            self.merge()

    def merge(self):
        w2 = 2 * self.w
        while self.a[0] < self.a[1] and self.b[0] < self.b[1]:
            self.step()
        for lo, hi in (self.a, self.b):      # the rest of the run that is left
            for first in range(lo, hi, w2):
                n = min(w2, hi - first)
                self.copy_through(first, n)

    def step(self):
        na, nb = min(self.w, self.a[1] - self.a[0]), min(self.w, self.b[1] - self.b[0])
        _copy(self.keys, self.src_keys[self.a[0]], na)
        _copy(self.keys[na], self.src_keys[self.b[0]], nb)
        _copy(self.rows_in, self.src_pos[self.a[0]], na)
        _copy(self.rows_in[na], self.src_pos[self.b[0]], nb)
        _sync(HardEvent.MTE2_V)
        _sync(HardEvent.MTE2_S)
        vec.sort_ascending(self.values, self.slots, self.keys, na + nb)
        vec.muls(self.keys, self.keys, -1.0, na + nb)   # the last keys, read below, back
        _sync(HardEvent.V_S)
        ints = self.keys.reinterpret_cast("int32")
        last_a = get_value(ints, na - 1) if self.a[0] + na < self.a[1] else None
        last_b = get_value(ints, na + nb - 1) if self.b[0] + nb < self.b[1] else None
        sorted_ints = self.values.reinterpret_cast("int32")
        if last_a is not None and (last_b is None or last_a <= last_b):
            done = _bisect(sorted_ints, 0, na + nb, last_a, right=False) + na \
                - _bisect(ints, 0, na, last_a, right=False)
            used_a, used_b = na, done - na
        elif last_b is not None:
            done = _bisect(sorted_ints, 0, na + nb, last_b, right=True)
            used_a, used_b = done - nb, nb
        else:
            done, used_a, used_b = na + nb, na, nb
        offsets = self.slots.reinterpret_cast("int32")
        vec.muls(offsets, offsets, 4, done)
        vec.gather(self.gathered, self.rows_in, self.slots, 0, done)
        _sync(HardEvent.V_MTE3)
        _copy(self.dst_keys[self.out], self.values, done)
        _copy(self.dst_pos[self.out], self.gathered, done)
        _sync(HardEvent.MTE3_MTE2)
        _sync(HardEvent.MTE3_V)
        _sync(HardEvent.S_MTE2)     # the scalar's reads of this window precede the next
        _sync(HardEvent.S_V)
        self.out += done
        self.a[0] += used_a
        self.b[0] += used_b

    def copy_through(self, first: int, n: int):
        _copy(self.keys, self.src_keys[first], n)
        _copy(self.rows_in, self.src_pos[first], n)
        _sync(HardEvent.MTE2_MTE3)
        _copy(self.dst_keys[self.out], self.keys, n)
        _copy(self.dst_pos[self.out], self.rows_in, n)
        _sync(HardEvent.MTE3_MTE2)
        self.out += n


def _bisect(tensor, lo: int, hi: int, key: int, *, right: bool) -> int:
    """The first index in [lo, hi) of sorted ``tensor`` whose value is >= key (> key when
    ``right``), by GetValue."""
    while lo < hi:
        mid = (lo + hi) // 2
        value = get_value(tensor, mid)
        if value < key or (right and value == key):
            lo = mid + 1
        else:
            hi = mid
    return lo


def launch_sort(run, keys, sorted_keys, pos, rows: int, chunk: int, window: int) -> None:
    """Chunk sorts, then merge passes, ending in ``sorted_keys`` / ``pos``."""
    chunks = -(-rows // chunk)
    cores = min(chunks, run.chip.vector_core_count)
    bufs = [(run.gm.tensor("sort.keys0", np.int32, rows), run.gm.tensor("sort.pos0", np.int32,
                                                                        rows)),
            (run.gm.tensor("sort.keys1", np.int32, rows), run.gm.tensor("sort.pos1", np.int32,
                                                                        rows))]
    run.launch(SortChunksKernel, block_dim=cores, name="Sort(chunks)",
               args=dict(keys=keys, run_keys=bufs[0][0], run_pos=bufs[0][1], rows=rows,
                         chunk=chunk))
    length, src = chunk, 0
    while length < rows:
        pairs = -(-rows // (2 * length))
        last = 2 * length >= rows
        dst = (sorted_keys, pos) if last else bufs[1 - src]
        run.launch(MergeKernel, block_dim=min(pairs, run.chip.vector_core_count),
                   name=f"Sort(merge {length}+{length})",
                   args=dict(src_keys=bufs[src][0], src_pos=bufs[src][1], dst_keys=dst[0],
                             dst_pos=dst[1], rows=rows, run=length,
                             window=window))
        length, src = 2 * length, 1 - src



class SortIndicesKernel(Kernel):
    """(sortedIndices, posIdx) = stable ascending sort of the int32 indices."""

    def init(self, indices, sorted_indices, pos_idx, rows: int, sort_rows: int):
        self.indices, self.sorted, self.pos, self.rows = indices, sorted_indices, pos_idx, rows
        nbytes = sort_rows * 4
        self.in_que = TQue(TPosition.VECIN, 1, name="keyQueue")
        self.val_que = TQue(TPosition.VECOUT, 1, name="sortedQueue")
        self.idx_que = TQue(TPosition.VECOUT, 1, name="posQueue")
        for que in (self.in_que, self.val_que, self.idx_que):
            self.pipe.init_buffer(que, 1, nbytes)

    def process(self):
        self.copy_in()
        self.compute()
        self.copy_out()

    def copy_in(self):
        keys = self.in_que.alloc_tensor("float32")     # int32 bits read as fp32 keys
        data_copy_pad(keys, self.indices, DataCopyExtParams(block_count=1,
                                                            block_len=self.rows * 4))
        self.in_que.enque(keys)

    def compute(self):
        keys = self.in_que.deque()
        values = self.val_que.alloc_tensor("float32")
        positions = self.idx_que.alloc_tensor("uint32")
        vec.sort_ascending(values, positions, keys, self.rows)
        self.val_que.enque(values)
        self.idx_que.enque(positions)
        self.in_que.free_tensor(keys)

    def copy_out(self):
        params = DataCopyExtParams(block_count=1, block_len=self.rows * 4)
        values, positions = self.val_que.deque(), self.idx_que.deque()
        data_copy_pad(self.sorted, values, params)
        data_copy_pad(self.pos, positions, params)
        self.val_que.free_tensor(values)
        self.idx_que.free_tensor(positions)


def sort_capacity(chip) -> int:
    """Keys one UB sorts in one go (SortIndicesKernel)."""
    return chip.ub_bytes // SORT_BYTES_PER_ROW // 32 * 32


def sort_keys(run, keys, sorted_keys, pos, rows: int, *, chunk: int, window: int) -> None:
    """(``sorted_keys``, ``pos``) = the stable ascending sort of ``rows`` int32 ``keys`` and
    each one's original position: one core when ``rows`` <= ``chunk``, else chunks and merges."""
    if rows <= chunk:
        run.launch(SortIndicesKernel, block_dim=1, name="Sort",
                   args=dict(indices=keys, sorted_indices=sorted_keys, pos_idx=pos,
                             rows=rows, sort_rows=round_up(max(rows, 1), 32)))
    else:
        launch_sort(run, keys, sorted_keys, pos, rows, chunk, window)
