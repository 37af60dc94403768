"""aclnnMaxPool2dWithIndicesBackward on A2: gradInput[p] = the sum of gradOutput over the windows
whose index (from the forward) is p; FLOAT only on A2, indices INT32.

aclnn runs (``aclnn_max_pool2d_with_indices_backward.cpp``, non-regbase) Contiguous of the
inputs, then MaxPool3DGradWithArgmax on NCDHW with D = 1 (Ascend C). Its kernels compare each
window position's index with the argmax (Compare EQ), Select the gradient or 0, and add the
selections into the input grid (col2img). The kernel here does the same per slab of input rows
of one plane (``max_geometry.py``): the gradOutput and indices rows that reach the slab in
(DataCopyPad, rows outside filled with grad 0 and index -1), the indices Cast to fp32; per
kernel tap, over the gradOutput tile: the tap's position in each window (a host-made table plus
a scalar), Compare EQ with the index, Select the gradient or 0; then over the slab's input
positions a Gather of those selections (one host-made table per tap gives each position the
output whose window has it at that tap, or a zero block) and an Add into the fp32 sums (taps in
order kh, kw); the slab out. Planes are split over the vector cores.

Not modelled: CANN's layout (planes on the lanes after TransDataTo5HD, the col2img adds with a
block stride of sw) and its choice among the normal, cut-kernel and scatter kernels. The col2img
here is a Gather per tap over the input positions (CANN's adds with a block stride, no
Gather): expect these cycles above CANN's kernel's.
"""

import numpy as np

from npusim.dsl import (
    DataCopyExtParams,
    DataCopyPadExtParams,
    Kernel,
    TBuf,
    TPosition,
    TQue,
    data_copy_pad,
    get_block_idx,
)
from npusim.dsl import vector as vec
from npusim.engine.sequence import OpRun
from npusim.ops.common import resolve_chip, round_up
from npusim.ops.common.blocks import copy_exact
from npusim.ops.common.contiguous import to_gm
from npusim.ops.pooling.max_args import OP_MAX_GRAD, check_max_pool_backward
from npusim.ops.pooling.max_geometry import (
    MaxPoolTiling,
    backward_tables,
    max_pool_tiling,
    results,
    slab_count,
)
from npusim.ops.pooling.max_pool import plane_range


