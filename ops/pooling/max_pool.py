"""aclnnMaxPool2dWithIndices on A2: out = the maximum of each window, indices = the flat
position (h x W + w) in its plane of the first maximum, as torch's max_pool2d_with_indices.

aclnn runs (the non-regbase path of ``aclnn_max_pool2d_with_indices.cpp``) Contiguous, then
MaxPool3DWithArgmaxV2 on self viewed as NCDHW with D = 1 (Ascend C), then a Cast of the int32
indices when the caller's are int64 (npusim returns the kernel's int32). The kernel here splits
the planes over the vector cores; per slab of output rows (``max_geometry.py``): the input rows
in (DataCopyPad, rows outside the input filled with -inf, double buffered), then per kernel tap
a Gather of every output's candidate (one host-made offset table per tap, loaded once), Compare
greater-than with the running maximum, Select of the value and of its index (fp32, as CANN
computes indices in float and casts them), the output rows and the indices (Cast to int32) out.
bf16 is compared in fp32 (Cast in, exact Cast back). A window's index starts at its first
position inside the input, and only a strictly greater value replaces the maximum, so the
first maximum wins, as in torch.

Not modelled: CANN's own layout (TransDataTo5HD puts 16 planes on the lanes and the windows are
maxed block by block, with block strides, no Gather), NaN (torch propagates it; here a NaN never
replaces the maximum). The vector time here is Gather-bound (vgather's measured slope is 24
cycles a fp16 repeat against 2 for Max): expect these cycles above CANN's kernel's.
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
)
from npusim.dsl import vector as vec
from npusim.engine.sequence import OpRun
from npusim.ops.common import resolve_chip, round_up
from npusim.ops.common.blocks import copy_exact
from npusim.ops.common.contiguous import to_gm
from npusim.ops.pooling.max_args import OP_MAX, check_max_pool
from npusim.ops.pooling.max_geometry import (
    MaxPoolTiling,
    forward_tables,
    max_pool_tiling,
    results,
    slab_count,
)

NEG_INF = float("-inf")


def plane_range(t: MaxPoolTiling, idx: int) -> range:
    first = idx * t.planes_per_core + min(idx, t.big_core_num)
    return range(first, first + t.planes_per_core + (1 if idx < t.big_core_num else 0))


class MaxPoolWithArgmaxKernel(Kernel):
    """One vector core's planes, slab by slab."""

    def init(self, x, out, indices, offsets, floats, tiling: MaxPoolTiling):
        t = tiling
        self.x, self.y, self.i_gm, self.t, self.dtype = x, out, indices, t, x.dtype
        self.f32 = self.dtype.name == "bfloat16"       # compared in fp32
        item, bn = self.dtype.itemsize, t.buffer_num
        self.n = results(t, False)
        n8 = round_up(self.n, 8)
        self.tile_elems = t.slab_rows * t.pitch + 32 // item
        self.in_que = TQue(TPosition.VECIN, bn, name="inQueueX")
        self.pipe.init_buffer(self.in_que, bn, self.tile_elems * item)
        self.tab_que = TQue(TPosition.VECIN, 1, name="inQueueTables")
        self.pipe.init_buffer(self.tab_que, 1, (t.taps + 3) * n8 * 4)
        self.out_que = TQue(TPosition.VECOUT, bn, name="outQueueY")
        self.pipe.init_buffer(self.out_que, bn, n8 * item)
        self.idx_que = TQue(TPosition.VECOUT, bn, name="outQueueIndices")
        self.pipe.init_buffer(self.idx_que, bn, n8 * 4)
        self.bufs = {}
        for name, size in (("cand", n8 * 4), ("candF", n8 * 4), ("cur", n8 * 4),
                           ("idx", n8 * 4), ("ci", n8 * 4), ("mask", round_up(n8 // 8, 32))):
            self.bufs[name] = TBuf(TPosition.VECCALC, name=name)
            self.pipe.init_buffer(self.bufs[name], size)
        self.offsets, self.floats, self.n8 = offsets, floats, n8

    def buf(self, name: str, dtype):
        return self.bufs[name].get(dtype)

    def process(self):
        t = self.t
        tab = self.tab_que.alloc_tensor("uint32")
        copy_exact(tab, self.offsets[0], t.taps * self.n8)
        copy_exact(tab[t.taps * self.n8].reinterpret_cast(np.float32), self.floats[0],
                   3 * self.n8)
        self.tab_que.enque(tab)
        tab = self.tab_que.deque()
        for plane in plane_range(t, get_block_idx()):
            for j in range(slab_count(t, False)):
                oh0 = j * t.rows
                rows = min(t.rows, t.oh - oh0)
                valid = self.copy_in(plane, oh0)
                self.compute(tab, oh0, valid)
                self.copy_out(plane, oh0, rows)
        self.tab_que.free_tensor(tab)

    def copy_in(self, plane: int, oh0: int) -> tuple:
        """The slab's input rows that exist; returns (first, last) slab rows they fill."""
        t, item = self.t, self.dtype.itemsize
        top = oh0 * t.sh - t.ph
        a, b = max(top, 0), min(top + t.slab_rows, t.h)
        tile = self.in_que.alloc_tensor(self.dtype)
        if b > a:
            data_copy_pad(tile[(a - top) * t.pitch], self.x[(plane * t.h + a) * t.w],
                          DataCopyExtParams(block_count=b - a, block_len=t.w * item))
        self.in_que.enque(tile)
        return a - top, max(b - top, a - top)

    def fill_neg(self, tile, valid: tuple) -> None:
        """-inf in the rows outside the input and in the block after the rows."""
        t = self.t
        lo, hi = valid
        for r0, r1 in ((0, lo), (hi, t.slab_rows)):
            if r1 > r0:
                vec.duplicate(tile[r0 * t.pitch], NEG_INF, (r1 - r0) * t.pitch)
        vec.duplicate(tile[t.slab_rows * t.pitch], NEG_INF, 32 // self.dtype.itemsize)

    def compute(self, tab, oh0: int, valid: tuple):
        t, n = self.t, self.n
        tile = self.in_que.deque()
        self.fill_neg(tile, valid)
        work = "float32" if self.f32 else self.dtype
        cur, idx, ci = self.buf("cur", work), self.buf("idx", "float32"), self.buf("ci",
                                                                                  "float32")
        floats = tab[t.taps * self.n8].reinterpret_cast(np.float32)
        rel, hs, ws = floats, floats[self.n8], floats[2 * self.n8]
        vec.duplicate(cur, NEG_INF, n)
        vec.adds(ci, hs, float(oh0 * t.sh), n)           # first position inside the input
        vec.maxs(ci, ci, 0.0, n)
        vec.muls(ci, ci, float(t.w), n)
        vec.add(idx, ci, ws, n)
        mask = self.buf("mask", "uint8")
        for k in range(t.taps):
            cand = self.buf("cand", self.dtype)
            vec.gather(cand, tile, tab[k * self.n8], 0, n)
            if self.f32:
                cf = self.buf("candF", "float32")
                vec.cast(cf, cand, "none", n)
                cand = cf
            vec.compare(mask, cand, cur, "gt", n)
            vec.select(cur, mask, cand, cur, n)
            a, b = divmod(k, t.kw)
            vec.adds(ci, rel, float(oh0 * t.sh * t.w + a * t.w + b), n)
            vec.select(idx, mask, ci, idx, n)
        self.in_que.free_tensor(tile)
        out, ind = self.out_que.alloc_tensor(self.dtype), self.idx_que.alloc_tensor("int32")
        if self.f32:
            vec.cast(out, cur, "rint", n)
        else:
            vec.muls(out, cur, 1.0, n)
        vec.cast(ind, idx, "rint", n)
        self.out_que.enque(out)
        self.idx_que.enque(ind)

    def copy_out(self, plane: int, oh0: int, rows: int):
        t = self.t
        out, ind = self.out_que.deque(), self.idx_que.deque()
        at = (plane * t.oh + oh0) * t.ow
        copy_exact(self.y[at], out, rows * t.ow)
        copy_exact(self.i_gm[at], ind, rows * t.ow)
        self.out_que.free_tensor(out)
        self.idx_que.free_tensor(ind)


def max_pool2d_with_indices(self_, kernel_size, stride, padding, dilation=(1, 1),
                            ceil_mode=False, *, chip="atlas-a2", tiling=None, mode="timed",
                            numerics=True, trace=True, sanitize=True, jitter=None):
    """Run aclnnMaxPool2dWithIndices on ``chip`` (A2); ``outputs["out"]`` has self's dtype,
    ``outputs["indices"]`` int32 (the kernel's; aclnn casts to int64 for an int64 caller)."""
    chip = resolve_chip(chip)
    x, pool = check_max_pool(chip, self_, kernel_size, stride, padding, dilation, ceil_mode)
    t = max_pool_tiling(chip, OP_MAX, pool, x.dtype, False, tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    x_gm = to_gm(run, "self", x)
    size = pool.planes * pool.out[0] * pool.out[1]
    y, ind = run.gm.tensor("out", x.dtype, size), run.gm.tensor("indices", np.int32, size)
    offs, floats = forward_tables(t, x.dtype.itemsize)
    offs_gm = run.gm.tensor("MaxPool3DWithArgmaxV2.offsets", np.uint32, offs.size, offs)
    fl_gm = run.gm.tensor("MaxPool3DWithArgmaxV2.index_tables", np.float32, floats.size, floats)
    run.launch(MaxPoolWithArgmaxKernel, block_dim=t.block_dim, name="MaxPool3DWithArgmaxV2",
               args=dict(x=x_gm, out=y, indices=ind, offsets=offs_gm, floats=fl_gm, tiling=t))
    shape = (*pool.lead, *pool.out)
    return run.result({"out": (y, shape), "indices": (ind, shape)}, tiling=t)
