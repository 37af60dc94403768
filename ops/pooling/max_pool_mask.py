"""aclnnMaxPool2dWithMask on the Atlas training series: out = the maximum of each window,
indices = a bit mask saying, per kernel tap, which outputs took their maximum there.

aclnn runs (``aclnn_max_pool2d_with_indices.cpp``, the isMask path, 910): Contiguous, a Cast of
a FLOAT self to FLOAT16 (the 910 computes it in fp16, with the loss of precision its doc
states), TransData NCHW -> NC1HWC0 (C0 = 16), the TBE kernel MaxPoolWithArgmaxV1, TransData of
out back to NCHW and a Cast to self's dtype. The kernel writes the mask straight into the
caller's indices (INT8, (N, C, kH x kW, (ceil(OH x OW / 16) + 1) x 32)): viewed as uint16, per
(n, c1) plane and tap k, word p (output position oh x OW + ow) has bit c set when channel
c1 x 16 + c took its maximum at tap k, the first such tap only (ties go to the first tap in
(kh, kw) order, as torch's indices); the words from OH x OW to the end of the tap's
((ceil(OH x OW / 16) + 1) x 16) are 0, and the bytes past N x C1 planes are not written (npusim's
GM starts at 0). Padding reads -65504 (TBE's MIN_VALUE_FP16), as do the channels TransData adds
(their values are 0, their bits set at the first tap inside the input).

The kernel here (``MaxPoolWithArgmaxV1Kernel``): N x C1 planes split over the cores; per slab of
output rows (``mask_geometry.py``): the input rows that exist in by DataCopy at their padded
places, the rest of the tile filled with -65504 (the rows above and below, the gaps between
rows), per tap and output row a strided copy of the candidates into a dense img2col tile
(block stride = stride W), a Max chain over the taps, then per tap Compare EQ with the maximum
and the first-tap rule, the maximum and the mask bits out.

Not modelled: CANN's Load3D of the img2col tile from L1 on MTE1 (npusim has no Load3D to UB;
the copy runs on the vector unit here), its cut-H/W and ResNet-50 special templates, and the
removal of repeated maxima with vor/vnot/vand on the bit masks (npusim has no bitwise vector
instructions: a running 'taken' flag with Select and Compare GT does it, two fp16 instructions
more a tap). NaN and -inf inputs (the doc excludes them).
"""

import math

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
from npusim.ops.common import ceil_div, resolve_chip, round_up
from npusim.ops.common.contiguous import to_gm
from npusim.ops.common.fill_cast import launch_cast
from npusim.ops.pooling.mask_args import (
    C0,
    OP_MASK,
    check_max_pool_mask,
    mask_shape,
    planes_5hd,
)
from npusim.ops.pooling.mask_geometry import MaskPoolTiling, mask_pool_tiling
from npusim.ops.pooling.max_pool import plane_range
from npusim.ops.transdata.kernel import run_transdata
from npusim.ops.transdata.plan import plan_from_5hd, plan_to_5hd

PAD_FP16 = -65504.0      # MaxPoolWithArgmaxV1's padding value (TBE MIN_VALUE_FP16)
F16 = np.float16


def strided_copy(dst, src, positions: int, src_blk: int) -> None:
    """dst[p] = src[p x src_blk] for ``positions`` fp16 positions of 16 lanes (one block each):
    Muls by 1 in the repeat form, 8 positions a repeat, the tail masked."""
    full, tail = divmod(positions, 8)
    for at, reps, mask in ((0, full, 128), (full * 8, 1 if tail else 0, tail * C0)):
        if reps:
            vec.muls(dst[at * C0], src[at * src_blk * C0], 1.0, repeat=vec.RepeatParams(
                mask=mask, repeat_times=reps, dst_blk_stride=1, src0_blk_stride=src_blk,
                dst_rep_stride=8, src0_rep_stride=8 * src_blk))


