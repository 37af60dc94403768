"""aclnnAdaptiveAvgPool2dBackward for gradOutput of H = W = 1 (the global pool's gradient):
out[n, c, h, w] = gradOutput[n, c] / (H x W).

aclnn runs (``DoAdapativeAvgPool2DBackward`` in ``aclnn_adaptive_avg_pool2d_backward.cpp``)
Contiguous of both inputs, ``Fill`` of a self-shaped tensor with 1 / (H x W) in self's dtype,
and ``Mul`` of that with gradOutput broadcast over H and W (the final Cast is to the same dtype
and launches nothing). Fill runs on the elementwise template (``ops/elementwise``). The Mul
kernel here splits the N x C rows over the vector cores; per UB tile of ``tile_rows`` rows it
copies the fill rows in (DataCopyPad: each row padded to 32 bytes in UB) and the rows'
gradOutput values, broadcasts each value to a 32-byte block (Brcb), multiplies each row by its
block (the repeat form, the block stride of the broadcast operand 0), and copies the rows out.
fp16 and fp32 compute as themselves.

Not modelled: TBE's own broadcast schedule for Mul, bf16 (the document lists it on A2).
"""

from dataclasses import dataclass

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
from npusim.dsl.broadcast import brcb
from npusim.engine.sequence import OpRun
from npusim.errors import TilingError
from npusim.ops.common import ceil_div, override, overrides_of, resolve_chip, round_up
from npusim.ops.common.contiguous import to_gm
from npusim.ops.elementwise.computes import Fill
from npusim.ops.elementwise.template import elementwise_tiling, launch_elementwise
from npusim.ops.pooling.args import BACKWARD, check_adaptive_avg_pool2d_backward

OP = BACKWARD
MAX_REPEAT = 255
MAX_BLOCKS = 4095
BRCB = 8   # elements Brcb takes per repeat


@dataclass(frozen=True, kw_only=True)
class AdaptiveAvgPoolGradTiling:
    """Host tiling of the broadcast Mul. Users may override ``block_dim``, ``tile_rows`` and
    ``buffer_num``; the rest follows from the shape."""

    rows: int              # N x C: one gradOutput value each
    row_len: int           # H x W elements of out per row
    row_stride: int        # elements a row takes in UB: row_len rounded up to 32 bytes
    block_dim: int         # vector cores used
    big_core_num: int      # the first cores, which take one row more
    rows_per_core: int     # rows of the other cores
    tile_rows: int         # rows per UB tile
    buffer_num: int        # 1 single, 2 double buffering


def ub_bytes_per_row(row_stride: int, item: int, buffer_num: int) -> int:
    """A row's fill and out buffers, its gradOutput value and its broadcast block."""
    return 2 * buffer_num * row_stride * item + buffer_num * item + 32


