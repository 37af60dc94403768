"""Vector intrinsics of the kernel DSL, named as in Ascend C (Add -> add, ReduceSum -> reduce_sum).

Each call builds one instruction of ``isa/vector*.py`` and issues it on the current core. Give
``count=`` for counter mode (the first count elements, contiguous) or ``repeat=RepeatParams(...)``
for the repeat form (mask, repeat_times, block and repeat strides), as Ascend C's two overload
families. Work buffers (ReduceSum's sharedTmpBuffer, Sort's tmp) are not taken: npusim does not
model them. Semantics, rounding and cost are documented in the instruction modules.

The element-wise calls in counter mode go through ``issue_keyed`` (``npusim/dsl/context.py``):
a tile loop issues the same instruction on the same buffers again and again, and each core
builds and checks it once. The key is every field by value and type (tensors by store, address,
dtype, size, limit and label; floats by sign too), so a re-issued object is the one the call
would have built.
"""

from npusim.dsl.context import issue, issue_keyed
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


def _same(cls, repeat, tensors: tuple, values: tuple, build):
    """Counter mode: ``issue_keyed``; the repeat form: build and issue."""
    if repeat is not None:
        return issue(build())
    return issue_keyed(cls, tensors, values, build)


def _binary(cls, dst, src0, src1, count, repeat):
    return _same(cls, repeat, (dst, src0, src1), (count,),
                 lambda: cls(dst=dst, src0=src0, src1=src1, count=count, repeat=repeat))


def _tensor_scalar(cls, dst, src, scalar, count, repeat):
    return _same(cls, repeat, (dst, src), (count, scalar),
                 lambda: cls(dst=dst, src=src, scalar=scalar, count=count, repeat=repeat))


def _unary(cls, dst, src, count, repeat):
    return _same(cls, repeat, (dst, src), (count,),
                 lambda: cls(dst=dst, src=src, count=count, repeat=repeat))


def add(dst, src0, src1, count=None, *, repeat=None):
    """V: dst = src0 + src1, element-wise, rounded to dst's dtype."""
    return _binary(Add, dst, src0, src1, count, repeat)


def sub(dst, src0, src1, count=None, *, repeat=None):
    """V: dst = src0 - src1, element-wise, rounded to dst's dtype."""
    return _binary(Sub, dst, src0, src1, count, repeat)


def mul(dst, src0, src1, count=None, *, repeat=None):
    """V: dst = src0 * src1, element-wise, rounded to dst's dtype."""
    return _binary(Mul, dst, src0, src1, count, repeat)


def div(dst, src0, src1, count=None, *, repeat=None):
    """V: dst = src0 / src1, element-wise, rounded to dst's dtype."""
    return _binary(Div, dst, src0, src1, count, repeat)


def max(dst, src0, src1, count=None, *, repeat=None):  # noqa: A001 - Ascend C's Max
    return _binary(Max, dst, src0, src1, count, repeat)


def min(dst, src0, src1, count=None, *, repeat=None):  # noqa: A001 - Ascend C's Min
    return _binary(Min, dst, src0, src1, count, repeat)


def adds(dst, src, scalar, count=None, *, repeat=None):
    """V: dst = src + scalar, element-wise, rounded to dst's dtype."""
    """V: dst = min(src0, src1), element-wise."""
    """V: dst = max(src0, src1), element-wise."""
    return _tensor_scalar(Adds, dst, src, scalar, count, repeat)


def muls(dst, src, scalar, count=None, *, repeat=None):
    """V: dst = src * scalar, element-wise, rounded to dst's dtype."""
    return _tensor_scalar(Muls, dst, src, scalar, count, repeat)


def maxs(dst, src, scalar, count=None, *, repeat=None):
    """V: dst = max(src, scalar), element-wise."""
    return _tensor_scalar(Maxs, dst, src, scalar, count, repeat)


def mins(dst, src, scalar, count=None, *, repeat=None):
    """V: dst = min(src, scalar), element-wise."""
    return _tensor_scalar(Mins, dst, src, scalar, count, repeat)


def exp(dst, src, count=None, *, repeat=None):
    """V: dst = exp(src), element-wise, rounded to dst's dtype."""
    return _unary(Exp, dst, src, count, repeat)


