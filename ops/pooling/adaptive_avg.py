"""aclnnAdaptiveAvgPool2d with outputSize (1, 1): out[n, c] = mean of self[n, c, :, :].

aclnn runs it as Contiguous, then one ReduceMean over the last two axes (``DoReduceMean`` in
``aclnn_adaptive_avg_pool2d.cpp``), a TBE kernel. The kernel here reads self as ``rows`` = N x C
rows of ``row_len`` = H x W elements, splits the rows over the vector cores (the first
``big_core_num`` cores one row more), and per UB tile of ``tile_rows`` rows: one DataCopyPad in
(each row padded with zeros to 32 bytes in UB), Cast to fp32 (fp16, bf16), Muls by 1 / (H x W)
then the sum of each row, as TBE's reduce_mean does (scale first, then reduce), Cast back with
CAST_RINT, one DataCopyPad out. A row of at most 64 fp32 (one repeat) is summed by one
WholeReduceSum over all rows of the tile (mask = the row length, repeat stride = the padded
row); a longer row by one ReduceSum each. Double-buffered queues.

Not modelled: TBE's own reduce schedule (its choice of tiles and of the reduce instruction);
the summation order is npusim's halving tree (``isa/vector_reduce.py``).
"""

from dataclasses import dataclass

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
from npusim.errors import TilingError
from npusim.ops.common import ceil_div, override, overrides_of, resolve_chip, round_up
from npusim.ops.common.contiguous import to_gm
from npusim.ops.pooling.args import OP, check_adaptive_avg_pool2d

REPEAT_FP32 = 64       # fp32 lanes of one 256-byte repeat
MAX_REPEAT = 255       # repeat_times limit of one vector instruction
MAX_BLOCKS = 4095      # DataCopyPad block_count limit


@dataclass(frozen=True, kw_only=True)
class AdaptiveAvgPoolTiling:
    """Host tiling of the (1, 1) adaptive average pool. Users may override ``block_dim``,
    ``tile_rows`` and ``buffer_num``; the rest follows from the shape."""

    rows: int              # N x C: one output element each
    row_len: int           # H x W elements averaged per row
    row_stride: int        # elements a row takes in UB: row_len rounded up to 32 bytes
    block_dim: int         # vector cores used
    big_core_num: int      # the first cores, which take one row more
    rows_per_core: int     # rows of the other cores
    tile_rows: int         # rows per UB tile
    buffer_num: int        # 1 single, 2 double buffering


def ub_bytes_per_row(row_stride: int, item: int, buffer_num: int) -> int:
    """UB one row of a tile takes: its input buffers, its fp32 copy, its sum and its output."""
    return buffer_num * row_stride * item + 4 * row_stride + 4 + buffer_num * item


def max_tile_rows(chip, row_stride: int, item: int, buffer_num: int) -> int:
    per = ub_bytes_per_row(row_stride, item, buffer_num)
    rows = (chip.ub_bytes - 4 * 32) // per    # 32-byte rounding of the small buffers
    return min(rows, MAX_BLOCKS)


