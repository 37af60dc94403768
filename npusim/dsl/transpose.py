"""Ascend C's TransDataTo5HD (the vnchwconv instruction); see ``isa/vector_transpose.py``."""

from npusim.dsl.context import issue
from npusim.isa.vector_transpose import TransDataTo5HD


def trans_data_to_5hd(dst_list, src_list, repeat_times: int = 1, dst_rep_stride: int = 0,
                      src_rep_stride: int = 0) -> None:
    """dst block j = column j of the 16 x 16 matrix whose row i is src block i, per repeat;
    the strides are in 32-byte blocks."""
    issue(TransDataTo5HD(dst=tuple(dst_list), src=tuple(src_list),
                         repeat_times=int(repeat_times), dst_rep_stride=int(dst_rep_stride),
                         src_rep_stride=int(src_rep_stride)))
