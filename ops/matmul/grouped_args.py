"""The argument rules of aclnnGroupedMatmul for one x, one weight and one y (the "single
tensor" form, splitItem 2/3), from its document (hicann/ops-transformer
``gmm/grouped_matmul/docs/aclnnGroupedMatmulV4.md``: 产品支持情况, 约束说明, groupType支持场景).

Documented: Atlas A2 (and A3) and the Atlas inference series run it; the Atlas training series
does not. Non-quantised x and weight FLOAT16, BFLOAT16 or FLOAT32, the same; groupList INT64,
1-D, at most 1024 groups; groupListType 0: non-negative and non-decreasing (the cumulative
sizes). groupType 0 (groups of M): x 2-D [M, K] not transposed, weight 3-D [E, K, N] (or
transposed: a [E, N, K] tensor's last two dimensions swapped), groupList's last value at most
M; groupType 2 (groups of K, the weight gradient): x [M, K] transposed (stored [K, M]), weight
2-D [K, N] not transposed, groupList's last value at most K, y [E, M, N]. The last dimension of
x and of the weight as stored below 65536. A missing tensor is 161001, every other violation
161002.

What npusim models (the rest is refused, 161002, saying it is not modelled): Atlas A2 (the
CATLASS-shaped kernel's FixPipe), FLOAT16 and BFLOAT16, groupListType 0, groupType 0 and 2,
no bias, no activation.
"""

import numbers

import numpy as np

from npusim.dtypes import name_of
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ParamError
from npusim.ops.common import as_array, check_modelled_product, require

OP = "aclnnGroupedMatmul"
DOCUMENTED = ("float16", "bfloat16", "float32")
MODELLED = ("float16", "bfloat16")
GROUP_TYPES = {0: "groups of M (x split by rows)", 2: "groups of K (the weight gradient)"}
MAX_GROUPS = 1024
MAX_LAST_DIM = 65536


def _bad(text: str) -> ParamError:
    return ParamError(f"{OP}: {text}", code=ACLNN_ERR_PARAM_INVALID)


def _is_transposed(arr: np.ndarray) -> bool:
    """The last two dimensions of a C-contiguous tensor swapped (aclnn's "transposed")."""
    return arr.ndim >= 2 and not arr.flags.c_contiguous and np.swapaxes(arr, -1,
                                                                        -2).flags.c_contiguous


def check_group_type(value) -> int:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral) \
            or int(value) not in (-1, 0, 2):
        raise _bad(f"group_type = {value!r}; allowed: -1 (no groups), 0 (groups of M), "
                   "2 (groups of K)")
    if int(value) == -1:
        raise _bad("group_type = -1 (no groups: x, weight and y as lists of tensors) is not "
                   "modelled; modelled: 0 (groups of M), 2 (groups of K)")
    return int(value)


def _dtypes(chip, x, weight, group_list) -> str:
    for name, arr in (("x", x), ("weight", weight)):
        if name_of(arr.dtype) not in DOCUMENTED:
            raise _bad(f"{name} dtype {name_of(arr.dtype)} is not supported; allowed: "
                       f"{', '.join(DOCUMENTED)} (non-quantised)")
    if x.dtype != weight.dtype:
        raise _bad(f"x and weight must have one dtype; given {name_of(x.dtype)} and "
                   f"{name_of(weight.dtype)}")
    if name_of(group_list.dtype) != "int64":
        raise _bad(f"group_list dtype {name_of(group_list.dtype)} is not supported; allowed: "
                   "int64")
    dtype = name_of(x.dtype)
    if dtype not in MODELLED:
        raise _bad(f"{dtype} is not modelled (the CATLASS-shaped kernel is fp16/bf16); "
                   f"modelled: {', '.join(MODELLED)}")
    return dtype


def _check_group_list(group_list: np.ndarray, axis: str, limit: int) -> None:
    if group_list.ndim != 1 or not 1 <= group_list.size <= MAX_GROUPS:
        raise _bad(f"group_list shape {tuple(group_list.shape)}: 1-D with 1 to {MAX_GROUPS} "
                   "groups")
    values = group_list.astype(np.int64)
    if values[0] < 0 or np.any(np.diff(values) < 0):
        raise _bad(f"group_list {values.tolist()[:8]}{'...' if values.size > 8 else ''} must "
                   "be non-negative and non-decreasing (groupListType 0: the cumulative "
                   "sizes)")
    if values[-1] > limit:
        raise _bad(f"group_list's last value {int(values[-1])} exceeds x's {axis} = {limit}")


def _check_last_dims(x_stored: np.ndarray, w_stored: np.ndarray) -> None:
    for name, arr in (("x", x_stored), ("weight", w_stored)):
        if arr.shape[-1] >= MAX_LAST_DIM:
            raise _bad(f"{name}'s last dimension as stored is {arr.shape[-1]}; it must be "
                       f"below {MAX_LAST_DIM}")


def check_grouped_matmul(chip, x, weight, group_list, group_type):
    """(x, weight, group_list, dtype, group_type, layout_b) or the first rule they break;
    layout_b is "row" (weight [K, N] per group as stored) or "column" (transposed)."""
    require(OP, x=x, weight=weight, group_list=group_list)
    check_modelled_product(OP, chip, ("atlas-a2",), ("atlas-inference",))
    x, weight = as_array(OP, "x", x), as_array(OP, "weight", weight)
    group_list = as_array(OP, "group_list", group_list)
    gt = check_group_type(group_type)
    dtype = _dtypes(chip, x, weight, group_list)
    if gt == 0:
        return (x, weight, group_list, dtype, gt, _check_split_m(x, weight, group_list))
    _check_split_k(x, weight, group_list)
    return x, weight, group_list, dtype, gt, "row"


def _check_split_m(x, weight, group_list) -> str:
    if x.ndim != 2 or weight.ndim != 3:
        raise _bad(f"x {tuple(x.shape)} and weight {tuple(weight.shape)}: group_type 0 takes "
                   "x 2-D [M, K] and weight 3-D [E, K, N]")
    if _is_transposed(x):
        raise _bad("x must not be transposed for group_type 0")
    if weight.shape[1] != x.shape[1]:
        raise _bad(f"weight's K ({weight.shape[1]}) must equal x's K ({x.shape[1]})")
    if group_list.shape != (weight.shape[0],):
        raise _bad(f"group_list has {group_list.size} values, weight {weight.shape[0]} "
                   "groups; one value per group")
    _check_group_list(group_list, "M", x.shape[0])
    layout = "column" if _is_transposed(weight) else "row"
    _check_last_dims(x, np.swapaxes(weight, 1, 2) if layout == "column" else weight)
    return layout


def _check_split_k(x, weight, group_list) -> None:
    if x.ndim != 2 or weight.ndim != 2:
        raise _bad(f"x {tuple(x.shape)} and weight {tuple(weight.shape)}: group_type 2 takes "
                   "x 2-D [M, K] (transposed) and weight 2-D [K, N]")
    if not x.T.flags.c_contiguous:
        raise _bad("x must be transposed for group_type 2 (a [K, M] tensor's transpose, as "
                   "the weight gradient's x^T)")
    if _is_transposed(weight):
        raise _bad("weight must not be transposed for group_type 2")
    if weight.shape[0] != x.shape[1]:
        raise _bad(f"weight's K ({weight.shape[0]}) must equal x's K ({x.shape[1]})")
    _check_group_list(group_list, "K", x.shape[1])
    _check_last_dims(x.T, weight)
