"""The MoeTokenPermuteGrad kernel (CANN's KernelMoeTokenUnpermute<T, int32, T, PROBS=false>).

One AIV core owns a contiguous block of output tokens (kernels.md §5(b)), so no two cores write
the same bytes: no atomics, deterministic. Per batch of tokens the core copies their
sortedIndices into UB (DataCopyPad on MTE2) and the scalar reads them one by one (GetValue).
Per output token and per H chunk, for each of its topK copies: a copy whose index is below
``num_out_tokens`` has its chunk gathered from GM by MTE2 into the input-row queue (``buffer_num``
deep, so gathers run ahead of the vector unit); the vector unit casts it to fp32 (16-bit dtypes)
and the first surviving copy initialises the fp32 sum, the next ones Add to it; a token whose
first copy was dropped starts from Duplicate(0). The sum is cast back with round to nearest even
(CAST_RINT) and copied out by MTE3. For fp32 the sum lives in the output queue's buffer and the
first copy is a UB->UB DataCopy.

As in the CANN kernel, only the first copy decides between "copy" and "zero": the later ones are
added to whatever the sum holds. ``PipeBarrier<PIPE_V>`` calls are kept where the source has
them. The index batch is a VECIN queue whose consumer is the scalar: the compiler's auto-sync of
the source (``#pragma bisheng auto_sync``) is written here as that queue's MTE2 -> S hand-off.

Not modelled: the scalar's cost of address arithmetic and branches (only its GetValue reads and
instruction issue are charged), the scalar data cache.
"""

from npusim.dsl import (
    DataCopyExtParams,
    Kernel,
    Pipe,
    TBuf,
    TPosition,
    TQue,
    data_copy,
    data_copy_pad,
    get_block_idx,
    get_value,
    pipe_barrier,
)
from npusim.dsl import vector as vec
from npusim.ops.common import round_up
from npusim.ops.common.blocks import copy_exact
from npusim.ops.moe.permute_grad_tiling import INDEX_BYTES, TAIL_BYTES

BLOCK_BYTES = 32        # DataCopy moves whole 32-byte blocks (BLOCK_SIZE of the source)