class MaxPoolWithArgmaxV1Kernel(Kernel):
    """One core's NC1HWC0 planes, slab by slab of output rows."""

    def init(self, x, out, mask, tiling: MaskPoolTiling):
        t = tiling
        self.x, self.y, self.m_gm, self.t = x, out, mask, t
        bn, self.n = t.buffer_num, t.p8 * C0
        self.in_que = TQue(TPosition.VECIN, bn, name="inQueueX")
        self.pipe.init_buffer(self.in_que, bn, t.in_rows * t.pitch * C0 * 2)
        self.out_que = TQue(TPosition.VECOUT, bn, name="outQueueMax")
        self.pipe.init_buffer(self.out_que, bn, self.n * 2)
        self.mask_que = TQue(TPosition.VECOUT, bn, name="outQueueMask")
        self.pipe.init_buffer(self.mask_que, bn, t.taps * t.mask_slot)
        self.bufs = {}
        for name, size in (("cand", t.taps * self.n * 2), ("flag", self.n * 2),
                           ("taken", self.n * 2), ("ones", self.n * 2), ("eq", t.mask_slot)):
            self.bufs[name] = TBuf(TPosition.VECCALC, name=name)
            self.pipe.init_buffer(self.bufs[name], size)

    def buf(self, name: str, dtype="float16"):
        return self.bufs[name].get(dtype)

    def process(self):
        t = self.t
        vec.duplicate(self.buf("ones"), 1.0, self.n)
        vec.duplicate(self.buf("cand"), 0.0, t.taps * self.n)   # the positions past a slab
        for plane in plane_range(t, get_block_idx()):
            for j in range(t.slabs):
                r0 = j * t.rows
                rows = min(t.rows, t.oh - r0)
                valid = self.copy_in(plane, r0)
                self.compute(rows, valid)
                self.copy_out(plane, r0, rows)

    def copy_in(self, plane: int, r0: int) -> tuple:
        """The slab's input rows that exist, at their padded places; returns (first, end)."""
        t = self.t
        tile = self.in_que.alloc_tensor("float16")
        top = r0 * t.sh - t.ph                  # the input row of the tile's first row
        a, b = max(0, -top), min(t.in_rows, t.h - top)
        if b > a:
            data_copy(tile[(a * t.pitch + t.pw) * C0], self.x[((plane * t.h) + top + a) * t.w * C0],
                      DataCopyParams(block_count=b - a, block_len=t.w, src_stride=0,
                                     dst_stride=t.pitch - t.w))
        self.in_que.enque(tile)
        return a, max(a, b)

    def fill_pad(self, tile, valid: tuple) -> None:
        """-65504 everywhere the input rows did not land: the rows above, the gaps between the
        rows (right padding, then the next row's left padding), the rest of the tile."""
        t = self.t
        a, b = valid
        if b == a:
            vec.duplicate(tile, PAD_FP16, t.in_rows * t.pitch * C0)
            return
        if a * t.pitch + t.pw:
            vec.duplicate(tile, PAD_FP16, (a * t.pitch + t.pw) * C0)
        gap = t.pitch - t.w
        for g0 in range(0, gap if b - a > 1 else 0, 8):
            vec.duplicate(tile[(a * t.pitch + t.pw + t.w + g0) * C0], PAD_FP16,
                          repeat=vec.RepeatParams(mask=min(8, gap - g0) * C0,
                                                  repeat_times=b - 1 - a, dst_rep_stride=t.pitch))
        end = (b - 1) * t.pitch + t.pw + t.w
        if end < t.in_rows * t.pitch:
            vec.duplicate(tile[end * C0], PAD_FP16, (t.in_rows * t.pitch - end) * C0)

    def img2col(self, tile, cand, rows: int) -> None:
        t = self.t
        for k in range(t.taps):
            a, b = divmod(k, t.kw)
            for r in range(rows):
                strided_copy(cand[k * self.n + r * t.ow * C0],
                             tile[((r * t.sh + a) * t.pitch + b) * C0], t.ow, t.sw)

    def compute(self, rows: int, valid: tuple):
        t, n = self.t, self.n
        tile, cand = self.in_que.deque(), self.buf("cand")
        self.fill_pad(tile, valid)
        self.img2col(tile, cand, rows)
        self.in_que.free_tensor(tile)
        mx = self.out_que.alloc_tensor("float16")
        if t.taps == 1:
            vec.muls(mx, cand, 1.0, n)
        else:
            vec.max(mx, cand, cand[n], n)
        for k in range(2, t.taps):
            vec.max(mx, mx, cand[k * n], n)
        masks = self.mask_que.alloc_tensor("uint8")
        eq, flag, taken = self.buf("eq", "uint8"), self.buf("flag"), self.buf("taken")
        ones = self.buf("ones")
        vec.compare(masks, cand, mx, "eq", n)
        if t.taps > 1:
            vec.select(taken, masks, ones, 0.0, n)
        for k in range(1, t.taps):               # the first tap holding the maximum only
            vec.compare(eq, cand[k * n], mx, "eq", n)
            vec.select(flag, eq, ones, 0.0, n)
            vec.compare(masks[k * t.mask_slot], flag, taken, "gt", n)
            if k < t.taps - 1:
                vec.max(taken, taken, flag, n)
        self.out_que.enque(mx)
        self.mask_que.enque(masks)

    def copy_out(self, plane: int, r0: int, rows: int):
        t = self.t
        p = rows * t.ow
        mx, masks = self.out_que.deque(), self.mask_que.deque()
        data_copy(self.y[(plane * t.oh * t.ow + r0 * t.ow) * C0], mx, p * C0)
        data_copy_pad(self.m_gm[plane * t.taps * t.mask_words + r0 * t.ow],
                      masks.reinterpret_cast(np.uint16), DataCopyExtParams(
                          block_count=t.taps, block_len=p * 2,
                          src_stride=(t.mask_slot - round_up(p * 2, 32)) // 32,
                          dst_stride=(t.mask_words - p) * 2))
        self.out_que.free_tensor(mx)
        self.mask_que.free_tensor(masks)


