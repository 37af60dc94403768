"""MoeTokenUnpermuteGrad without probs (CANN's ``MoeTokenUnpermuteGradProbNone``) and the
reduction both variants' probs gradient uses (``MoeTokenUnpermuteGradBase::ReduceSumFunc``).

Without probs topK is 1 and the kernel is a scatter: each core takes its block of rows of
unpermutedTokensGrad ``indices_reserve_num`` at a time: their sortedIndices into UB (a 2-deep
queue read by the scalar), then per hidden chunk the rows in one DataCopyPad (one block per row,
the GM gap skipping the rest of the row) into a 2-deep queue bound VECIN -> VECOUT, and each row
written by MTE3 to permutedTokensGrad[sortedIndices[i]] when that is below numOutTokens. Rows
of permutedTokensGrad no index names are not written (npusim's GM holds zeros there).

``reduce_sum_func``: a row of fp32 products summed as the CANN base class does: pairwise Adds
of the upper half onto the lower until at most 8192 / 1024 / 128 elements are left, one Add
down to 4096 / 512 / 64, then BlockReduceSum passes to 8 and a WholeReduceSum to 1 (fewer than
64 elements: one WholeReduceSum).

Not modelled: the scalar's address arithmetic (only GetValue and issue are charged).
"""

from npusim.dsl import (
    DataCopyExtParams,
    Kernel,
    Pipe,
    TPosition,
    TQue,
    data_copy_pad,
    get_block_idx,
    get_value,
)
from npusim.dsl import vector as vec
from npusim.ops.common import ceil_div, round_up
from npusim.ops.moe.unpermute_grad_tiling import BUFFER_NUM, INDEX_BYTES

FP32_BLOCK = 8      # fp32 elements of a 32-byte block (BUFFER_32B_CALNUM)


def core_rows(t) -> tuple[int, int]:
    """(first sortedIndices element, how many) of this core."""
    idx = get_block_idx()
    each, tail = t.token_num_each_core * t.top_k, t.token_num_tail_core * t.top_k
    if idx < t.former_core_num:
        return idx * each, each
    return t.former_core_num * each + (idx - t.former_core_num) * tail, tail


def binary_add(tmp, length: int, threshold: int, offset: int) -> None:
    """BinaryAddFunc: halve by Adds of the upper part onto the lower, then one Add at offset."""
    total, half = length, round_up(ceil_div(length, 2), FP32_BLOCK)
    while total > threshold:
        vec.add(tmp, tmp, tmp[half], total - half)
        total, half = half, round_up(ceil_div(half, 2), FP32_BLOCK)
    if total > offset:
        vec.add(tmp, tmp, tmp[offset], total - offset)


def reduce_sum_func(dst, tmp, length: int) -> None:
    """ReduceSumFunc: dst[0] = the sum of tmp[:length] (tmp is overwritten)."""
    for size in (4096, 512, 64):
        if length >= size:
            binary_add(tmp, length, 2 * size, size)
            while size > FP32_BLOCK:
                vec.block_reduce_sum(tmp, tmp, size)
                size //= FP32_BLOCK
            vec.whole_reduce_sum(dst, tmp, size)
            return
    vec.whole_reduce_sum(dst, tmp, length)


class UnpermuteGradProbNoneKernel(Kernel):
    """permutedTokensGrad[sortedIndices[i]] = unpermutedTokensGrad[i] (below numOutTokens)."""

    reads_data = True

    def init(self, grad, indices, out, tiling):
        t = self.tiling = tiling
        self.first, self.count = core_rows(t)
        self.grad, self.indices, self.out = grad, indices, out
        self.dtype, self.item = grad.dtype, grad.dtype.itemsize
        self.index_que = TQue(TPosition.VECIN, BUFFER_NUM, consumer=Pipe.S,
                              name="inQueueRowIdMap")
        self.rows = TQue(TPosition.VECIN, BUFFER_NUM, consumer=Pipe.MTE3, name="inOutque")
        self.pipe.init_buffer(self.index_que, BUFFER_NUM, t.indices_reserve_num * INDEX_BYTES)
        self.pipe.init_buffer(self.rows, BUFFER_NUM,
                              t.input_reserve_num * t.hidden_size_align * self.item)

    def process(self):
        per = self.tiling.indices_reserve_num
        for start in range(0, self.count, per):
            self.loop(self.first + start, min(per, self.count - start))

    def loop(self, first: int, n: int):
        t = self.tiling
        indices = self.index_que.alloc_tensor("int32")
        data_copy_pad(indices, self.indices[first], DataCopyExtParams(block_len=n * INDEX_BYTES))
        self.index_que.enque(indices)
        indices = self.index_que.deque()
        for h in range(t.hidden_size_loop_times):
            last = h == t.hidden_size_loop_times - 1
            self.scatter(indices, first, n, h * t.hidden_size_align,
                         t.hidden_size_tail if last else t.hidden_size_align)
        self.index_que.free_tensor(indices)

    def scatter(self, indices, first: int, n: int, offset: int, length: int):
        """The chunk [offset, offset + length) of n rows in, each out to its row."""
        t, nbytes = self.tiling, length * self.item
        rows = self.rows.alloc_tensor(self.dtype)
        data_copy_pad(rows, self.grad[first * t.hidden_size + offset],
                      DataCopyExtParams(block_count=n, block_len=nbytes,
                                        src_stride=(t.hidden_size - length) * self.item))
        self.rows.enque(rows)
        rows = self.rows.deque()
        stride = round_up(length, 32 // self.item)
        for j in range(n):
            dest = get_value(indices, j)
            if dest < t.num_out_tokens:
                data_copy_pad(self.out[dest * t.hidden_size + offset], rows[j * stride],
                              DataCopyExtParams(block_len=nbytes))
        self.rows.free_tensor(rows)
