"""MoeTokenUnpermuteGrad with probs (CANN's ``MoeTokenUnpermuteGradProbNotNone``).

Each core takes its tokens' sortedIndices ``indices_reserve_num`` at a time (whole tokens): the
scalar reads them from GM one by one (GetValue on GM), their probs come into UB and are cast to
fp32 (16-bit; fp32 is copied) and read by the scalar (V -> S and S -> V flags around the reads,
the compiler's auto-sync). Per hidden chunk and per token: its row of
unpermutedTokensGrad in, as fp32 (Cast or Copy); its topK permuted rows gathered
``input_reserve_num`` at a time (a dropped copy's row is Duplicate(0)); per copy, the gradient
row times the prob (Muls; zero for a dropped copy) is cast back (round to nearest even) and
written to permutedTokensGrad[index] unless dropped; the permuted row as fp32 times the gradient
row (Mul) is summed (``reduce_sum_func``) into the copy's partial probs gradient. The partials of
the chunks are added in fp32 and, per loop, cast (round to nearest even) and written to
probsGrad. Every buffer is a ping-pong pair synchronised by event ids as in the source.

Written differently: the vector Copy of fp32 data (the DSL has none) is Muls by 1.0, and it
covers the chunk's elements rather than the 32-byte-aligned row (the aligned tail is never
read). Not modelled: the scalar's address arithmetic and the data cache of its GM reads.
"""

from npusim.dsl import (
    DataCopyExtParams,
    HardEvent,
    Kernel,
    TBuf,
    TPosition,
    data_copy_pad,
    get_value,
    set_flag,
    wait_flag,
)
from npusim.dsl import vector as vec
from npusim.dsl.scalar_gm import gm_get_value
from npusim.ops.moe.unpermute_grad_kernel import core_rows, reduce_sum_func
from npusim.ops.moe.unpermute_grad_tiling import BUFFER_NUM, RESERVE_BYTES

V_MTE2_EVENTS = range(8)      # 0/1 indices (unused here), 2/3 probs, 4/5 grad rows, 6/7 rows
MTE3_V_EVENTS = range(2)


