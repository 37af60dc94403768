"""What an elementwise kernel's host and cores share: the split of a flat tensor over the cores
in whole 32-byte blocks (the first ``big_core_num`` cores one block more), each core's slice of
it, and the copy that moves whole blocks and pads the byte-exact tail of the last core.
SiluGrad (``ops/silu/``) and the elementwise template (``ops/elementwise/``) run on them."""

from npusim.dsl import DataCopyExtParams, data_copy, data_copy_pad
from npusim.ops.common import ceil_div


def split_blocks(total: int, itemsize: int, block_dim: int, block_bytes: int) -> dict:
    """block_dim, big_core_num, big_core_length, small_core_length (elements) for ``total``
    elements over ``block_dim`` cores, in whole blocks of ``block_bytes``."""
    blocks = ceil_div(total * itemsize, block_bytes)
    per_block = block_bytes // itemsize
    small, big_num = divmod(blocks, block_dim)
    return dict(block_dim=block_dim, big_core_num=big_num,
                big_core_length=(small + 1) * per_block if big_num else small * per_block,
                small_core_length=small * per_block)


def core_slice(tiling, idx: int) -> tuple[int, int]:
    """(first element, elements) of core ``idx`` under a tiling with the fields above and
    ``total_length``; the last core's slice stops at the tensor's end."""
    t = tiling
    if idx < t.big_core_num:
        start, length = idx * t.big_core_length, t.big_core_length
    else:
        length = t.small_core_length
        start = t.big_core_num * t.big_core_length + (idx - t.big_core_num) * length
    return start, min(length, t.total_length - start)


def copy_exact(dst, src, count: int):
    """DataCopy whole 32-byte blocks; DataCopyPad the byte-exact tail of the last core."""
    nbytes = count * src.dtype.itemsize
    if nbytes % 32 == 0:
        data_copy(dst, src, count)
    else:
        data_copy_pad(dst, src, DataCopyExtParams(block_count=1, block_len=nbytes))