def max_tile_rows(chip, row_stride: int, item: int, buffer_num: int) -> int:
    rows = (chip.ub_bytes - 3 * 32 * buffer_num) // ub_bytes_per_row(row_stride, item,
                                                                      buffer_num)
    return min(rows // BRCB * BRCB, MAX_BLOCKS // BRCB * BRCB)


def grad_tiling(chip, rows: int, row_len: int, dtype, overrides=None):
    overrides = overrides_of(overrides, OP)
    item = np.dtype(dtype).itemsize
    stride = round_up(row_len * item, chip.block_bytes) // item
    cores = max(1, min(chip.vector_core_count, rows))
    fits = max_tile_rows(chip, stride, item, 2)
    if fits < 1:
        raise TilingError(f"{OP}: a row of {row_len} elements does not fit UB twice")
    t = AdaptiveAvgPoolGradTiling(rows=rows, row_len=row_len, row_stride=stride,
                                  block_dim=cores, big_core_num=rows % cores,
                                  rows_per_core=rows // cores, buffer_num=2,
                                  tile_rows=min(fits, round_up(ceil_div(rows, cores), BRCB)))
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
                          f"{min(chip.vector_core_count, rows)}")
    fits = max_tile_rows(chip, stride, item, t.buffer_num)
    if t.tile_rows <= 0 or t.tile_rows % BRCB or t.tile_rows > fits:
        raise TilingError(f"{OP}: tile_rows = {t.tile_rows}: a multiple of {BRCB} from {BRCB} "
                          f"to {fits} (rows of {row_len} elements on {chip.name})")
    return override(t, dict(big_core_num=rows % t.block_dim,
                            rows_per_core=rows // t.block_dim), OP)


class BroadcastMulKernel(Kernel):
    """out row r = fill row r x gradOutput[r], for one vector core's rows."""

    def init(self, fill, dy, out, tiling: AdaptiveAvgPoolGradTiling):
        t, idx = tiling, get_block_idx()
        self.count = t.rows_per_core + (1 if idx < t.big_core_num else 0)
        self.first = idx * t.rows_per_core + min(idx, t.big_core_num)
        self.fill, self.dy, self.out, self.t, self.dtype = fill, dy, out, t, out.dtype
        item = self.dtype.itemsize
        self.in_fill = TQue(TPosition.VECIN, t.buffer_num, name="inQueueFill")
        self.in_dy = TQue(TPosition.VECIN, t.buffer_num, name="inQueueGrad")
        self.out_que = TQue(TPosition.VECOUT, t.buffer_num, name="outQueue")
        self.pipe.init_buffer(self.in_fill, t.buffer_num, t.tile_rows * t.row_stride * item)
        self.pipe.init_buffer(self.in_dy, t.buffer_num, round_up(t.tile_rows * item, 32))
        self.pipe.init_buffer(self.out_que, t.buffer_num, t.tile_rows * t.row_stride * item)
        self.blocks = TBuf(TPosition.VECCALC, name="brcbBuf")
        self.pipe.init_buffer(self.blocks, t.tile_rows * 32)

    def process(self):
        n = self.t.tile_rows
        for start in range(0, self.count, n):
            rows = min(n, self.count - start)
            self.copy_in(self.first + start, rows)
            self.compute(rows)
            self.copy_out(self.first + start, rows)

    def copy_in(self, row: int, rows: int):
        t, item = self.t, self.dtype.itemsize
        fill, dy = self.in_fill.alloc_tensor(self.dtype), self.in_dy.alloc_tensor(self.dtype)
        data_copy_pad(fill, self.fill[row * t.row_len], DataCopyExtParams(
            block_count=rows, block_len=t.row_len * item))
        data_copy_pad(dy, self.dy[row], DataCopyExtParams(block_count=1, block_len=rows * item))
        self.in_fill.enque(fill)
        self.in_dy.enque(dy)

    def compute(self, rows: int):
        fill, dy = self.in_fill.deque(), self.in_dy.deque()
        out = self.out_que.alloc_tensor(self.dtype)
        blocks = self.blocks.get(self.dtype)
        brcb(blocks, dy, ceil_div(rows, BRCB))
        self.mul_rows(out, fill, blocks, rows)
        self.out_que.enque(out)
        self.in_fill.free_tensor(fill)
        self.in_dy.free_tensor(dy)

    def mul_rows(self, out, fill, blocks, rows: int):
        """Each row times its broadcast block: one repeat per row when a row fits a repeat,
        else the row's whole repeats and its tail."""
        s, per_block = self.t.row_stride, 32 // self.dtype.itemsize
        lanes, row_blocks = 8 * per_block, s // per_block
        if s <= lanes:
            for r0 in range(0, rows, MAX_REPEAT):
                k = min(MAX_REPEAT, rows - r0)
                vec.mul(out[r0 * s], fill[r0 * s], blocks[r0 * per_block], repeat=(
                    vec.RepeatParams(mask=s, repeat_times=k, dst_rep_stride=row_blocks,
                                     src0_rep_stride=row_blocks, src1_blk_stride=0,
                                     src1_rep_stride=1)))
            return
        for r in range(rows):
            for lo in range(0, s, lanes * MAX_REPEAT):
                n = min(lanes * MAX_REPEAT, s - lo)
                full, tail = divmod(n, lanes)
                for start, mask, times in ((lo, lanes, full), (lo + full * lanes, tail, 1)):
                    if times and mask:
                        vec.mul(out[r * s + start], fill[r * s + start],
                                blocks[r * per_block], repeat=vec.RepeatParams(
                                    mask=mask, repeat_times=times, src1_blk_stride=0,
                                    src1_rep_stride=0))

    def copy_out(self, row: int, rows: int):
        t, out = self.t, self.out_que.deque()
        data_copy_pad(self.out[row * t.row_len], out, DataCopyExtParams(
            block_count=rows, block_len=t.row_len * self.dtype.itemsize))
        self.out_que.free_tensor(out)


def adaptive_avg_pool2d_backward(grad_output, self_, *, chip="atlas-a2", tiling=None,
                                 mode="timed", numerics=True, trace=True, sanitize=True,
                                 jitter=None):
    """Run aclnnAdaptiveAvgPool2dBackward on ``chip`` for gradOutput of H = W = 1;
    ``outputs["out"]`` has self's shape."""
    chip = resolve_chip(chip)
    dy, x, rows = check_adaptive_avg_pool2d_backward(chip, grad_output, self_)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    out = run.gm.tensor("out", x.dtype, x.size)
    if not x.size:
        return run.result({"out": (out, x.shape)})
    row_len = x.shape[-1] * x.shape[-2]
    t = grad_tiling(chip, rows, row_len, x.dtype, tiling)
    dy_gm = to_gm(run, "gradOutput", dy)
    to_gm(run, "self", x)                     # aclnn makes self contiguous (its shape is used)
    fill = run.gm.tensor("fill", x.dtype, x.size)
    compute = Fill(value=1.0 / row_len)
    launch_elementwise(run, compute, (), fill, elementwise_tiling(chip, OP, compute, x.size,
                                                                   x.dtype))
    run.launch(BroadcastMulKernel, block_dim=t.block_dim, name="Mul", impl="tbe",
               args=dict(fill=fill, dy=dy_gm, out=out, tiling=t))
    return run.result({"out": (out, x.shape)}, tiling=t, workspace_bytes=x.nbytes)
