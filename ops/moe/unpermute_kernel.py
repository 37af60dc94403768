"""The MoeTokenUnpermute kernel with probs (CANN's KernelMoeTokenUnpermute<T, int32, P, true>).

The MoeTokenPermuteGrad kernel (``permute_grad_kernel.py``) is this kernel without probs; here
each batch of tokens also copies its probs into UB (a VECIN queue; a 16-bit probs is cast to an
fp32 copy, CAST_NONE) and the scalar reads each copy's prob with GetValue beside its index. A copy
is gathered only when its index is below numOutTokens and its prob is not 0. Each gathered chunk,
in fp32 (cast from 16-bit, or the fp32 row itself), is multiplied by its prob (Muls) before the
first copy starts the sum or a later one is added; the sum is cast back with round to nearest
even. The compiler's auto-sync between the probs' cast (V) and the scalar's reads is written as
V -> S and S -> V flags.

Not modelled: as the PermuteGrad kernel (the scalar's address arithmetic and branches).
"""

from npusim.dsl import (
    DataCopyExtParams,
    HardEvent,
    Pipe,
    TBuf,
    TPosition,
    TQue,
    data_copy_pad,
    get_block_idx,
    get_value,
    pipe_barrier,
    set_flag,
    wait_flag,
)
from npusim.dsl import vector as vec
from npusim.ops.moe.permute_grad_kernel import MoeTokenPermuteGradKernel
from npusim.ops.moe.permute_grad_tiling import INDEX_BYTES


class MoeTokenUnpermuteKernel(MoeTokenPermuteGradKernel):
    """out[t] = sum over k of probs[t, k] * permutedTokens[sortedIndices[t * topK + k]]."""

    def init(self, grad, indices, out, tiling, probs):
        super().init(grad, indices, out, tiling)
        t, idx = tiling, get_block_idx()
        first = idx * t.tokens_core_length + min(idx, t.tokens_core_remain)
        self.probs_gm = probs[first * t.top_k]
        self.probs_dtype = probs.dtype
        self.probs_wide = probs.dtype.itemsize == 2
        batch = t.tokens_splited_length * t.top_k
        self.probs_que = TQue(TPosition.VECIN, 1, consumer=None if self.probs_wide else Pipe.S,
                              name="probs_inque")
        self.pipe.init_buffer(self.probs_que, 1, batch * probs.dtype.itemsize)
        if self.probs_wide:
            self.probs_buf = TBuf(TPosition.VECCALC, name="temp_buffer2")
            self.pipe.init_buffer(self.probs_buf, batch * 4)

    def compute_batch(self, first: int, count: int):
        """CalMultiOutToken: indices and probs into UB, then each token."""
        k = self.tiling.top_k
        indices = self.in_indices.alloc_tensor("int32")
        data_copy_pad(indices, self.indices_gm[first * k],
                      DataCopyExtParams(block_len=count * k * INDEX_BYTES))
        self.in_indices.enque(indices)
        raw = self.probs_que.alloc_tensor(self.probs_dtype)
        data_copy_pad(raw, self.probs_gm[first * k],
                      DataCopyExtParams(block_len=count * k * self.probs_dtype.itemsize))
        self.probs_que.enque(raw)
        raw = self.probs_que.deque()
        if self.probs_wide:
            self.probs = self.probs_buf.get("float32")
            vec.cast(self.probs, raw, "none", count * k)
            self.probs_que.free_tensor(raw)
            pipe_barrier(Pipe.V)
            set_flag(HardEvent.V_S)
            wait_flag(HardEvent.V_S)
        else:
            self.probs = raw
        indices = self.in_indices.deque()
        for j in range(count):
            self.compute_token(indices, j * k, first + j)
        self.in_indices.free_tensor(indices)
        if not self.probs_wide:
            self.probs_que.free_tensor(raw)
        else:
            set_flag(HardEvent.S_V)      # the next batch's cast writes what the scalar read
            wait_flag(HardEvent.S_V)

    def compute_chunk(self, indices, start: int, token: int, h: int, n: int):
        """CalPartOutToken with probs: a copy counts when in range and its prob is not 0."""
        t = self.tiling
        acc = self.sum_f32 if self.wide else self.out_que.alloc_tensor(self.dtype)
        row, prob = get_value(indices, start), get_value(self.probs, start)
        if row < t.num_out_tokens and prob != 0:
            self.copy_in(row, h, n)
            pipe_barrier(Pipe.V)
            self.first_copy(acc, n)
            pipe_barrier(Pipe.V)
            vec.muls(acc, acc, prob, n)
        else:
            pipe_barrier(Pipe.V)
            vec.duplicate(acc, 0.0, n)
        for k in range(1, t.top_k):
            row, prob = get_value(indices, start + k), get_value(self.probs, start + k)
            if row < t.num_out_tokens and prob != 0:
                self.copy_in(row, h, n)
                pipe_barrier(Pipe.V)
                self.add_scaled(acc, prob, n)
        self.copy_out(acc, token, h, n)

    def add_scaled(self, acc, prob, n: int):
        """CalToken with probs: the copy times its prob, added to the fp32 sum."""
        local = self.in_rows.deque()
        if self.wide:
            vec.cast(self.row_f32, local, "none", n)
            self.in_rows.free_tensor(local)
            pipe_barrier(Pipe.V)
            vec.muls(self.row_f32, self.row_f32, prob, n)
            pipe_barrier(Pipe.V)
            vec.add(acc, acc, self.row_f32, n)
        else:
            vec.muls(local, local, prob, n)
            pipe_barrier(Pipe.V)
            vec.add(acc, acc, local, n)
            self.in_rows.free_tensor(local)
