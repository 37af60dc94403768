"""What the SwiGlu kernels share: a core's units as tiles, and the strided row copies."""

from npusim.dsl import DataCopyExtParams, data_copy_pad, get_block_idx
from npusim.ops.common import round_up
from npusim.ops.swiglu.tiling import SwiGluTiling


def core_units(t: SwiGluTiling) -> tuple:
    """(first unit, units) of this core: the front/tail split."""
    idx = get_block_idx()
    if idx < t.front_core_num:
        return idx * t.front_units, t.front_units
    return t.front_core_num * t.front_units + (idx - t.front_core_num) * t.tail_units, \
        t.tail_units


def tiles(t: SwiGluTiling, first: int, count: int):
    """(row, column, rows, length) of each tile: whole halves of ``tile_rows`` rows, or one
    chunk of one row."""
    if t.chunks == 1:
        for u in range(first, first + count, t.tile_rows):
            yield u, 0, min(t.tile_rows, first + count - u), t.half
        return
    for u in range(first, first + count):
        row, c = divmod(u, t.chunks)
        col = c * t.col_chunk
        yield row, col, 1, min(t.col_chunk, t.half - col)


def padded(length: int, item: int) -> int:
    """Elements a row of ``length`` takes in UB (DataCopyPad pads each block to 32 bytes)."""
    return round_up(length * item, 32) // item


def rows_in(local, gm, rows: int, length: int, gap: int) -> None:
    """``rows`` rows of ``length`` elements, ``gap`` elements apart in GM, into UB rows padded
    to 32 bytes (DataCopyPad, one block per row)."""
    item = local.dtype.itemsize
    data_copy_pad(local, gm, DataCopyExtParams(block_count=rows, block_len=length * item,
                                               src_stride=gap * item))


def rows_out(gm, local, rows: int, length: int, gap: int) -> None:
    """The reverse of ``rows_in``: padded UB rows to GM rows ``gap`` elements apart."""
    item = local.dtype.itemsize
    data_copy_pad(gm, local, DataCopyExtParams(block_count=rows, block_len=length * item,
                                               dst_stride=gap * item))
