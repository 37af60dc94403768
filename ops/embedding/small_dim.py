"""EmbeddingDenseGradV2's small-dim kernel on Atlas A2 (tiling keys 100/101, kernels.md §4(c)).

For D <= 512 (and numWeights <= 2**24) aclnn skips the global sort. Each core takes a
contiguous share of the (unsorted) rows and walks it in batches of ``batch_rows``: one strided
DataCopyPad brings the batch's grad rows and one its int32 indices into UB; the indices are
cast to fp32 (exact below 2**24) and sorted with their positions in the batch (vector Sort,
stable, ascending); then the scalar walks the sorted keys: rows of one index are Added into a
UB accumulator, and when the index changes (and at the batch's end) the accumulator is
atomically added into out[index] and zeroed. Padding rows are skipped. With scale, each flush
also atomically adds its row count into the counts workspace.

Not deterministic: runs of one index in different batches or cores meet in GM atomics in
simulated-time order. Not modelled: the fp32 shadow output of the uncast 16-bit path (aclnn
casts 16-bit grads to fp32 first here), and the CreateVecIndex/Extract pair, which the Sort
instruction's position output stands for.
"""

from npusim.dsl import (
    DataCopyExtParams,
    HardEvent,
    Kernel,
    Pipe,
    TBuf,
    TPosition,
    TQue,
    data_copy_pad,
    get_block_idx,
    get_value,
    set_flag,
    set_value,
    wait_flag,
)
from npusim.dsl import vector as vec
from npusim.ops.common import round_up
from npusim.ops.embedding.v2 import atomic_add_out


class SmallDimKernel(Kernel):
    """Per batch: copy in, sort the indices in UB, sum runs, flush each run atomically."""

    reads_data = True

    def init(self, grad, indices, out, counts, tiling, padding_idx: int):
        self.t, self.padding = tiling, padding_idx
        self.grad, self.indices, self.out, self.counts = grad, indices, out, counts
        self.start, self.count = tiling.core_rows(get_block_idx())
        self.stride = round_up(tiling.dim, 8)          # fp32 elements per row in UB
        rows = tiling.batch_rows
        self.grad_que = TQue(TPosition.VECIN, 1, name="gradQue")
        self.idx_que = TQue(TPosition.VECIN, 1, name="indicesQue")
        self.pipe.init_buffer(self.grad_que, 1, rows * self.stride * 4)
        self.pipe.init_buffer(self.idx_que, 1, round_up(rows * 4, 32))
        self.keys = TBuf(TPosition.VECCALC, name="sortBuf")
        self.pipe.init_buffer(self.keys, 3 * round_up(rows * 4, 32))
        self.acc = TBuf(TPosition.VECCALC, name="addRes")
        self.pipe.init_buffer(self.acc, self.stride * 4)
        self.cnt_que = TQue(TPosition.VECOUT, 1, producer=Pipe.S, name="tmpQue")
        self.pipe.init_buffer(self.cnt_que, 1, 32)

    def process(self):
        vec.duplicate(self.acc.get("float32"), 0.0, self.t.dim)
        for b in range(0, max(self.count, 0), self.t.batch_rows):
            n = min(self.t.batch_rows, self.count - b)
            self.copy_in(self.start + b, n)
            self.compute(n)

    def copy_in(self, first: int, n: int):
        g = self.grad_que.alloc_tensor("float32")
        data_copy_pad(g, self.grad[first * self.t.dim],
                      DataCopyExtParams(block_count=n, block_len=self.t.dim * 4))
        self.grad_que.enque(g)
        idx = self.idx_que.alloc_tensor("int32")
        data_copy_pad(idx, self.indices[first], DataCopyExtParams(block_count=1,
                                                                  block_len=n * 4))
        self.idx_que.enque(idx)

    def compute(self, n: int):
        g, idx = self.grad_que.deque(), self.idx_que.deque()
        room = round_up(self.t.batch_rows * 4, 32) // 4
        work = self.keys.get("float32")
        keys, values = work[0], work[room]
        positions = self.keys.get("uint32")[2 * room]
        vec.cast(keys, idx, "none", n)
        vec.sort_ascending(values, positions, keys, n)
        set_flag(HardEvent.V_S)
        wait_flag(HardEvent.V_S)
        self.walk(g, values, positions, n)
        self.grad_que.free_tensor(g)
        self.idx_que.free_tensor(idx)

    def walk(self, g, values, positions, n: int):
        acc, last, added = self.acc.get("float32"), -1, 0
        for k in range(n):
            index = int(get_value(values, k))
            if index == self.padding:
                continue
            if index != last and last != -1:
                self.flush(acc, last, added)
                added = 0
            row = int(get_value(positions, k))
            vec.add(acc, acc, g[row * self.stride], self.t.dim)
            last, added = index, added + 1
        if last != -1:
            self.flush(acc, last, added)

    def flush(self, acc, index: int, added: int):
        set_flag(HardEvent.V_MTE3)
        wait_flag(HardEvent.V_MTE3)
        atomic_add_out(self.out[index * self.t.dim], acc, self.t.dim * 4)
        if self.t.scale:
            tmp = self.cnt_que.alloc_tensor("float32")
            set_value(tmp, 0, float(added))
            self.cnt_que.enque(tmp)
            self.cnt_que.deque()
            atomic_add_out(self.counts[index], tmp, 4)
            self.cnt_que.free_tensor(tmp)
        set_flag(HardEvent.MTE3_V)
        wait_flag(HardEvent.MTE3_V)
        vec.duplicate(acc, 0.0, self.t.dim)



