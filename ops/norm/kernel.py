"""The RmsNorm kernel on the AIV cores (ops-nn norm/rms_norm/op_kernel/rms_norm.h, mode Normal).

Per core: gamma in once (DataCopyPad). Per batch of ``row_factor`` rows, per row: x in (MTE2),
Cast to fp32 (16-bit x), x^2 (Mul), ReduceSum, rstd = 1 / sqrt(sum x (1/cols) + eps), x x rstd,
x gamma (16-bit gamma: Cast to fp32 first; fp32 gamma with 16-bit x: multiplied directly), Cast
back (fp16: CAST_NONE, bf16: CAST_RINT), y out (MTE3). The batch's rstd values go out in one copy.

Differences from CANN, and why: CANN computes rstd on the scalar unit (V->S and S->V flags,
SetValue into the rstd buffer, Muls by the scalar); npusim binds scalar operands when the kernel
is recorded, so rstd is computed by one-element vector instructions (Muls, Adds, Sqrt, Div: each
rounds to fp32, as the scalar's float arithmetic does), broadcast by Brcb for a Mul with block
stride 0, and moved into the batch's rstd buffer by a one-element ReduceSum. ReduceSum's order is
npusim's halving tree (``isa/vector_reduce.py``); CANN's ReduceSumHalfInterval is also a halving
of the row, whose exact split is in a header (reduce_common.h) not read here.
"""

import numpy as np

from npusim.dsl import Kernel, TBuf, TPosition, TQue, get_block_idx
from npusim.dsl import vector as vec
from npusim.dsl.broadcast import brcb
from npusim.ops.common.blocks import copy_exact
from npusim.ops.common.broadcast import mul_by_block
from npusim.ops.norm.tiling import RmsNormTiling


class RmsNormKernel(Kernel):
    """One vector core's rows: y and rstd."""

    def init(self, x, gamma, y, rstd, epsilon: float, tiling: RmsNormTiling):
        t, idx = tiling, get_block_idx()
        self.rows = t.block_factor if idx < t.block_dim - 1 else t.last_rows
        self.row0 = idx * t.block_factor
        self.x_gm, self.g_gm, self.y_gm, self.r_gm = x, gamma, y, rstd
        self.t, self.eps = t, float(epsilon)
        self.dtype, self.g_dtype = x.dtype, gamma.dtype
        self.wide = self.dtype.itemsize == 2
        n, bn = t.ub_factor, t.buffer_num
        self.in_x = TQue(TPosition.VECIN, bn, name="inQueueX")
        self.in_g = TQue(TPosition.VECIN, 1, name="inQueueGamma")
        self.out_y = TQue(TPosition.VECOUT, bn, name="outQueueY")
        self.out_r = TQue(TPosition.VECOUT, bn, name="outQueueRstd")
        self.pipe.init_buffer(self.in_x, bn, n * self.dtype.itemsize)
        self.pipe.init_buffer(self.in_g, 1, n * self.g_dtype.itemsize)
        self.pipe.init_buffer(self.out_y, bn, n * self.dtype.itemsize)
        self.pipe.init_buffer(self.out_r, bn, t.row_factor * 4)
        self.buf = {}
        specs = [("sqxBuf", n * 4), ("rstdScalarBuf", 32), ("oneBuf", 32), ("brcbBuf", 256)]
        if self.wide:
            specs.append(("xFp32Buf", n * 4))
        for name, nbytes in specs:
            self.buf[name] = TBuf(TPosition.VECCALC, name=name)
            self.pipe.init_buffer(self.buf[name], nbytes)

    def f32(self, name: str):
        return self.buf[name].get("float32")

    def process(self):
        t = self.t
        g = self.in_g.alloc_tensor(self.g_dtype)
        copy_exact(g, self.g_gm[0], t.cols)
        self.in_g.enque(g)
        g = self.in_g.deque()
        vec.duplicate(self.f32("oneBuf"), 1.0, 8)
        for start in range(0, self.rows, t.row_factor):
            self.batch(start, min(t.row_factor, self.rows - start), g)
        self.in_g.free_tensor(g)

    def batch(self, start: int, count: int, gamma):
        rstd = self.out_r.alloc_tensor("float32")
        for i in range(count):
            offset = (self.row0 + start + i) * self.t.cols
            self.copy_in(offset)
            self.compute(i, gamma, rstd)
            self.copy_out(offset)
        self.out_r.enque(rstd)
        rstd = self.out_r.deque()
        copy_exact(self.r_gm[self.row0 + start], rstd, count)
        self.out_r.free_tensor(rstd)

    def copy_in(self, offset: int):
        x = self.in_x.alloc_tensor(self.dtype)
        copy_exact(x, self.x_gm[offset], self.t.cols)
        self.in_x.enque(x)

    def compute(self, i: int, gamma, rstd_batch):
        n, x = self.t.cols, self.in_x.deque()
        sqx, r = self.f32("sqxBuf"), self.f32("rstdScalarBuf")
        xf = self.f32("xFp32Buf") if self.wide else x
        if self.wide:
            vec.cast(xf, x, "none", n)
            self.in_x.free_tensor(x)
        vec.mul(sqx, xf, xf, n)
        vec.reduce_sum(r, sqx, n)
        self.rstd(r)
        vec.reduce_sum(rstd_batch[i], r, 1)            # SetValue(i, rstd)
        blocks = self.f32("brcbBuf")
        brcb(blocks, r, 1)
        mul_by_block(sqx, xf, blocks, n)               # Muls(sqx, x, rstd)
        if not self.wide:
            self.in_x.free_tensor(x)
        self.mul_gamma_cast(sqx, gamma, n)

    def rstd(self, r):
        """r[0] = 1 / sqrt(r[0] x (1 / cols) + eps), each step rounded to fp32."""
        avg = float(np.float32(1.0) / np.float32(self.t.cols))   # avg_factor, a float
        vec.muls(r, r, avg, 1)
        vec.adds(r, r, self.eps, 1)
        vec.sqrt(r, r, 1)
        vec.div(r, self.f32("oneBuf"), r, 1)

    def mul_gamma_cast(self, sqx, gamma, n: int):
        y = self.out_y.alloc_tensor(self.dtype)
        if not self.wide:
            vec.mul(y, sqx, gamma, n)
        else:
            if self.g_dtype.itemsize == 4:              # mixed: fp32 gamma, 16-bit x
                vec.mul(sqx, sqx, gamma, n)
            else:
                gf = self.f32("xFp32Buf")
                vec.cast(gf, gamma, "none", n)
                vec.mul(sqx, sqx, gf, n)
            vec.cast(y, sqx, "none" if self.dtype.name == "float16" else "rint", n)
        self.out_y.enque(y)

    def copy_out(self, offset: int):
        y = self.out_y.deque()
        copy_exact(self.y_gm[offset], y, self.t.cols)
        self.out_y.free_tensor(y)
