"""The RmsNormGrad kernel on the AIV cores (ops-nn norm/rms_norm_grad/op_kernel/
rms_norm_grad_split_n.h, ComputeMain's per-row order, deterministic dgamma).

Per core: gamma in once; dgamma (fp32) zeroed. Per batch of ``row_factor`` rows: rstd in
(DataCopyPad) and broadcast one 32-byte block per row (Brcb). Per row: dy and x in (MTE2), Cast
to fp32 (16-bit), then in fp32: xr = x x rstd; dgamma = dgamma + dy x xr; gy = dy x gamma;
mean = ReduceSum(gy x xr) x (1/cols); dx = (gy - xr x mean) x rstd; Cast back (CAST_RINT), dx
out (MTE3). Then each core's dgamma goes to its row of the workspace, SyncAll, and core 0 adds the
rows in core order (Add(dgamma, dgamma, partial)) and writes dgammaOut: CANN's deterministic path
(fixed_output = 1).

Differences from CANN, and why: CANN's default path adds each core's dgamma into dgammaOut with
atomic adds (non-deterministic, documented so); npusim models the deterministic one. For fp16 and
bf16 CANN's split-N kernel does some products in the input dtype (dy x gamma, dy x cast(x x rstd));
npusim computes every step in fp32 as the fp32 path does (as CANN's high-precision variant does).
Scalar values (rstd, the mean) are broadcast blocks multiplied with block stride 0 (npusim binds
scalar operands when a kernel is recorded). CANN's small-D variant (rows batched with BroadCast)
and split-D mode are not modelled.
"""

import numpy as np

from npusim.dsl import (
    DataCopyExtParams,
    Kernel,
    TBuf,
    TPosition,
    TQue,
    data_copy_pad,
    get_block_idx,
    set_flag,
    sync_all,
    wait_flag,
)
from npusim.dsl import vector as vec
from npusim.dsl.broadcast import brcb
from npusim.ops.common import ceil_div
from npusim.ops.common.blocks import copy_exact
from npusim.ops.common.broadcast import mul_by_block
from npusim.ops.norm.tiling import RmsNormTiling

SYNC_EVENT_ID = 4   # the four input queues (one buffer each) take ids 0-3 of MTE2 <-> V


def sync(event: str) -> None:
    """SetFlag then WaitFlag of one hard event (e.g. "MTE2_V"), on an id the queues do not use."""
    set_flag(event, SYNC_EVENT_ID)
    wait_flag(event, SYNC_EVENT_ID)


