"""Vector intrinsics of the kernel DSL, named as in Ascend C (Add -> add, ReduceSum -> reduce_sum).

Each call builds one instruction of ``isa/vector*.py`` and issues it on the current core. Give
``count=`` for counter mode (the first count elements, contiguous) or ``repeat=RepeatParams(...)``
for the repeat form (mask, repeat_times, block and repeat strides), as Ascend C's two overload
families. Work buffers (ReduceSum's sharedTmpBuffer, Sort's tmp) are not taken: npusim does not
model them. Semantics, rounding and cost are documented in the instruction modules.
"""

from npusim.dsl.context import issue
from npusim.isa.vector import (
    Abs,
    Add,
    Adds,
    Div,
    Duplicate,
    Exp,
    Ln,
    Max,
    Maxs,
    Min,
    Mins,
    Mul,
    Muls,
    Reciprocal,
    Relu,
    RepeatParams,
    Sqrt,
    Sub,
)
from npusim.isa.vector_cast import Cast
from npusim.isa.vector_index import Compare, Gather, Select, Sort
from npusim.isa.vector_reduce import (
    BlockReduceMax,
    BlockReduceSum,
    ReduceMax,
    ReduceSum,
    WholeReduceSum,
)

__all__ = ["RepeatParams", "add", "sub", "mul", "div", "max", "min", "adds", "muls", "maxs",
           "mins", "exp", "ln", "abs", "reciprocal", "sqrt", "relu", "cast", "duplicate",
           "compare", "select", "reduce_sum", "reduce_max", "block_reduce_sum",
           "block_reduce_max", "whole_reduce_sum", "gather", "sort"]


def add(dst, src0, src1, count=None, *, repeat=None):
    return issue(Add(dst=dst, src0=src0, src1=src1, count=count, repeat=repeat))


def sub(dst, src0, src1, count=None, *, repeat=None):
    return issue(Sub(dst=dst, src0=src0, src1=src1, count=count, repeat=repeat))


def mul(dst, src0, src1, count=None, *, repeat=None):
    return issue(Mul(dst=dst, src0=src0, src1=src1, count=count, repeat=repeat))


def div(dst, src0, src1, count=None, *, repeat=None):
    return issue(Div(dst=dst, src0=src0, src1=src1, count=count, repeat=repeat))


def max(dst, src0, src1, count=None, *, repeat=None):  # noqa: A001 - Ascend C's Max
    return issue(Max(dst=dst, src0=src0, src1=src1, count=count, repeat=repeat))


def min(dst, src0, src1, count=None, *, repeat=None):  # noqa: A001 - Ascend C's Min
    return issue(Min(dst=dst, src0=src0, src1=src1, count=count, repeat=repeat))


def adds(dst, src, scalar, count=None, *, repeat=None):
    return issue(Adds(dst=dst, src=src, scalar=scalar, count=count, repeat=repeat))


def muls(dst, src, scalar, count=None, *, repeat=None):
    return issue(Muls(dst=dst, src=src, scalar=scalar, count=count, repeat=repeat))


def maxs(dst, src, scalar, count=None, *, repeat=None):
    return issue(Maxs(dst=dst, src=src, scalar=scalar, count=count, repeat=repeat))


def mins(dst, src, scalar, count=None, *, repeat=None):
    return issue(Mins(dst=dst, src=src, scalar=scalar, count=count, repeat=repeat))


def exp(dst, src, count=None, *, repeat=None):
    return issue(Exp(dst=dst, src=src, count=count, repeat=repeat))


def ln(dst, src, count=None, *, repeat=None):
    return issue(Ln(dst=dst, src=src, count=count, repeat=repeat))


def abs(dst, src, count=None, *, repeat=None):  # noqa: A001 - Ascend C's Abs
    return issue(Abs(dst=dst, src=src, count=count, repeat=repeat))


def reciprocal(dst, src, count=None, *, repeat=None):
    return issue(Reciprocal(dst=dst, src=src, count=count, repeat=repeat))


def sqrt(dst, src, count=None, *, repeat=None):
    return issue(Sqrt(dst=dst, src=src, count=count, repeat=repeat))


def relu(dst, src, count=None, *, repeat=None):
    return issue(Relu(dst=dst, src=src, count=count, repeat=repeat))


def cast(dst, src, round_mode="none", count=None, *, repeat=None):
    return issue(Cast(dst=dst, src=src, round_mode=round_mode, count=count, repeat=repeat))


def duplicate(dst, scalar, count=None, *, repeat=None):
    return issue(Duplicate(dst=dst, scalar=scalar, count=count, repeat=repeat))


def compare(dst, src0, src1, mode, count=None, *, repeat=None):
    return issue(Compare(dst=dst, src0=src0, src1=src1, mode=mode, count=count, repeat=repeat))


def select(dst, sel_mask, src0, src1, count=None, *, repeat=None):
    """src1 is a tensor (tensor-tensor mode) or a scalar (tensor-scalar mode)."""
    return issue(Select(dst=dst, sel_mask=sel_mask, src0=src0, src1=src1, count=count,
                        repeat=repeat))


def reduce_sum(dst, src, count=None, *, repeat=None):
    return issue(ReduceSum(dst=dst, src=src, count=count, repeat=repeat))


def reduce_max(dst, src, count=None, *, repeat=None, cal_index=False):
    return issue(ReduceMax(dst=dst, src=src, count=count, repeat=repeat, cal_index=cal_index))


def block_reduce_sum(dst, src, count=None, *, repeat=None):
    return issue(BlockReduceSum(dst=dst, src=src, count=count, repeat=repeat))


def block_reduce_max(dst, src, count=None, *, repeat=None):
    return issue(BlockReduceMax(dst=dst, src=src, count=count, repeat=repeat))


def whole_reduce_sum(dst, src, count=None, *, repeat=None):
    return issue(WholeReduceSum(dst=dst, src=src, count=count, repeat=repeat))


def gather(dst, src, offsets, base, count):
    """offsets: uint32 byte offsets into src; base: byte offset added to each (srcBaseAddr)."""
    return issue(Gather(dst=dst, src=src, offsets=offsets, base=base, count=count))


def sort(dst_values, dst_indices, src, count, descending=True):
    return issue(Sort(dst_values=dst_values, dst_indices=dst_indices, src=src, count=count,
                      descending=descending))
