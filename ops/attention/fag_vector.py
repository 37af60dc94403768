"""The vector cores' side of the FlashAttentionScoreGrad mix kernel (Atlas A2).

Each vector core takes its half of the task's query rows (as the forward, ``fa_vector.py``).
At a task's start: its rows of softmaxMax and softmaxSum in (CANN keeps them 8 lanes a row:
one 32-byte block a row, ready to broadcast with block stride 0), and D = rowsum(dO * O)
(CANN's FlashSoftmaxGrad: dO and attentionIn in, Cast to fp32, Mul, the row sum), Brcb'd.
Per key block g (CrossCoreWaitFlag ``FLAG_S`` on MTE2 first): S and dP in (fp32); S * scale,
-inf past the keys and where the causal mask hides a key (as the forward); P = exp(S - max) /
sum (the saved statistics: the softmax recomputed, not re-reduced); dS = P * (dP - D) (dP's
columns past the keys zeroed first); P and dS cast to q's dtype (CAST_RINT); from block 2 on,
CrossCoreWaitFlag ``FLAG_G`` of block g - 2 on MTE3 before the slots are written; out;
CrossCoreSetFlag of this core's ``FLAG_P`` id on MTE3. Not modelled: dropout, pse, CANN's
8 x 1024 vector tiles (half a 128 x 128 block here).
"""

from npusim.dsl import (
    DataCopyExtParams,
    DataCopyParams,
    Pipe,
    TBuf,
    TPosition,
    TQue,
    cross_core_set_flag,
    cross_core_wait_flag,
    data_copy,
    data_copy_pad,
)
from npusim.dsl import vector as vec
from npusim.dsl.broadcast import brcb
from npusim.isa.vector import RepeatParams
from npusim.ops.attention.fa_cube import FLAG_P, FLAG_S
from npusim.ops.attention.fag_cube import FLAG_G
from npusim.ops.common import ceil_div, round_up
from npusim.ops.common.rows import LANES, by_row, row_reduce, tail_mask