def adaptive_avg_pool_tiling(chip, rows: int, row_len: int, dtype, overrides=None):
    overrides = overrides_of(overrides, OP)
    item = np.dtype(dtype).itemsize
    stride = round_up(row_len * item, chip.block_bytes) // item
    cores = max(1, min(chip.vector_core_count, rows))
    fits = max_tile_rows(chip, stride, item, 2)
    t = AdaptiveAvgPoolTiling(rows=rows, row_len=row_len, row_stride=stride, block_dim=cores,
                              big_core_num=rows % cores, rows_per_core=rows // cores,
                              tile_rows=min(fits, ceil_div(rows, cores)), buffer_num=2)
    if not overrides:
        return t
    for key in sorted(set(overrides) - {"block_dim", "tile_rows", "buffer_num"}):
        raise TilingError(f"{OP}: tiling {key} follows from the shape; override block_dim, "
                          "tile_rows or buffer_num")
    t = override(t, overrides, OP)
    if t.buffer_num not in (1, 2):
        raise TilingError(f"{OP}: buffer_num = {t.buffer_num}: allowed 1 or 2")
    if not 1 <= t.block_dim <= min(chip.vector_core_count, rows):
        raise TilingError(f"{OP}: block_dim = {t.block_dim}: allowed 1 to "
                          f"{min(chip.vector_core_count, rows)} ({rows} rows, "
                          f"{chip.vector_core_count} vector cores)")
    fits = max_tile_rows(chip, stride, item, t.buffer_num)
    if not 1 <= t.tile_rows <= fits:
        raise TilingError(f"{OP}: tile_rows = {t.tile_rows}: allowed 1 to {fits} (rows of "
                          f"{row_len} elements, {ub_bytes_per_row(stride, item, t.buffer_num)} "
                          f"bytes of UB each; {chip.name} has {chip.ub_bytes})")
    return override(t, dict(big_core_num=rows % t.block_dim,
                            rows_per_core=rows // t.block_dim), OP)


class ReduceMeanKernel(Kernel):
    """One vector core's rows: tiles of rows in, one mean per row out."""

    def init(self, x, y, tiling: AdaptiveAvgPoolTiling):
        t, idx = tiling, get_block_idx()
        big = idx < t.big_core_num
        self.count = t.rows_per_core + (1 if big else 0)
        self.first = idx * t.rows_per_core + min(idx, t.big_core_num)
        self.x, self.y, self.t, self.dtype = x, y, t, x.dtype
        item = self.dtype.itemsize
        self.in_que = TQue(TPosition.VECIN, t.buffer_num, name="inQueueX")
        self.out_que = TQue(TPosition.VECOUT, t.buffer_num, name="outQueueY")
        self.pipe.init_buffer(self.in_que, t.buffer_num, t.tile_rows * t.row_stride * item)
        self.pipe.init_buffer(self.out_que, t.buffer_num, round_up(t.tile_rows * item, 32))
        self.calc = TBuf(TPosition.VECCALC, name="calcBuf")
        self.sums_at = t.tile_rows * t.row_stride * 4
        self.pipe.init_buffer(self.calc, self.sums_at + round_up(t.tile_rows * 4, 32))

    def process(self):
        n = self.t.tile_rows
        for start in range(0, self.count, n):
            rows = min(n, self.count - start)
            self.copy_in(self.first + start, rows)
            self.compute(rows)
            self.copy_out(self.first + start, rows)

    def copy_in(self, row: int, rows: int):
        t, local = self.t, self.in_que.alloc_tensor(self.dtype)
        data_copy_pad(local, self.x[row * t.row_len], DataCopyExtParams(
            block_count=rows, block_len=t.row_len * self.dtype.itemsize),
            DataCopyPadExtParams(is_pad=True, padding_value=0))
        self.in_que.enque(local)

    def compute(self, rows: int):
        t, x = self.t, self.in_que.deque()
        out = self.out_que.alloc_tensor(self.dtype)
        f = self.calc.get("float32")
        n = rows * t.row_stride
        if self.dtype.itemsize == 2:
            vec.cast(f, x, "none", n)
            vec.muls(f, f, 1.0 / t.row_len, n)
        else:
            vec.muls(f, x, 1.0 / t.row_len, n)
        sums = out if self.dtype.itemsize == 4 else f[self.sums_at // 4]
        self.row_sums(sums, f, rows)
        if self.dtype.itemsize == 2:
            vec.cast(out, sums, "rint", rows)
        self.out_que.enque(out)
        self.in_que.free_tensor(x)

    def row_sums(self, sums, f, rows: int):
        t = self.t
        if t.row_len > REPEAT_FP32:
            for r in range(rows):
                vec.reduce_sum(sums[r], f[r * t.row_stride], t.row_len)
            return
        for r0 in range(0, rows, MAX_REPEAT):
            k = min(MAX_REPEAT, rows - r0)
            vec.whole_reduce_sum(sums[r0], f[r0 * t.row_stride], repeat=vec.RepeatParams(
                mask=t.row_len, repeat_times=k, dst_rep_stride=1,
                src0_rep_stride=t.row_stride * 4 // 32))

    def copy_out(self, row: int, rows: int):
        out = self.out_que.deque()
        data_copy_pad(self.y[row], out, DataCopyExtParams(
            block_count=1, block_len=rows * self.dtype.itemsize))
        self.out_que.free_tensor(out)


def adaptive_avg_pool2d(self_, output_size, *, chip="atlas-a2", tiling=None, mode="timed",
                        numerics=True, trace=True, sanitize=True, jitter=None):
    """Run aclnnAdaptiveAvgPool2d on ``chip``; ``outputs["out"]`` is self's shape with H and
    W of 1 (output_size (1, 1) only)."""
    chip = resolve_chip(chip)
    x, rows = check_adaptive_avg_pool2d(chip, self_, output_size)
    out_shape = (*x.shape[:-2], 1, 1)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    y = run.gm.tensor("out", x.dtype, rows)
    if not rows:
        return run.result({"out": (y, out_shape)})
    t = adaptive_avg_pool_tiling(chip, rows, x.shape[-1] * x.shape[-2], x.dtype, tiling)
    x_gm = to_gm(run, "self", x)
    run.launch(ReduceMeanKernel, block_dim=t.block_dim, name="ReduceMean", impl="tbe",
               args=dict(x=x_gm, y=y, tiling=t))
    return run.result({"out": (y, out_shape)}, tiling=t)