def ln(dst, src, count=None, *, repeat=None):
    """V: dst = ln(src), element-wise, rounded to dst's dtype."""
    return _unary(Ln, dst, src, count, repeat)


def abs(dst, src, count=None, *, repeat=None):  # noqa: A001 - Ascend C's Abs
    return _unary(Abs, dst, src, count, repeat)


def reciprocal(dst, src, count=None, *, repeat=None):
    """V: dst = 1 / src, element-wise, rounded to dst's dtype."""
    """V: dst = |src|, element-wise."""
    return _unary(Reciprocal, dst, src, count, repeat)


def sqrt(dst, src, count=None, *, repeat=None):
    """V: dst = sqrt(src), element-wise, rounded to dst's dtype."""
    return _unary(Sqrt, dst, src, count, repeat)


def relu(dst, src, count=None, *, repeat=None):
    """V: dst = max(src, 0), element-wise."""
    return _unary(Relu, dst, src, count, repeat)


def cast(dst, src, round_mode="none", count=None, *, repeat=None):
    """V: dst = src converted to dst's dtype with ``round_mode`` ("none", "rint", ...)."""
    return _same(Cast, repeat, (dst, src), (count, round_mode),
                 lambda: Cast(dst=dst, src=src, round_mode=round_mode, count=count,
                              repeat=repeat))


def duplicate(dst, scalar, count=None, *, repeat=None):
    """V: fill dst with ``scalar``."""
    return _same(Duplicate, repeat, (dst,), (count, scalar),
                 lambda: Duplicate(dst=dst, scalar=scalar, count=count, repeat=repeat))


def compare(dst, src0, src1, mode, count=None, *, repeat=None):
    """V: dst = the bit mask of ``src0 <mode> src1`` (mode "lt", "gt", "eq", ...)."""
    return issue(Compare(dst=dst, src0=src0, src1=src1, mode=mode, count=count, repeat=repeat))


def select(dst, sel_mask, src0, src1, count=None, *, repeat=None):
    """src1 is a tensor (tensor-tensor mode) or a scalar (tensor-scalar mode)."""
    return issue(Select(dst=dst, sel_mask=sel_mask, src0=src0, src1=src1, count=count,
                        repeat=repeat))


def reduce_sum(dst, src, count=None, *, repeat=None):
    """V: dst[0] = the sum of src's elements."""
    return issue(ReduceSum(dst=dst, src=src, count=count, repeat=repeat))


def reduce_max(dst, src, count=None, *, repeat=None, cal_index=False):
    """V: dst[0] = the largest of src's elements (and its index with ``cal_index``)."""
    return issue(ReduceMax(dst=dst, src=src, count=count, repeat=repeat, cal_index=cal_index))


def block_reduce_sum(dst, src, count=None, *, repeat=None):
    """V: the sum of each 32-byte block of src, one value per block."""
    return issue(BlockReduceSum(dst=dst, src=src, count=count, repeat=repeat))


def block_reduce_max(dst, src, count=None, *, repeat=None):
    """V: the largest value of each 32-byte block of src, one per block."""
    return issue(BlockReduceMax(dst=dst, src=src, count=count, repeat=repeat))


def whole_reduce_sum(dst, src, count=None, *, repeat=None):
    """V: the sum of each repeat (256 bytes) of src, one value per repeat."""
    return issue(WholeReduceSum(dst=dst, src=src, count=count, repeat=repeat))


def gather(dst, src, offsets, base, count):
    """offsets: uint32 byte offsets into src; base: byte offset added to each (srcBaseAddr)."""
    return issue(Gather(dst=dst, src=src, offsets=offsets, base=base, count=count))


def sort(dst_values, dst_indices, src, count, descending=True):
    """Sort32 + MrgSort: descending only (see ``isa/vector_index.py``)."""
    return issue(Sort(dst_values=dst_values, dst_indices=dst_indices, src=src, count=count,
                      descending=descending))


def sort_ascending(dst_values, dst_indices, src, count):
    """A stable ascending sort as Ascend C kernels write it: the keys negated in place (Muls by
    -1), the descending Sort, the sorted values negated back; ``src`` holds the negated keys
    afterwards. Stable: equal keys keep their order, as in the descending sort of -x."""
    muls(src, src, -1.0, count)
    sort(dst_values, dst_indices, src, count)
    muls(dst_values, dst_values, -1.0, count)
