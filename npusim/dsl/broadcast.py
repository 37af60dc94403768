"""Brcb, the vector broadcast of 8 elements over 8 blocks (see ``isa/vector_brcb.py``)."""

from npusim.dsl.context import issue
from npusim.isa.vector_brcb import Brcb


def brcb(dst, src, repeat_times: int, dst_blk_stride: int = 1, dst_rep_stride: int = 8):
    """Ascend C Brcb: block j of repeat r of dst holds copies of src[8 r + j]."""
    return issue(Brcb(dst=dst, src=src, repeat_times=int(repeat_times),
                      dst_blk_stride=dst_blk_stride, dst_rep_stride=dst_rep_stride))
