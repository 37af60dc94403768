"""Row-wise helpers of the vector kernels that treat a UB tile as rows of fp32 values, each
row a whole number of 64-lane repeats wide (flash attention's online softmax, the softmax
gradient): a per-row value broadcast along the row, a row's reduction, a tail mask."""

from npusim.isa.vector import RepeatParams

LANES = 64          # fp32 elements of one 256-byte vector repeat


def by_row(op, dst, src, rowb, rows: int, width: int) -> None:
    """dst[r, :] = src[r, :] <op> rowb[r] for ``rows`` rows ``width`` fp32 wide (``rowb`` the
    Brcb'd row values, one 32-byte block a row: src1 block stride 0, repeat stride 1)."""
    for c0 in range(0, width, LANES):
        op(dst[c0], src[c0], rowb, repeat=RepeatParams(
            mask=min(LANES, width - c0), repeat_times=rows, dst_rep_stride=width // 8,
            src0_rep_stride=width // 8, src1_blk_stride=0, src1_rep_stride=1))


def row_reduce(fold, block_op, dst, src, tmp, red8, rows: int, width: int) -> None:
    """dst[r] = the reduction of src's row r (``width`` a multiple of 64): the 64-wide chunks
    folded into ``tmp`` element by element, then each row's 64 values block by block, then
    the row's 8 block results."""
    stride, first = width // 8, src
    if width > LANES:
        fold(tmp, src, src[LANES], repeat=RepeatParams(
            mask=LANES, repeat_times=rows, src0_rep_stride=stride, src1_rep_stride=stride))
        for c0 in range(2 * LANES, width, LANES):
            fold(tmp, tmp, src[c0], repeat=RepeatParams(
                mask=LANES, repeat_times=rows, src1_rep_stride=stride))
        stride, first = 8, tmp
    block_op(red8, first, repeat=RepeatParams(mask=LANES, repeat_times=rows, dst_rep_stride=1,
                                              src0_rep_stride=stride))
    block_op(dst, red8, rows * 8)


def tail_mask(first: int) -> tuple:
    """The (high, low) mask of lanes ``first`` .. 63 of a 64-lane fp32 repeat."""
    return (0, ((1 << LANES) - 1) & ~((1 << first) - 1))
