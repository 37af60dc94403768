"""The aclnn argument rules of aclnnForeachAddListV2 and aclnnForeachMulScalarV2.

From their documents (hicann/ops-nn ``foreach/foreach_add_list/docs/aclnnForeachAddListV2.md``,
``foreach/foreach_mul_scalar/docs/aclnnForeachMulScalarV2.md``) and the A2 host tiling
(``foreach/foreach_utils/op_host/foreach_tiling_class.h``): Atlas A2 and A3 only (the Atlas
training series is "not supported"; there torch_npu runs the per-tensor aclnnAdd / aclnnMuls,
``op_plugin/ops/opapi/ForeachAddKernelNpuOpApi.cpp``). A missing list or scalar is 161001; an
empty list, an empty tensor, more than 256 tensors (MAX_TENSOR_CONT), lists of different lengths,
a tensor of another dtype or shape than its partner, more than 8 dimensions, or a dtype outside
the list is 161002. npusim models the floating dtypes (fp32, fp16, bf16); the documents' INT32,
INT16, INT8 and UINT8 are refused with a ParamError that says they are not modelled.
"""

import numbers

import numpy as np

from npusim.dtypes import name_of
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, ParamError
from npusim.ops.common import as_array, check_modelled_product

ADD_LIST = "aclnnForeachAddListV2"
MUL_SCALAR = "aclnnForeachMulScalarV2"
PRODUCTS = ("atlas-a2",)
FLOATS = ("bfloat16", "float16", "float32")
NOT_MODELLED = "int32, int16, int8, uint8"
MAX_TENSORS = 256        # MAX_TENSOR_CONT of the A2 tiling data
MAX_DIMS = 8


def _invalid(op: str, message: str) -> ParamError:
    return ParamError(f"{op}: {message}", code=ACLNN_ERR_PARAM_INVALID)


def check_scalar(op: str, name: str, value) -> float:
    """A host aclScalar: None is a null pointer (161001); else a real number."""
    if value is None:
        raise ParamError(f"{op}: {name} is None (a null pointer); a scalar is required",
                         code=ACLNN_ERR_PARAM_NULLPTR)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise _invalid(op, f"{name} = {value!r}: a real number is required")
    return float(value)


def check_list(op: str, name: str, tensors) -> list:
    """A tensor list: not None, a list or tuple of 1 to 256 non-empty arrays of <= 8 dims."""
    if tensors is None:
        raise ParamError(f"{op}: {name} is None (a null pointer); a tensor list is required",
                         code=ACLNN_ERR_PARAM_NULLPTR)
    if not isinstance(tensors, list | tuple):
        raise _invalid(op, f"{name} is a {type(tensors).__name__}; a list of tensors is "
                           "required")
    if not 1 <= len(tensors) <= MAX_TENSORS:
        raise _invalid(op, f"{name} holds {len(tensors)} tensors; allowed 1 to {MAX_TENSORS}")
    arrays = []
    for i, t in enumerate(tensors):
        if t is None:
            raise ParamError(f"{op}: {name}[{i}] is None (a null pointer)",
                             code=ACLNN_ERR_PARAM_NULLPTR)
        a = as_array(op, f"{name}[{i}]", t)
        if a.size == 0:
            raise _invalid(op, f"{name}[{i}] has shape {tuple(a.shape)}: empty tensors are "
                               "not supported")
        if a.ndim > MAX_DIMS:
            raise _invalid(op, f"{name}[{i}] has {a.ndim} dimensions; at most {MAX_DIMS}")
        arrays.append(a)
    return arrays


def check_dtypes(op: str, chip, lists: dict) -> None:
    """One floating dtype for every tensor of every list."""
    first = None
    for name, arrays in lists.items():
        for i, a in enumerate(arrays):
            got = name_of(a.dtype)
            if got not in FLOATS:
                raise _invalid(op, f"{name}[{i}] dtype {got} is not supported on {chip.name}; "
                                   f"allowed: {', '.join(FLOATS)} (the document's "
                                   f"{NOT_MODELLED} are not modelled by npusim)")
            first = first or (name, i, got)
            if got != first[2]:
                raise _invalid(op, f"every tensor must have one dtype: {first[0]}[{first[1]}] "
                                   f"is {first[2]}, {name}[{i}] is {got}")


def check_product(op: str, chip) -> None:
    """161002 off Atlas A2, saying what torch_npu runs on the Atlas training series instead."""
    try:
        check_modelled_product(op, chip, PRODUCTS)
    except ParamError as exc:
        hint = ("; there torch_npu runs aclnnAdd and aclnnMuls per tensor (npusim.ops.add, "
                "npusim.ops.muls)" if chip.product == "atlas-training" else "")
        raise ParamError(f"{exc}{hint}", code=exc.code) from None


def check_foreach_add_list(chip, x1, x2, alpha):
    """Returns (x1 arrays, x2 arrays, alpha as a float)."""
    a, b = check_list(ADD_LIST, "x1", x1), check_list(ADD_LIST, "x2", x2)
    value = check_scalar(ADD_LIST, "alpha", alpha)
    check_product(ADD_LIST, chip)
    if len(a) != len(b):
        raise _invalid(ADD_LIST, f"x1 holds {len(a)} tensors and x2 {len(b)}; they must hold "
                                 "as many")
    check_dtypes(ADD_LIST, chip, {"x1": a, "x2": b})
    for i, (p, q) in enumerate(zip(a, b, strict=True)):
        if p.shape != q.shape:
            raise _invalid(ADD_LIST, f"x1[{i}] has shape {tuple(p.shape)} and x2[{i}] "
                                     f"{tuple(q.shape)}; they must be equal")
    return a, b, value


def check_foreach_mul_scalar(chip, x, scalar):
    """Returns (x arrays, scalar as a float)."""
    a = check_list(MUL_SCALAR, "x", x)
    value = check_scalar(MUL_SCALAR, "scalar", scalar)
    check_product(MUL_SCALAR, chip)
    check_dtypes(MUL_SCALAR, chip, {"x": a})
    return a, value
