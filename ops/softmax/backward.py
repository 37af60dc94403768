"""aclnnSoftmaxBackward: gradInput = gradOutput * output - sum(gradOutput * output) * output,
the sum over the softmax's (last) dim, as CANN's SoftmaxGrad vector kernel computes it
(hicann/ops-nn ``activation/softmax_grad``): rows split over the vector cores, a batch of
``row_factor`` rows at a time, double-buffered.

Per batch: gradOutput's and output's rows in (DataCopyPad, each row W = its length rounded up
to 64 wide in UB); 16-bit inputs Cast to fp32; the columns past the row zeroed (a masked
Duplicate); t = dy * y; s = the row sum of t (the 64-wide chunks added, each 8-lane block and
then the 8 block sums by the halving tree: ``ops/attention/fa_vector.row_reduce``); out = t -
y * s (Brcb'd, block stride 0); Cast to the dtype (CAST_RINT); out. Not modelled: a row longer
than one batch fits in UB (CANN's split-D path: a TilingError), a dim other than the last.
"""

from dataclasses import dataclass

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
from npusim.dsl.broadcast import brcb
from npusim.engine.sequence import OpRun
from npusim.errors import TilingError
from npusim.isa.vector import RepeatParams
from npusim.ops.common import ceil_div, override, resolve_chip, round_up
from npusim.ops.common.rows import LANES, by_row, row_reduce, tail_mask
from npusim.ops.softmax.args import OP, check_softmax_backward

MAX_ROWS = 255       # rows of a batch: one repeat a row in the reductions (repeat_times <= 255)


@dataclass(frozen=True, kw_only=True)
class SoftmaxGradTiling:
    """rows, cols and dtype come from the arguments; users may override ``block_dim`` (vector
    cores; ceil(rows / block_dim) rows a core) and ``row_factor`` (rows a batch)."""

    rows: int
    cols: int
    dtype: str
    block_dim: int = 0
    row_factor: int = 0

    @property
    def width(self) -> int:
        return round_up(self.cols, LANES)

    @property
    def per_core(self) -> int:
        return ceil_div(self.rows, self.block_dim)


def ub_bytes(t: SoftmaxGradTiling, itemsize: int) -> int:
    """Two double-buffered inputs and the output in the dtype, two fp32 work tiles (16-bit
    inputs), the reduction's scratch."""
    work = 2 * 4 if itemsize < 4 else 0
    per_row = t.width * (2 * 2 * itemsize + 2 * itemsize + work) + LANES * 4 + 3 * 32
    return t.row_factor * per_row


