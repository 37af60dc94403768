"""Ascend C's TransDataTo5HD (the vnchwconv instruction); see ``isa/vector_transpose.py``."""

from npusim.dsl.context import issue, issue_same, tensor_key
from npusim.isa.vector_transpose import TransDataTo5HD


def trans_data_to_5hd(dst_list, src_list, repeat_times: int = 1, dst_rep_stride: int = 0,
                      src_rep_stride: int = 0) -> None:
    """dst block j = column j of the 16 x 16 matrix whose row i is src block i, per repeat;
    the strides are in 32-byte blocks."""
    issue(TransDataTo5HD(dst=tuple(dst_list), src=tuple(src_list),
                         repeat_times=int(repeat_times), dst_rep_stride=int(dst_rep_stride),
                         src_rep_stride=int(src_rep_stride)))


def trans_data_to_5hd_at(dst, dst_offsets: tuple, src, src_offsets: tuple,
                         repeat_times: int = 1, dst_rep_stride: int = 0,
                         src_rep_stride: int = 0) -> None:
    """``trans_data_to_5hd([dst[o] for o in dst_offsets], [src[o] for o in src_offsets],
    ...)``; the same instruction issued again on this core (same tensors, offsets and
    strides, by value) is not built and checked again (``issue_same``)."""
    key = ("trans_data_to_5hd", tensor_key(dst), dst_offsets, tensor_key(src), src_offsets,
           int(repeat_times), int(dst_rep_stride), int(src_rep_stride))
    issue_same(key, lambda: TransDataTo5HD(
        dst=tuple(dst[o] for o in dst_offsets), src=tuple(src[o] for o in src_offsets),
        repeat_times=int(repeat_times), dst_rep_stride=int(dst_rep_stride),
        src_rep_stride=int(src_rep_stride)))
