"""What the two RmsNorm kernels share: row copies and the multiply by a per-row value."""

from npusim.dsl import DataCopyExtParams, data_copy, data_copy_pad
from npusim.dsl import vector as vec
from npusim.isa.vector import RepeatParams

FP32_PER_REPEAT = 64      # fp32 elements in one 256-byte vector repeat
MAX_REPEATS = 255         # repeat_times of one vector instruction (8-bit field)


def copy_row(dst, src, count: int) -> None:
    """DataCopy whole 32-byte blocks; DataCopyPad a row that is not (DataCopyCustom on A2)."""
    nbytes = count * src.dtype.itemsize
    if nbytes % 32 == 0:
        data_copy(dst, src, count)
    else:
        data_copy_pad(dst, src, DataCopyExtParams(block_count=1, block_len=nbytes))


def mul_by_block(dst, src, block, count: int) -> None:
    """dst = src x (the fp32 value broadcast in ``block``): Mul with src1 block stride 0.

    CANN reads the per-row value into a scalar register and issues Muls; npusim binds scalar
    operands when a kernel is recorded, so the value is broadcast over a block (Brcb) instead."""
    full, rest = divmod(count, FP32_PER_REPEAT)
    done = 0
    while done < full:
        n = min(MAX_REPEATS, full - done)
        at = done * FP32_PER_REPEAT
        vec.mul(dst[at], src[at], block, repeat=RepeatParams(
            mask=FP32_PER_REPEAT, repeat_times=n, src1_blk_stride=0, src1_rep_stride=0))
        done += n
    if rest:
        at = full * FP32_PER_REPEAT
        vec.mul(dst[at], src[at], block, repeat=RepeatParams(
            mask=rest, repeat_times=1, src1_blk_stride=0, src1_rep_stride=0))