class RmsNormGradKernel(Kernel):
    """One vector core's rows: dx, this core's dgamma; core 0 sums the cores' dgamma."""

    def init(self, dy, x, rstd, gamma, dx, dgamma, workspace, tiling: RmsNormTiling):
        t, idx = tiling, get_block_idx()
        self.rows = t.block_factor if idx < t.block_dim - 1 else t.last_rows
        self.row0, self.idx, self.t = idx * t.block_factor, idx, t
        self.dy_gm, self.x_gm, self.r_gm, self.g_gm = dy, x, rstd, gamma
        self.dx_gm, self.dg_gm, self.ws_gm = dx, dgamma, workspace
        self.dtype, self.g_dtype = x.dtype, gamma.dtype
        self.wide = self.dtype.itemsize == 2
        n, bn = t.ub_factor, t.buffer_num
        queues = [("inQueDY", TPosition.VECIN, bn, n * self.dtype.itemsize),
                  ("inQueX", TPosition.VECIN, bn, n * self.dtype.itemsize),
                  ("inQueRstd", TPosition.VECIN, bn, t.row_factor * 4),
                  ("inQueGamma", TPosition.VECIN, 1, n * self.g_dtype.itemsize),
                  ("outQueDX", TPosition.VECOUT, bn, n * self.dtype.itemsize),
                  ("outQueDgamma", TPosition.VECOUT, 1, n * 4)]
        self.q = {}
        for name, pos, depth, nbytes in queues:
            self.q[name] = TQue(pos, depth, name=name)
            self.pipe.init_buffer(self.q[name], depth, nbytes)
        specs = [("tmpBuf", n * 4), ("rstdBrcbBuf", t.row_factor * 32), ("meanBuf", 32),
                 ("meanBrcbBuf", 256)]
        if self.wide:
            specs += [("xFp32Buf", n * 4), ("dyFp32Buf", n * 4)]
        self.buf = {}
        for name, nbytes in specs:
            self.buf[name] = TBuf(TPosition.VECCALC, name=name)
            self.pipe.init_buffer(self.buf[name], nbytes)

    def f32(self, name: str):
        return self.buf[name].get("float32")

    def process(self):
        t = self.t
        g = self.q["inQueGamma"].alloc_tensor(self.g_dtype)
        copy_exact(g, self.g_gm[0], t.cols)
        self.q["inQueGamma"].enque(g)
        g = self.q["inQueGamma"].deque()
        dgamma = self.q["outQueDgamma"].alloc_tensor("float32")
        vec.duplicate(dgamma, 0.0, t.cols)
        for start in range(0, self.rows, t.row_factor):
            self.batch(start, min(t.row_factor, self.rows - start), g, dgamma)
        self.q["inQueGamma"].free_tensor(g)
        self.q["outQueDgamma"].enque(dgamma)
        dgamma = self.q["outQueDgamma"].deque()
        copy_exact(self.ws_gm[self.idx * t.cols], dgamma, t.cols)
        self.q["outQueDgamma"].free_tensor(dgamma)
        sync_all()
        if self.idx == 0:
            self.add_dgamma()

    def batch(self, start: int, count: int, gamma, dgamma):
        rq = self.q["inQueRstd"]
        r = rq.alloc_tensor("float32")
        data_copy_pad(r, self.r_gm[self.row0 + start], DataCopyExtParams(block_len=count * 4))
        rq.enque(r)
        r = rq.deque()
        blocks = self.f32("rstdBrcbBuf")
        brcb(blocks, r, ceil_div(count, 8))
        rq.free_tensor(r)
        for i in range(count):
            offset = (self.row0 + start + i) * self.t.cols
            self.copy_in(offset)
            self.compute(blocks[i * 8], gamma, dgamma)
            self.copy_out(offset)

    def copy_in(self, offset: int):
        for name, gm in (("inQueDY", self.dy_gm), ("inQueX", self.x_gm)):
            local = self.q[name].alloc_tensor(self.dtype)
            copy_exact(local, gm[offset], self.t.cols)
            self.q[name].enque(local)

    def compute(self, rstd_block, gamma, dgamma):
        n = self.t.cols
        dy, x = self.q["inQueDY"].deque(), self.q["inQueX"].deque()
        dx, tmp = self.q["outQueDX"].alloc_tensor(self.dtype), self.f32("tmpBuf")
        if self.wide:
            xf, dyf = self.f32("xFp32Buf"), self.f32("dyFp32Buf")
            vec.cast(xf, x, "none", n)
            vec.cast(dyf, dy, "none", n)
        else:
            xf, dyf = x, dy
        mul_by_block(xf, xf, rstd_block, n)              # xr = x * rstd
        vec.mul(tmp, dyf, xf, n)                         # dg += dy * xr
        vec.add(dgamma, dgamma, tmp, n)
        self.mul_gamma(dyf, gamma, tmp, n)               # gy = dy * gamma
        vec.mul(tmp, dyf, xf, n)                         # mean = sum(gy * xr) / cols
        mean = self.f32("meanBuf")
        vec.reduce_sum(mean, tmp, n)
        vec.muls(mean, mean, float(np.float32(1.0) / np.float32(n)), 1)
        blocks = self.f32("meanBrcbBuf")
        brcb(blocks, mean, 1)
        mul_by_block(xf, xf, blocks, n)                  # xr * mean
        vec.sub(dyf, dyf, xf, n)                         # gy - xr * mean
        if self.wide:
            mul_by_block(dyf, dyf, rstd_block, n)
            vec.cast(dx, dyf, "rint", n)
        else:
            mul_by_block(dx, dyf, rstd_block, n)
        self.q["inQueDY"].free_tensor(dy)
        self.q["inQueX"].free_tensor(x)
        self.q["outQueDX"].enque(dx)

    def mul_gamma(self, dyf, gamma, tmp, n: int):
        if self.g_dtype.itemsize == 2:                   # 16-bit gamma: cast per row
            vec.cast(tmp, gamma, "none", n)
            vec.mul(dyf, dyf, tmp, n)
        else:
            vec.mul(dyf, dyf, gamma, n)

    def copy_out(self, offset: int):
        dx = self.q["outQueDX"].deque()
        copy_exact(self.dx_gm[offset], dx, self.t.cols)
        self.q["outQueDX"].free_tensor(dx)

    def add_dgamma(self):
        """Core 0: dgamma = the cores' rows of the workspace added in core order (AddDgamma).
        CANN fences these steps with PipeBarrier(ALL); npusim's sanitizer does not take a drain
        as ordering a copy-in before a later vector read, so each step is fenced by its flag."""
        n, outq, part = self.t.cols, self.q["outQueDgamma"], self.f32("tmpBuf")
        acc = outq.alloc_tensor("float32")
        sync("MTE3_MTE2")          # dgamma's copy to the workspace has read acc's bytes
        sync("V_MTE2")             # the last row's vector work has read tmpBuf
        copy_exact(acc, self.ws_gm[0], n)
        for core in range(1, self.t.block_dim):
            if core > 1:
                sync("V_MTE2")
            copy_exact(part, self.ws_gm[core * n], n)
            sync("MTE2_V")
            vec.add(acc, acc, part, n)
        if self.t.block_dim == 1:
            sync("MTE2_V")
        outq.enque(acc)
        acc = outq.deque()
        copy_exact(self.dg_gm[0], acc, n)
        outq.free_tensor(acc)