class MaxPoolGradWithArgmaxKernel(Kernel):
    """One vector core's planes, slab by slab of input rows."""

    def init(self, grad, indices, dx, offsets, positions, tiling: MaxPoolTiling):
        t = tiling
        self.g_gm, self.i_gm, self.dx, self.t = grad, indices, dx, t
        self.n = results(t, True)
        n8, bn = round_up(self.n, 8), t.buffer_num
        self.tile = t.slab_rows * t.pitch + 8
        self.g_que = TQue(TPosition.VECIN, bn, name="inQueueGrad")
        self.i_que = TQue(TPosition.VECIN, bn, name="inQueueArgmax")
        for q in (self.g_que, self.i_que):
            self.pipe.init_buffer(q, bn, self.tile * 4)
        self.tab_que = TQue(TPosition.VECIN, 1, name="inQueueTables")
        self.pipe.init_buffer(self.tab_que, 1, t.taps * n8 * 4 + self.tile * 4)
        self.out_que = TQue(TPosition.VECOUT, bn, name="outQueueY")
        self.pipe.init_buffer(self.out_que, bn, n8 * 4)
        self.bufs = {}
        for name, size in (("idxF", self.tile * 4), ("pos", self.tile * 4),
                           ("sel", self.tile * 4), ("g", n8 * 4),
                           ("mask", round_up(self.tile // 8 + 1, 32))):
            self.bufs[name] = TBuf(TPosition.VECCALC, name=name)
            self.pipe.init_buffer(self.bufs[name], size)
        self.offsets, self.positions, self.n8 = offsets, positions, n8

    def buf(self, name: str, dtype="float32"):
        return self.bufs[name].get(dtype)

    def process(self):
        t = self.t
        tab = self.tab_que.alloc_tensor("uint32")
        copy_exact(tab, self.offsets[0], t.taps * self.n8)
        copy_exact(tab[t.taps * self.n8].reinterpret_cast(np.float32), self.positions[0],
                   self.tile)
        self.tab_que.enque(tab)
        tab = self.tab_que.deque()
        for plane in plane_range(t, get_block_idx()):
            for j in range(slab_count(t, True)):
                ih0 = j * t.rows
                valid = self.copy_in(plane, ih0)
                self.compute(tab, ih0, valid)
                self.copy_out(plane, ih0, min(t.rows, t.h - ih0))
        self.tab_que.free_tensor(tab)

    def copy_in(self, plane: int, ih0: int) -> tuple:
        t = self.t
        top = ih0 // t.sh + t.first_row
        a, b = max(top, 0), min(top + t.slab_rows, t.oh)
        g, i = self.g_que.alloc_tensor("float32"), self.i_que.alloc_tensor("int32")
        if b > a:
            params = DataCopyExtParams(block_count=b - a, block_len=t.ow * 4)
            pad = DataCopyPadExtParams(is_pad=True, padding_value=0)
            at = (plane * t.oh + a) * t.ow
            data_copy_pad(g[(a - top) * t.pitch], self.g_gm[at], params, pad)
            data_copy_pad(i[(a - top) * t.pitch], self.i_gm[at], params, pad)
        self.g_que.enque(g)
        self.i_que.enque(i)
        return a - top, max(b - top, a - top)

    def fill_dead(self, g, i, valid: tuple) -> None:
        """grad 0 and index -1 in the rows outside gradOutput and the block after the rows."""
        t = self.t
        lo, hi = valid
        for r0, r1 in ((0, lo), (hi, t.slab_rows + 1)):
            count = (r1 - r0) * t.pitch if r1 <= t.slab_rows else (r1 - r0 - 1) * t.pitch + 8
            if count > 0:
                vec.duplicate(g[r0 * t.pitch], 0.0, count)
                vec.duplicate(i[r0 * t.pitch], -1, count)

    def compute(self, tab, ih0: int, valid: tuple):
        t, n = self.t, self.n
        g, i = self.g_que.deque(), self.i_que.deque()
        self.fill_dead(g, i, valid)
        idx_f = self.buf("idxF")
        vec.cast(idx_f, i, "rint", self.tile)
        self.i_que.free_tensor(i)
        pos, sel, gk = self.buf("pos"), self.buf("sel"), self.buf("g")
        mask = self.buf("mask", "uint8")
        positions = tab[t.taps * self.n8].reinterpret_cast(np.float32)
        top = ih0 // t.sh + t.first_row          # the slab's first gradOutput row
        acc = self.out_que.alloc_tensor("float32")
        vec.duplicate(acc, 0.0, n)
        for k in range(t.taps):
            a, b = divmod(k, t.kw)
            base = (top * t.sh - t.ph + a) * t.w - t.pw + b
            vec.adds(pos, positions, float(base), self.tile)
            vec.compare(mask, idx_f, pos, "eq", self.tile)
            vec.select(sel, mask, g, 0.0, self.tile)
            vec.gather(gk, sel, tab[k * self.n8], 0, n)
            vec.add(acc, acc, gk, n)
        self.g_que.free_tensor(g)
        self.out_que.enque(acc)

    def copy_out(self, plane: int, ih0: int, rows: int):
        t, acc = self.t, self.out_que.deque()
        copy_exact(self.dx[(plane * t.h + ih0) * t.w], acc, rows * t.w)
        self.out_que.free_tensor(acc)


def max_pool2d_with_indices_backward(grad_output, self_, indices, kernel_size, stride,
                                     padding, dilation=(1, 1), ceil_mode=False, *,
                                     chip="atlas-a2", tiling=None, mode="timed",
                                     numerics=True, trace=True, sanitize=True, jitter=None):
    """Run aclnnMaxPool2dWithIndicesBackward on ``chip`` (A2, FLOAT); ``outputs["gradInput"]``
    has self's shape."""
    chip = resolve_chip(chip)
    dy, x, idx, pool = check_max_pool_backward(chip, grad_output, self_, indices, kernel_size,
                                               stride, padding, dilation, ceil_mode)
    t = max_pool_tiling(chip, OP_MAX_GRAD, pool, np.float32, True, tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    dy_gm, i_gm = to_gm(run, "gradOutput", dy), to_gm(run, "indices", idx)
    to_gm(run, "self", x)                    # aclnn makes self contiguous (its shape is used)
    dx = run.gm.tensor("gradInput", np.float32, x.size)
    offs, positions = backward_tables(t)
    offs_gm = run.gm.tensor("MaxPool3DGradWithArgmax.offsets", np.uint32, offs.size, offs)
    pos_gm = run.gm.tensor("MaxPool3DGradWithArgmax.positions", np.float32, positions.size,
                           positions)
    run.launch(MaxPoolGradWithArgmaxKernel, block_dim=t.block_dim,
               name="MaxPool3DGradWithArgmax",
               args=dict(grad=dy_gm, indices=i_gm, dx=dx, offsets=offs_gm, positions=pos_gm,
                         tiling=t))
    return run.result({"gradInput": (dx, x.shape)}, tiling=t)
