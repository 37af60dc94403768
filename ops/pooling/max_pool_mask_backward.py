"""aclnnMaxPool2dWithMaskBackward on the Atlas training series: gradInput[p] = the sum of
gradOutput over the windows whose mask bit (from aclnnMaxPool2dWithMask) is at p.

aclnn runs (``aclnn_max_pool2d_with_indices_backward.cpp``, the isMask path, 910): Contiguous,
a Cast of FLOAT gradOutput and self to FLOAT16, TransData of both to NC1HWC0, the TBE kernel
MaxPoolGradWithArgmaxV1 on them and the mask (the INT8 indices read as uint16 words), TransData
of gradInput back to NCHW and a Cast to self's dtype. The kernel takes self for its shape only.

The kernel here (``MaxPoolGradWithArgmaxV1Kernel``): N x C1 planes split over the cores; per slab
of output rows (``mask_geometry.py``) the gradOutput rows and each tap's mask rows in; per output
row and tap: Select of the gradient where the tap's bit is set (else 0), a Cast to fp32 and the
col2img add into an fp32 tile of the padded input rows (block stride = 2 x stride W, the two
halves of each 16-lane fp32 position apart); after the slab the rows no later window reaches
are cast to fp16 and written out (the real rows and columns only), the rows the next slab's
windows still reach moved to the tile's top. The sums are taken in fp32 as CANN's TBE max-pool
gradients keep their col2img tile (``col2img_fp32_ub``), rounded once to fp16.

Not modelled: CANN's choice among its cut-H / cut-W and ResNet-50 templates, and its layout of
the selections (npusim selects and adds row by row).
"""

import numpy as np

from npusim.dsl import (
    DataCopyExtParams,
    DataCopyParams,
    Kernel,
    TBuf,
    TPosition,
    TQue,
    data_copy,
    data_copy_pad,
    get_block_idx,
)
from npusim.dsl import vector as vec
from npusim.engine.sequence import OpRun
from npusim.ops.common import resolve_chip
from npusim.ops.common.contiguous import to_gm
from npusim.ops.common.fill_cast import launch_cast
from npusim.ops.pooling.mask_args import (
    C0,
    OP_MASK_GRAD,
    check_max_pool_mask_backward,
    planes_5hd,
)
from npusim.ops.pooling.mask_geometry import MaskPoolTiling, mask_pool_tiling
from npusim.ops.pooling.max_pool import plane_range
from npusim.ops.pooling.max_pool_mask import F16, nchw_of
from npusim.ops.transdata.kernel import run_transdata
from npusim.ops.transdata.plan import plan_from_5hd, plan_to_5hd


def strided_add(dst, src, positions: int, dst_step: int) -> None:
    """dst[p x dst_step] += src[p] for ``positions`` fp32 positions of 16 lanes (two blocks
    each): one Add per half of the position, 8 positions a repeat, the tail masked."""
    full, tail = divmod(positions, 8)
    for half in (0, 8):
        for at, reps, mask in ((0, full, 64), (full * 8, 1 if tail else 0, tail * 8)):
            if not reps:
                continue
            d = dst[at * dst_step * C0 + half]
            vec.add(d, d, src[at * C0 + half], repeat=vec.RepeatParams(
                mask=mask, repeat_times=reps, dst_blk_stride=2 * dst_step,
                src0_blk_stride=2 * dst_step, src1_blk_stride=2, dst_rep_stride=16 * dst_step,
                src0_rep_stride=16 * dst_step, src1_rep_stride=16))