def nchw_of(pool) -> tuple:
    c = pool.lead[-1]
    return pool.planes // c, c, ceil_div(c, C0)


def max_pool2d_with_mask(self_, kernel_size, stride, padding, dilation=(1, 1), ceil_mode=False,
                         *, chip="atlas-training", tiling=None, mode="timed", numerics=True,
                         trace=True, sanitize=True, jitter=None):
    """Run aclnnMaxPool2dWithMask on ``chip`` (the training series); ``outputs["out"]`` has
    self's dtype, ``outputs["indices"]`` is the INT8 mask of aclnn's shape."""
    chip = resolve_chip(chip)
    x, pool = check_max_pool_mask(chip, self_, kernel_size, stride, padding, dilation,
                                  ceil_mode)
    t = mask_pool_tiling(chip, OP_MASK, planes_5hd(pool), False, tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    n, c, c1 = nchw_of(pool)
    (h, w), (oh, ow) = pool.hw, pool.out
    src = to_gm(run, "self", x)
    if x.dtype != F16:
        half = run.gm.tensor("self.fp16", F16, x.size)
        launch_cast(run, src, half, x.size, "Cast(self)")
        src = half
    x5 = run.gm.tensor("self.5hd", F16, n * c1 * h * w * C0)
    run_transdata(run, plan_to_5hd(chip, "TransData(self)", (n, c, 1, h, w), 1, C0, F16, F16),
                  src, x5)
    y5 = run.gm.tensor("out.5hd", F16, n * c1 * oh * ow * C0)
    shape = mask_shape(pool)
    m = run.gm.tensor("indices", np.int8, math.prod(shape))
    run.launch(MaxPoolWithArgmaxV1Kernel, block_dim=t.block_dim, name="MaxPoolWithArgmaxV1",
               impl="tbe", args=dict(x=x5, out=y5, mask=m.reinterpret_cast(np.uint16), tiling=t))
    y = run.gm.tensor("out", x.dtype, n * c * oh * ow)
    half = y if x.dtype == F16 else run.gm.tensor("out.fp16", F16, n * c * oh * ow)
    run_transdata(run, plan_from_5hd(chip, "TransData(out)", (n, 1, c1, oh * ow, C0), c, F16,
                                     F16), y5, half)
    if half is not y:
        launch_cast(run, half, y, n * c * oh * ow, "Cast(out)")
    ws = (n * c1 * (h * w + oh * ow) * C0) * 2
    return run.result({"out": (y, (*pool.lead, oh, ow)), "indices": (m, shape)}, tiling=t,
                      workspace_bytes=ws)