class MoeTokenPermuteGradKernel(Kernel):
    """out[t] = sum over k of grad[sorted_indices[t * topK + k]] for this core's tokens."""

    reads_data = True    # the scalar reads every index: control flow follows the data

    def init(self, grad, indices, out, tiling):
        t, idx = tiling, get_block_idx()
        big = idx < t.tokens_core_remain        # this core takes one token more
        self.tokens = t.tokens_core_length + int(big)
        self.batch_remain = t.tokens_splited_remain + int(big)
        first = idx * t.tokens_core_length + min(idx, t.tokens_core_remain)
        self.grad_gm, self.indices_gm = grad, indices[first * t.top_k]
        self.out_gm = out[first * t.hidden_size]
        self.tiling, self.dtype = t, grad.dtype
        self.wide = grad.dtype.itemsize == 2     # bf16/fp16 sum in fp32 work rows
        row_bytes = t.chunk_buffer_elements * grad.dtype.itemsize
        self.in_rows = TQue(TPosition.VECIN, t.buffer_num, name="tokensInQue")
        self.in_indices = TQue(TPosition.VECIN, 1, consumer=Pipe.S, name="indicesInQue")
        self.out_que = TQue(TPosition.VECOUT, 1, name="outQue")
        self.pipe.init_buffer(self.in_rows, t.buffer_num, row_bytes)
        self.pipe.init_buffer(self.in_indices, 1,
                              t.tokens_splited_length * t.top_k * INDEX_BYTES)
        self.pipe.init_buffer(self.out_que, 1, row_bytes)
        if self.wide:
            work = t.chunk_buffer_elements * 4
            self.sum_buf = TBuf(TPosition.VECCALC, name="tempBuffer0")
            self.row_buf = TBuf(TPosition.VECCALC, name="tempBuffer1")
            self.pipe.init_buffer(self.sum_buf, work + TAIL_BYTES)
            self.pipe.init_buffer(self.row_buf, work)
            self.sum_f32, self.row_f32 = self.sum_buf.get("float32"), self.row_buf.get("float32")

    def process(self):
        t = self.tiling
        for i in range(t.tokens_splited_num):
            self.compute_batch(i * t.tokens_splited_length, t.tokens_splited_length)
        if self.batch_remain:
            self.compute_batch(t.tokens_splited_num * t.tokens_splited_length,
                               self.batch_remain)

    def compute_batch(self, first: int, count: int):
        """CalMultiOutToken: this batch's indices into UB, then each of its tokens."""
        k = self.tiling.top_k
        indices = self.in_indices.alloc_tensor("int32")
        data_copy_pad(indices, self.indices_gm[first * k],
                      DataCopyExtParams(block_len=count * k * INDEX_BYTES))
        self.in_indices.enque(indices)
        indices = self.in_indices.deque()
        for j in range(count):
            self.compute_token(indices, j * k, first + j)
        self.in_indices.free_tensor(indices)

    def compute_token(self, indices, start: int, token: int):
        """CalSingleOutToken: the row's whole chunks, then its shorter tail."""
        t = self.tiling
        for h in range(t.hidden_splited_num):
            self.compute_chunk(indices, start, token, h, t.hidden_splited_length)
        if t.hidden_splited_remain:
            self.compute_chunk(indices, start, token, t.hidden_splited_num,
                               t.hidden_splited_remain)

    def compute_chunk(self, indices, start: int, token: int, h: int, n: int):
        """CalPartOutToken: the topK copies of one chunk, summed in fp32, then out."""
        t = self.tiling
        acc = self.sum_f32 if self.wide else self.out_que.alloc_tensor(self.dtype)
        row = get_value(indices, start)
        if row < t.num_out_tokens:
            self.copy_in(row, h, n)
            pipe_barrier(Pipe.V)
            self.first_copy(acc, n)
        else:
            pipe_barrier(Pipe.V)
            vec.duplicate(acc, 0.0, n)
        for k in range(1, t.top_k):
            row = get_value(indices, start + k)
            if row < t.num_out_tokens:
                self.copy_in(row, h, n)
                pipe_barrier(Pipe.V)
                self.add_copy(acc, n)
        self.copy_out(acc, token, h, n)

    def copy_in(self, row: int, h: int, n: int):
        """CopyTokenIn: gather chunk ``h`` of row ``row`` (MTE2)."""
        t = self.tiling
        local = self.in_rows.alloc_tensor(self.dtype)
        copy_exact(local, self.grad_gm[row * t.hidden_size + h * t.hidden_splited_length], n)
        self.in_rows.enque(local)

    def first_copy(self, acc, n: int):
        """CalFirstToken: the sum starts as the first surviving copy."""
        local = self.in_rows.deque()
        if self.wide:
            vec.cast(acc, local, "none", n)
        else:
            data_copy(acc, local, round_up(n * 4, BLOCK_BYTES) // 4)
        self.in_rows.free_tensor(local)

    def add_copy(self, acc, n: int):
        """CalToken: add a further copy to the fp32 sum."""
        local = self.in_rows.deque()
        if self.wide:
            vec.cast(self.row_f32, local, "none", n)
            self.in_rows.free_tensor(local)
            pipe_barrier(Pipe.V)
            vec.add(acc, acc, self.row_f32, n)
        else:
            vec.add(acc, acc, local, n)
            self.in_rows.free_tensor(local)

    def copy_out(self, acc, token: int, h: int, n: int):
        """CopyOut: cast the sum to the output dtype (round to nearest even) and write it."""
        t = self.tiling
        if self.wide:
            res = self.out_que.alloc_tensor(self.dtype)
            pipe_barrier(Pipe.V)
            vec.cast(res, acc, "rint", n)
        else:
            res = acc
        self.out_que.enque(res)
        res = self.out_que.deque()
        copy_exact(self.out_gm[token * t.hidden_size + h * t.hidden_splited_length], res, n)
        self.out_que.free_tensor(res)