class MaxPoolGradWithArgmaxV1Kernel(Kernel):
    """One core's NC1HWC0 planes, slab by slab of output rows."""

    def init(self, grad, mask, dx, tiling: MaskPoolTiling):
        t = tiling
        self.g_gm, self.m_gm, self.dx, self.t = grad, mask, dx, t
        bn = t.buffer_num
        self.tile = t.in_rows * t.pitch * C0
        self.g_que = TQue(TPosition.VECIN, bn, name="inQueueGrad")
        self.pipe.init_buffer(self.g_que, bn, t.p8 * C0 * 2)
        self.m_que = TQue(TPosition.VECIN, bn, name="inQueueMask")
        self.pipe.init_buffer(self.m_que, bn, t.taps * t.rows * t.row_slot)
        self.out_que = TQue(TPosition.VECOUT, bn, name="outQueueGradInput")
        self.pipe.init_buffer(self.out_que, bn, self.tile * 2)
        self.bufs = {}
        for name, size in (("col", self.tile * 4), ("sel", t.ow * C0 * 2),
                           ("selF", t.ow * C0 * 4)):
            self.bufs[name] = TBuf(TPosition.VECCALC, name=name)
            self.pipe.init_buffer(self.bufs[name], size)

    def buf(self, name: str, dtype="float32"):
        return self.bufs[name].get(dtype)

    def process(self):
        t = self.t
        for plane in plane_range(t, get_block_idx()):
            vec.duplicate(self.buf("col"), 0.0, self.tile)
            for j in range(t.slabs):
                r0 = j * t.rows
                rows = min(t.rows, t.oh - r0)
                self.copy_in(plane, r0, rows)
                self.compute(rows)
                self.copy_out(plane, r0, j == t.slabs - 1)

    def copy_in(self, plane: int, r0: int, rows: int):
        t = self.t
        g, m = self.g_que.alloc_tensor("float16"), self.m_que.alloc_tensor("uint16")
        data_copy(g, self.g_gm[(plane * t.oh + r0) * t.ow * C0], rows * t.ow * C0)
        for k in range(t.taps):                  # each output row's words 32-byte aligned
            data_copy_pad(m[k * t.rows * t.row_slot // 2],
                          self.m_gm[(plane * t.taps + k) * t.mask_words + r0 * t.ow],
                          DataCopyExtParams(block_count=rows, block_len=t.ow * 2))
        self.g_que.enque(g)
        self.m_que.enque(m)

    def compute(self, rows: int):
        t = self.t
        g, m = self.g_que.deque(), self.m_que.deque()
        col, sel, sel_f = self.buf("col"), self.buf("sel", "float16"), self.buf("selF")
        n = t.ow * C0
        for r in range(rows):
            for k in range(t.taps):
                a, b = divmod(k, t.kw)
                bits = m[(k * t.rows + r) * t.row_slot // 2].reinterpret_cast(np.uint8)
                vec.select(sel, bits, g[r * n], 0.0, n)
                vec.cast(sel_f, sel, "none", n)
                strided_add(col[((r * t.sh + a) * t.pitch + b) * C0], sel_f, t.ow, t.sw)
        self.g_que.free_tensor(g)
        self.m_que.free_tensor(m)

    def copy_out(self, plane: int, r0: int, last: bool):
        """The finished rows out (fp16, real rows and columns); the rest moved up."""
        t, col = self.t, self.buf("col")
        done = t.in_rows if last else t.rows * t.sh
        out = self.out_que.alloc_tensor("float16")
        vec.cast(out, col, "rint", done * t.pitch * C0)
        self.out_que.enque(out)
        if not last:
            keep = t.in_rows - done
            if keep:
                vec.muls(col, col[done * t.pitch * C0], 1.0, keep * t.pitch * C0)
            vec.duplicate(col[keep * t.pitch * C0], 0.0, done * t.pitch * C0)
        out = self.out_que.deque()
        top = r0 * t.sh - t.ph                  # the input row of the tile's first row
        a, b = max(0, -top), min(done, t.h - top)
        if b > a:
            data_copy(self.dx[(plane * t.h + top + a) * t.w * C0], out[(a * t.pitch + t.pw) * C0],
                      DataCopyParams(block_count=b - a, block_len=t.w,
                                     src_stride=t.pitch - t.w, dst_stride=0))
        self.out_que.free_tensor(out)


def max_pool2d_with_mask_backward(grad_output, self_, indices, kernel_size, stride, padding,
                                  dilation=(1, 1), ceil_mode=False, *, chip="atlas-training",
                                  tiling=None, mode="timed", numerics=True, trace=True,
                                  sanitize=True, jitter=None):
    """Run aclnnMaxPool2dWithMaskBackward on ``chip`` (the training series);
    ``outputs["gradInput"]`` has self's shape and dtype."""
    chip = resolve_chip(chip)
    dy, x, m, pool = check_max_pool_mask_backward(chip, grad_output, self_, indices,
                                                  kernel_size, stride, padding, dilation,
                                                  ceil_mode)
    t = mask_pool_tiling(chip, OP_MASK_GRAD, planes_5hd(pool), True, tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    n, c, c1 = nchw_of(pool)
    (h, w), (oh, ow) = pool.hw, pool.out
    ins = []
    for name, arr, hw in (("gradOutput", dy, (oh, ow)), ("self", x, (h, w))):
        src = to_gm(run, name, arr)
        if arr.dtype != F16:
            half = run.gm.tensor(f"{name}.fp16", F16, arr.size)
            launch_cast(run, src, half, arr.size, f"Cast({name})")
            src = half
        five = run.gm.tensor(f"{name}.5hd", F16, n * c1 * hw[0] * hw[1] * C0)
        run_transdata(run, plan_to_5hd(chip, f"TransData({name})", (n, c, 1, *hw), 1, C0, F16,
                                       F16), src, five)
        ins.append(five)
    m_gm = to_gm(run, "indices", m)
    dx5 = run.gm.tensor("gradInput.5hd", F16, n * c1 * h * w * C0)
    run.launch(MaxPoolGradWithArgmaxV1Kernel, block_dim=t.block_dim,
               name="MaxPoolGradWithArgmaxV1", impl="tbe",
               args=dict(grad=ins[0], mask=m_gm.reinterpret_cast(np.uint16), dx=dx5, tiling=t))
    dx = run.gm.tensor("gradInput", x.dtype, x.size)
    half = dx if x.dtype == F16 else run.gm.tensor("gradInput.fp16", F16, x.size)
    run_transdata(run, plan_from_5hd(chip, "TransData(gradInput)", (n, 1, c1, h * w, C0), c,
                                     F16, F16), dx5, half)
    if half is not dx:
        launch_cast(run, half, dx, x.size, "Cast(gradInput)")
    ws = n * c1 * (2 * h * w + oh * ow) * C0 * 2
    return run.result({"gradInput": (dx, x.shape)}, tiling=t, workspace_bytes=ws)