class FagVector:
    """The AIVs' methods of ``FlashAttentionGradKernel``."""

    def init_vector(self, sub: int):
        t = self.t
        half = t.s1_base // 2
        self.r_off, self.half, self.flag_p = sub * half, half, FLAG_P[sub]
        rows, w, d, item = half, t.s2_base, t.d, self.dtype.itemsize
        wide = rows * max(w, d) * 4
        for name, pos, nbytes in (("inQueueS", TPosition.VECIN, wide),
                                  ("inQueueDp", TPosition.VECIN, wide),
                                  ("inQueueMask", TPosition.VECIN, rows * w),
                                  ("inQueueDy", TPosition.VECIN, rows * d * item),
                                  ("inQueueO", TPosition.VECIN, rows * d * item),
                                  ("inQueueStats", TPosition.VECIN, 2 * rows * 32),
                                  ("outQueueP", TPosition.VECOUT, rows * w * item),
                                  ("outQueueDs", TPosition.VECOUT, rows * w * item)):
            setattr(self, name, TQue(pos, 1, name=name))
            self.pipe.init_buffer(getattr(self, name), 1, nbytes)
        self.mask_in = self.inQueueMask
        self.buf = {}
        for name, nbytes in (("tmp", max(rows * LANES * 4, rows * w * 2)), ("red8", rows * 32),
                             ("rowb", round_up(rows, 8) * 32), ("drow", round_up(rows, 8) * 4),
                             ("bits", round_up(rows * w // 8, 32)), ("zero", 32)):
            self.buf[name] = TBuf(TPosition.VECCALC, name=name)
            self.pipe.init_buffer(self.buf[name], nbytes)

    def f32(self, name):
        return self.buf[name].get("float32")

    def process_vector(self):
        t, g = self.t, 0
        vec.duplicate(self.buf["zero"].get("float16"), 0.0, 16)
        for task in t.core_tasks(self.core):
            b, n, r0, rows = t.task(task)
            mine = max(0, min(self.half, rows - self.r_off))
            stats = self.task_start(b, n, r0 + self.r_off, mine) if mine else None
            for c0, cols in t.key_blocks(r0, rows):
                if mine:
                    cross_core_wait_flag(FLAG_S, Pipe.MTE2)
                    self.block(stats, r0 + self.r_off, mine, c0, cols, g)
                    cross_core_set_flag(self.flag_p, Pipe.MTE3)
                else:       # no rows: the flags only, on the same pipes
                    cross_core_wait_flag(FLAG_S, Pipe.MTE2)
                    if g >= 2:
                        cross_core_wait_flag(FLAG_G, Pipe.MTE3)
                    cross_core_set_flag(self.flag_p, Pipe.MTE3)
                g += 1
            if mine:
                self.inQueueStats.free_tensor(stats)
        for _ in range(min(g, 2)):      # the last blocks' FLAG_G, not waited for yet
            cross_core_wait_flag(FLAG_G, Pipe.MTE3)

    def task_start(self, b, n, row0, rows):
        """softmaxMax and softmaxSum rows in (8 lanes a row); D = rowsum(dO * O), Brcb'd."""
        t = self.t
        stats = self.inQueueStats.alloc_tensor("float32")
        at = ((b * t.n + n) * t.s1 + row0) * 8
        data_copy(stats, self.max_gm[at], rows * 8)
        data_copy(stats[self.half * 8], self.sum_gm[at], rows * 8)
        self.inQueueStats.enque(stats)
        blk = t.d * self.dtype.itemsize // 32
        params = DataCopyParams(block_count=rows, block_len=blk,
                                src_stride=(t.row_stride() - t.d) * blk // t.d)
        pair = []
        for que, gm in ((self.inQueueDy, self.dy_gm), (self.inQueueO, self.o_gm)):
            x = que.alloc_tensor(self.dtype)
            data_copy(x, gm[t.offset(b, n, row0, t.s1)], params)
            que.enque(x)
            pair.append(que.deque())
        a, c = self.inQueueS.alloc_tensor("float32"), self.inQueueDp.alloc_tensor("float32")
        vec.cast(a, pair[0], "none", rows * t.d)
        vec.cast(c, pair[1], "none", rows * t.d)
        self.inQueueDy.free_tensor(pair[0])
        self.inQueueO.free_tensor(pair[1])
        vec.mul(a, a, c, rows * t.d)
        row_reduce(vec.add, vec.block_reduce_sum, self.f32("drow"), a, self.f32("tmp"),
                   self.f32("red8"), rows, t.d)
        brcb(self.f32("rowb"), self.f32("drow"), ceil_div(rows, 8))
        self.inQueueS.free_tensor(a)      # V's own work tiles: back to MTE2 unused by it
        self.inQueueDp.free_tensor(c)
        return self.inQueueStats.deque()

    def block(self, stats, row0, rows, c0, cols, g):
        t, w = self.t, round_up(cols, LANES)
        at = self.slot_at("s", g % 2) + self.r_off * t.s2_base
        pad = DataCopyExtParams(block_count=rows, block_len=cols * 4,
                                src_stride=(t.s2_base - cols) * 4,
                                dst_stride=(w - round_up(cols, 8)) // 8)
        s, dp = self.inQueueS.alloc_tensor("float32"), self.inQueueDp.alloc_tensor("float32")
        data_copy_pad(s, self.s_ws[at], pad)
        data_copy_pad(dp, self.dp_ws[at], pad)
        self.inQueueS.enque(s)
        self.inQueueDp.enque(dp)
        s, dp = self.inQueueS.deque(), self.inQueueDp.deque()
        vec.muls(s, s, self.scale, (rows - 1) * w + round_up(cols, 8))
        if cols < w:
            for x, value in ((s, float("-inf")), (dp, 0.0)):
                vec.duplicate(x[w - LANES], value, repeat=RepeatParams(
                    mask=tail_mask(cols - (w - LANES)), repeat_times=rows, dst_rep_stride=w // 8))
        if t.masked(row0, c0, cols):
            self.apply_mask(s, row0, c0, rows, w)
        by_row(vec.sub, s, s, stats, rows, w)
        vec.exp(s, s, rows * w)
        by_row(vec.div, s, s, stats[self.half * 8], rows, w)
        by_row(vec.sub, dp, dp, self.f32("rowb"), rows, w)
        vec.mul(dp, dp, s, rows * w)
        self.write_out(s, dp, rows, w, g)

    def write_out(self, s, dp, rows, w, g):
        """P and dS cast to q's dtype, out to their slots (after FLAG_G of block g - 2)."""
        t, item = self.t, self.dtype.itemsize
        outs = []
        for que, x in ((self.outQueueP, s), (self.outQueueDs, dp)):
            y = que.alloc_tensor(self.dtype)
            vec.cast(y, x, "rint", rows * w)
            que.enque(y)
        self.inQueueS.free_tensor(s)
        self.inQueueDp.free_tensor(dp)
        if g >= 2:
            cross_core_wait_flag(FLAG_G, Pipe.MTE3)
        at = self.slot_at("p", g % 2) + self.r_off * t.s2_base
        params = DataCopyParams(block_count=rows, block_len=w * item // 32,
                                dst_stride=(t.s2_base - w) * item // 32)
        for que, gm in ((self.outQueueP, self.p_ws), (self.outQueueDs, self.ds_ws)):
            y = que.deque()
            data_copy(gm[at], y, params)
            outs.append((que, y))
        for que, y in outs:
            que.free_tensor(y)
