"""A Mul or Sub by one fp32 value broadcast over a 32-byte block (src1 block and repeat strides 0).

CANN's kernels read a per-row value (a row's rstd, CrossEntropyLossGrad's scale) into a scalar
register and issue Muls; npusim binds scalar operands when a kernel is recorded, so the value
is broadcast over a block (Brcb) and multiplied (or subtracted) from there. RmsNorm, RmsNormGrad,
the cross-entropy and NLL kernels and LogSoftmax use it."""

from npusim.dsl import vector as vec
from npusim.isa.vector import RepeatParams

FP32_PER_REPEAT = 64      # fp32 elements in one 256-byte vector repeat
MAX_REPEATS = 255         # repeat_times of one vector instruction (8-bit field)


def mul_by_block(dst, src, block, count: int) -> None:
    """dst = src x (the fp32 value broadcast in ``block``): Mul with src1 block stride 0."""
    _by_block(vec.mul, dst, src, block, count)


def sub_by_block(dst, src, block, count: int) -> None:
    """dst = src - (the fp32 value broadcast in ``block``): Sub with src1 block stride 0."""
    _by_block(vec.sub, dst, src, block, count)


def _by_block(op, dst, src, block, count: int) -> None:
    full, rest = divmod(count, FP32_PER_REPEAT)
    done = 0
    while done < full:
        n = min(MAX_REPEATS, full - done)
        at = done * FP32_PER_REPEAT
        op(dst[at], src[at], block, repeat=RepeatParams(
            mask=FP32_PER_REPEAT, repeat_times=n, src1_blk_stride=0, src1_rep_stride=0))
        done += n
    if rest:
        at = full * FP32_PER_REPEAT
        op(dst[at], src[at], block, repeat=RepeatParams(
            mask=rest, repeat_times=1, src1_blk_stride=0, src1_rep_stride=0))