def softmax_grad_tiling(chip, rows: int, cols: int, dtype: str, itemsize: int,
                        overrides=None) -> SoftmaxGradTiling:
    t = SoftmaxGradTiling(rows=rows, cols=cols, dtype=dtype, block_dim=chip.vector_core_count)
    per_row = ub_bytes(SoftmaxGradTiling(rows=rows, cols=cols, dtype=dtype, row_factor=1),
                       itemsize)
    fit = min(MAX_ROWS, chip.ub_bytes // per_row, t.per_core)
    t = SoftmaxGradTiling(rows=rows, cols=cols, dtype=dtype, block_dim=chip.vector_core_count,
                          row_factor=max(1, fit))
    fixed = (t.rows, t.cols, t.dtype)
    t = override(t, overrides, OP)
    if (t.rows, t.cols, t.dtype) != fixed:
        raise TilingError(f"{OP}: rows, cols and dtype come from the arguments, not the tiling")
    if not 1 <= t.block_dim <= chip.vector_core_count:
        raise TilingError(f"{OP}: block_dim = {t.block_dim}; 1-{chip.vector_core_count} vector "
                          f"cores on {chip.name}")
    if not 1 <= t.row_factor <= MAX_ROWS:
        raise TilingError(f"{OP}: row_factor = {t.row_factor}; 1-{MAX_ROWS} rows a batch")
    need = ub_bytes(t, itemsize)
    if need > chip.ub_bytes:
        raise TilingError(f"{OP}: {t.row_factor} rows of {t.cols} need {need} bytes of UB, "
                          f"which has {chip.ub_bytes} (a row longer than UB holds, CANN's "
                          "split-D path, is not modelled)")
    return t


class SoftmaxGradKernel(Kernel):
    """One vector core's rows of gradInput."""

    def init(self, dy, y, out, tiling: SoftmaxGradTiling):
        t = tiling
        self.t, self.dy_gm, self.y_gm, self.out_gm = t, dy, y, out
        self.dtype = dy.dtype
        self.row0 = get_block_idx() * t.per_core
        self.rows = max(0, min(t.per_core, t.rows - self.row0))
        tile, item = t.row_factor * t.width, self.dtype.itemsize
        self.in_dy = TQue(TPosition.VECIN, 2, name="inQueueGrad")
        self.in_y = TQue(TPosition.VECIN, 2, name="inQueueOutput")
        self.out_q = TQue(TPosition.VECOUT, 2, name="outQueue")
        for que in (self.in_dy, self.in_y, self.out_q):
            self.pipe.init_buffer(que, 2, tile * item)
        self.buf = {}
        sizes = {"tmp": t.row_factor * LANES * 4, "red8": t.row_factor * 32,
                 "sum": round_up(t.row_factor, 8) * 4, "rowb": round_up(t.row_factor, 8) * 32}
        if item < 4:
            sizes.update({"dyf": tile * 4, "yf": tile * 4})
        for name, nbytes in sizes.items():
            self.buf[name] = TBuf(TPosition.VECCALC, name=name)
            self.pipe.init_buffer(self.buf[name], nbytes)

    def f32(self, name):
        return self.buf[name].get("float32")

    def process(self):
        t = self.t
        for start in range(0, self.rows, t.row_factor):
            rows = min(t.row_factor, self.rows - start)
            self.copy_in(start, rows)
            self.compute(rows)
            self.copy_out(start, rows)

    def pad_params(self, rows: int, to_ub: bool) -> DataCopyExtParams:
        t, item = self.t, self.dtype.itemsize
        gap = (t.width - round_up(t.cols, 32 // item)) * item // 32
        return DataCopyExtParams(block_count=rows, block_len=t.cols * item,
                                 src_stride=0 if to_ub else gap, dst_stride=gap if to_ub else 0)

    def copy_in(self, start: int, rows: int):
        at = (self.row0 + start) * self.t.cols
        for que, gm in ((self.in_dy, self.dy_gm), (self.in_y, self.y_gm)):
            x = que.alloc_tensor(self.dtype)
            data_copy_pad(x, gm[at], self.pad_params(rows, True))
            que.enque(x)

    def compute(self, rows: int):
        t, w = self.t, self.t.width
        dy, y = self.in_dy.deque(), self.in_y.deque()
        written = (rows - 1) * w + round_up(t.cols, 32 // self.dtype.itemsize)
        if self.dtype.itemsize < 4:
            dyf, yf = self.f32("dyf"), self.f32("yf")
            vec.cast(dyf, dy, "none", written)
            vec.cast(yf, y, "none", written)
        else:
            dyf, yf = dy, y
        if t.cols < w:     # the columns past the row: zeros, so that the sum and out ignore them
            for x in (dyf, yf):
                vec.duplicate(x[w - LANES], 0.0, repeat=RepeatParams(
                    mask=tail_mask(t.cols - (w - LANES)), repeat_times=rows,
                    dst_rep_stride=w // 8))
        vec.mul(dyf, dyf, yf, rows * w)
        row_reduce(vec.add, vec.block_reduce_sum, self.f32("sum"), dyf, self.f32("tmp"),
                   self.f32("red8"), rows, w)
        brcb(self.f32("rowb"), self.f32("sum"), ceil_div(rows, 8))
        by_row(vec.mul, yf, yf, self.f32("rowb"), rows, w)
        vec.sub(dyf, dyf, yf, rows * w)
        out = self.out_q.alloc_tensor(self.dtype)
        if self.dtype.itemsize < 4:
            vec.cast(out, dyf, "rint", rows * w)
        else:
            vec.adds(out, dyf, 0.0, rows * w)
        self.in_dy.free_tensor(dy)
        self.in_y.free_tensor(y)
        self.out_q.enque(out)

    def copy_out(self, start: int, rows: int):
        out = self.out_q.deque()
        data_copy_pad(self.out_gm[(self.row0 + start) * self.t.cols], out,
                      self.pad_params(rows, False))
        self.out_q.free_tensor(out)


def softmax_backward(grad_output, output, dim=-1, *, chip="atlas-a2", tiling=None,
                     mode="timed", numerics=True, trace=True, sanitize=True, jitter=None):
    """Run aclnnSoftmaxBackward on ``chip``: ``outputs["gradInput"]``, gradOutput's shape and
    dtype."""
    chip = resolve_chip(chip)
    dy, y, cols = check_softmax_backward(chip, grad_output, output, dim)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    out = run.gm.tensor("gradInput", dy.dtype, dy.size)
    if not dy.size:
        return run.result({"gradInput": (out, dy.shape)})
    rows = dy.size // cols
    t = softmax_grad_tiling(chip, rows, cols, dy.dtype.name, dy.dtype.itemsize, tiling)
    dy_gm = run.gm.tensor("gradOutput", dy.dtype, dy.size, dy.reshape(-1))
    y_gm = run.gm.tensor("output", y.dtype, y.size, y.reshape(-1))
    run.launch(SoftmaxGradKernel, block_dim=min(t.block_dim, ceil_div(rows, t.per_core)),
               name="SoftmaxGrad", args=dict(dy=dy_gm, y=y_gm, out=out, tiling=t))
    return run.result({"gradInput": (out, dy.shape)}, tiling=t)