class UnpermuteGradProbsKernel(Kernel):
    """permutedTokensGrad and probsGrad of out[t] = sum_k probs[t,k] * permuted[idx[t,k]]."""

    reads_data = True

    def init(self, permuted, grad, indices, probs, out, probs_out, tiling):
        t = self.tiling = tiling
        self.first, self.count = core_rows(t)
        self.permuted, self.grad, self.indices = permuted, grad, indices
        self.probs, self.out, self.probs_out = probs, out, probs_out
        self.dtype, self.pdtype = grad.dtype, probs.dtype
        self.item, self.pitem = grad.dtype.itemsize, probs.dtype.itemsize
        row, ind = t.hidden_size_align, t.indices_reserve_num_align
        sizes = {"inQueueUnpermuted": BUFFER_NUM * row * self.item,
                 "inQueuePermutedTokens": BUFFER_NUM * t.input_reserve_num * row * self.item,
                 "inQueueProb": BUFFER_NUM * ind * self.pitem,
                 "outQueueProbGrad": BUFFER_NUM * ind * self.pitem,
                 "outQueuePermutedTokensGrad": BUFFER_NUM * row * self.item,
                 "tmpBufferPermutedTokensCast": row * 4, "tmpBufferReserve": RESERVE_BYTES,
                 "tmpBufferUnpermutedCast": row * 4, "tmpBufferProbGradReduceSum": ind * 4,
                 "tmpBufferProbCast": ind * 4, "tmpBufferProbGradCast": ind * 4,
                 "tmpBufferPermutedTokensGrad": row * 4}
        self.bufs = {}
        for name, nbytes in sizes.items():
            self.bufs[name] = TBuf(TPosition.VECCALC, name=name)
            self.pipe.init_buffer(self.bufs[name], nbytes)
        self.flip = {"probs": 0, "grad": 0, "rows": 0, "out": 0, "pgrad": 0}

    def f32(self, name):
        return self.bufs[name].get("float32")

    def half(self, name, key, elements, dtype):
        """This ping-pong half of buffer ``name`` (``key`` says which half is next)."""
        return self.bufs[name].get(dtype)[elements * self.flip[key]]

    def process(self):
        for e in V_MTE2_EVENTS:
            set_flag(HardEvent.V_MTE2, e)
        for e in MTE3_V_EVENTS:
            set_flag(HardEvent.MTE3_V, e)
        per = self.tiling.indices_reserve_num
        for start in range(0, self.count, per):
            self.loop(self.first + start, min(per, self.count - start))
        for e in V_MTE2_EVENTS:
            wait_flag(HardEvent.V_MTE2, e)
        for e in MTE3_V_EVENTS:
            wait_flag(HardEvent.MTE3_V, e)

    def loop(self, first: int, n: int):
        """One batch of whole tokens: indices, probs, every chunk, then their probs grads."""
        t = self.tiling
        index = [gm_get_value(self.indices, first + i) for i in range(n)]
        prob = self.load_probs(first, n)
        pgrad = self.f32("tmpBufferProbGradReduceSum")
        vec.duplicate(pgrad, 0.0, t.indices_reserve_num_align)
        for h in range(t.hidden_size_loop_times):
            last = h == t.hidden_size_loop_times - 1
            length = t.hidden_size_tail if last else t.hidden_size_align
            for j in range(n // t.top_k):
                self.token(first // t.top_k + j, j * t.top_k, index, prob,
                           h * t.hidden_size_align, length)
            vec.add(pgrad, pgrad, self.f32("tmpBufferProbGradCast"), n)
        self.store_probs_grad(pgrad, first, n)

    def load_probs(self, first: int, n: int) -> list:
        ev = 2 if self.flip["probs"] else 3
        wait_flag(HardEvent.V_MTE2, ev)
        raw = self.half("inQueueProb", "probs", self.tiling.indices_reserve_num_align,
                        self.pdtype)
        data_copy_pad(raw, self.probs[first], DataCopyExtParams(block_len=n * self.pitem))
        set_flag(HardEvent.MTE2_V, ev)
        wait_flag(HardEvent.MTE2_V, ev)
        probs = self.f32("tmpBufferProbCast")
        self.to_f32(probs, raw, n)
        set_flag(HardEvent.V_MTE2, ev)
        self.flip["probs"] ^= 1
        set_flag(HardEvent.V_S)
        wait_flag(HardEvent.V_S)
        values = [get_value(probs, i) for i in range(n)]
        set_flag(HardEvent.S_V)      # the next loop's cast writes what the scalar just read
        wait_flag(HardEvent.S_V)
        return values

    def to_f32(self, dst, src, n: int):
        if src.dtype.itemsize == 4:
            vec.muls(dst, src, 1.0, n)
        else:
            vec.cast(dst, src, "none", n)

    def token(self, token: int, at: int, index, prob, offset: int, length: int):
        """One token's chunk: its gradient row in, then its topK copies in groups."""
        t = self.tiling
        ev = 4 if self.flip["grad"] else 5
        wait_flag(HardEvent.V_MTE2, ev)
        raw = self.half("inQueueUnpermuted", "grad", t.hidden_size_align, self.dtype)
        data_copy_pad(raw, self.grad[token * t.hidden_size + offset],
                      DataCopyExtParams(block_len=length * self.item))
        set_flag(HardEvent.MTE2_V, ev)
        wait_flag(HardEvent.MTE2_V, ev)
        self.to_f32(self.f32("tmpBufferUnpermutedCast"), raw, length)
        set_flag(HardEvent.V_MTE2, ev)
        self.flip["grad"] ^= 1
        for g in range(0, t.top_k, t.input_reserve_num):
            self.group(at + g, index, prob, offset, length)

    def group(self, at: int, index, prob, offset: int, length: int):
        """``input_reserve_num`` permuted rows gathered, then each copy's two gradients."""
        t, rows = self.tiling, self.tiling.input_reserve_num
        ev = 6 if self.flip["rows"] else 7
        wait_flag(HardEvent.V_MTE2, ev)
        gathered = self.half("inQueuePermutedTokens", "rows", rows * t.hidden_size_align,
                             self.dtype)
        for r in range(rows):
            row = gathered[r * t.hidden_size_align]
            if index[at + r] < t.num_out_tokens:
                data_copy_pad(row, self.permuted[index[at + r] * t.hidden_size + offset],
                              DataCopyExtParams(block_len=length * self.item))
            else:
                vec.duplicate(row, 0.0, t.hidden_size_align)
        set_flag(HardEvent.MTE2_V, ev)
        wait_flag(HardEvent.MTE2_V, ev)
        for r in range(rows):
            self.copy_grads(at + r, index[at + r], prob[at + r],
                            gathered[r * t.hidden_size_align], offset, length)
        set_flag(HardEvent.V_MTE2, ev)
        self.flip["rows"] ^= 1

    def copy_grads(self, i: int, dest: int, prob, row, offset: int, length: int):
        t, kept = self.tiling, dest < self.tiling.num_out_tokens
        unperm, grad = self.f32("tmpBufferUnpermutedCast"), self.f32("tmpBufferPermutedTokensGrad")
        if kept:
            vec.muls(grad, unperm, prob, length)
        else:
            vec.duplicate(grad, 0.0, t.hidden_size_align)
        ev = 0 if self.flip["out"] else 1
        wait_flag(HardEvent.MTE3_V, ev)
        out = self.half("outQueuePermutedTokensGrad", "out", t.hidden_size_align, self.dtype)
        if self.item == 4:
            vec.muls(out, grad, 1.0, length)
        else:
            vec.cast(out, grad, "rint", length)
        set_flag(HardEvent.V_MTE3, ev)
        wait_flag(HardEvent.V_MTE3, ev)
        if kept:
            data_copy_pad(self.out[dest * t.hidden_size + offset], out,
                          DataCopyExtParams(block_len=length * self.item))
        set_flag(HardEvent.MTE3_V, ev)
        self.flip["out"] ^= 1
        work = self.f32("tmpBufferPermutedTokensCast")
        self.to_f32(work, row, length)
        vec.mul(work, work, unperm, length)
        reduce_sum_func(self.f32("tmpBufferProbGradCast")[i], work,
                        length)

    def store_probs_grad(self, pgrad, first: int, n: int):
        ev = 0 if self.flip["pgrad"] else 1
        wait_flag(HardEvent.MTE3_V, ev)
        out = self.half("outQueueProbGrad", "pgrad", self.tiling.indices_reserve_num_align,
                        self.pdtype)
        if self.pitem == 4:
            vec.muls(out, pgrad, 1.0, n)
        else:
            vec.cast(out, pgrad, "rint", n)
        set_flag(HardEvent.V_MTE3, ev)
        wait_flag(HardEvent.V_MTE3, ev)
        data_copy_pad(self.probs_out[first], out, DataCopyExtParams(block_len=n * self.pitem))
        set_flag(HardEvent.MTE3_V, ev)
        self.flip["pgrad"] ^= 1
