"""The aclnn argument rules of aclnnRelu, aclnnThresholdBackward and aclnnAdd.

From the operators' documents and op_api sources (hicann/ops-nn
``activation/relu/op_api/aclnn_relu.cpp``, ``activation/threshold_grad_v2_d/op_api/
aclnn_threshold_backward.cpp``; hicann/ops-math ``math/add/op_host/op_api/aclnn_add.cpp``): a
missing tensor or scalar is 161001; a dtype outside the product's list, differing dtypes, more
than 8 dimensions or shapes that do not broadcast are 161002. Products: Relu on the Atlas
training series and A2; ThresholdBackward, Add and Muls also on the Atlas inference series
(aclnnMuls: hicann/ops-math ``math/mul/op_host/op_api/aclnn_mul.cpp``).

npusim models the floating dtypes a training step uses (fp16 and fp32, and bf16 on A2, where
the documents list it). The documents' integer (and, for Add, double, complex and bool) dtypes
are refused with a ParamError that says they are not modelled. Shapes that broadcast but
differ are refused the same way: the kernels here take equal shapes (a ResNet step's residual
adds and ReLUs have them).
"""

import numbers

import numpy as np

from npusim.dtypes import name_of
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, ParamError
from npusim.ops.common import PRODUCT_NAMES, as_array, check_same, product_name, require

MAX_DIMS = 8
FLOATS_910 = ("float16", "float32")
FLOATS_A2 = ("bfloat16", "float16", "float32")
RELU_DTYPES = {"atlas-training": FLOATS_910, "atlas-a2": FLOATS_A2}
THRESHOLD_DTYPES = {"atlas-inference": FLOATS_910, **RELU_DTYPES}
ADD_DTYPES = THRESHOLD_DTYPES
NOT_MODELLED = {   # what the documents list beyond the modelled floats
    "aclnnRelu": "int8, int32, int64, uint8",
    "aclnnThresholdBackward": "int32, int8, uint8",
    "aclnnAdd": "int32, int64, int16, int8, uint8, double, bool, complex64, complex128",
    "aclnnMuls": "int32, int64, int16, int8, uint8, double, bool, complex64, complex128",
}
MULS_DTYPES = ADD_DTYPES   # aclnn_mul.cpp's ASCEND910 / ASCEND910B lists (floats)


def check_product(op: str, chip, dtypes: dict) -> None:
    if chip.product not in dtypes:
        supported = ", ".join(f"{p} ({PRODUCT_NAMES.get(p, p)})" for p in dtypes)
        raise ParamError(f"{op}: not supported on {chip.name} ({product_name(chip)}); supported "
                         f"products: {supported}", code=ACLNN_ERR_PARAM_INVALID)


def check_float_dtype(op: str, name: str, arr: np.ndarray, dtypes: dict, chip) -> None:
    allowed = dtypes[chip.product]
    got = name_of(arr.dtype)
    if got not in allowed:
        raise ParamError(f"{op}: {name} dtype {got} is not supported on {chip.name} "
                         f"({product_name(chip)}); allowed: {', '.join(allowed)} (the "
                         f"document's {NOT_MODELLED[op]} are not modelled by npusim)",
                         code=ACLNN_ERR_PARAM_INVALID)


def check_dims(op: str, **arrays) -> None:
    for name, arr in arrays.items():
        if arr.ndim > MAX_DIMS:
            raise ParamError(f"{op}: {name} has {arr.ndim} dimensions {tuple(arr.shape)}; at "
                             f"most {MAX_DIMS}", code=ACLNN_ERR_PARAM_INVALID)


def check_equal_shapes(op: str, **arrays) -> None:
    """161002 when the shapes do not broadcast; a ParamError saying so when they broadcast but
    differ (not modelled)."""
    shapes = {name: tuple(a.shape) for name, a in arrays.items()}
    if len(set(shapes.values())) == 1:
        return
    shown = ", ".join(f"{n} {s}" for n, s in shapes.items())
    try:
        np.broadcast_shapes(*shapes.values())
    except ValueError:
        raise ParamError(f"{op}: the shapes must broadcast; given {shown}",
                         code=ACLNN_ERR_PARAM_INVALID) from None
    raise ParamError(f"{op}: the shapes broadcast but differ ({shown}); npusim's kernel "
                     "takes equal shapes only (broadcasting is not modelled)",
                     code=ACLNN_ERR_PARAM_INVALID)


def check_scalar(op: str, name: str, value) -> float:
    """A host aclScalar: None is a null pointer; else a real number."""
    if value is None:
        raise ParamError(f"{op}: {name} is None (a null pointer); a scalar is required",
                         code=ACLNN_ERR_PARAM_NULLPTR)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise ParamError(f"{op}: {name} = {value!r}: a real number is required",
                         code=ACLNN_ERR_PARAM_INVALID)
    return float(value)


def check_relu(chip, self_, out=None, *, has_output=False):
    op = "aclnnRelu"
    tensors = {"self": self_, **({"out": out} if has_output else {})}
    require(op, **tensors)
    check_product(op, chip, RELU_DTYPES)
    arrays = {n: as_array(op, n, v) for n, v in tensors.items()}
    for name, arr in arrays.items():
        check_float_dtype(op, name, arr, RELU_DTYPES, chip)
    check_same(op, "the dtypes", **{n: name_of(a.dtype) for n, a in arrays.items()})
    check_dims(op, **arrays)
    check_equal_shapes(op, **arrays)
    return arrays["self"]


def check_threshold_backward(chip, grad_output, self_, threshold, out=None, *,
                             has_output=False):
    op = "aclnnThresholdBackward"
    tensors = {"gradOutput": grad_output, "self": self_, **({"out": out} if has_output else {})}
    require(op, **tensors)
    thr = check_scalar(op, "threshold", threshold)
    check_product(op, chip, THRESHOLD_DTYPES)
    arrays = {n: as_array(op, n, v) for n, v in tensors.items()}
    for name, arr in arrays.items():
        check_float_dtype(op, name, arr, THRESHOLD_DTYPES, chip)
    check_same(op, "the dtypes", **{n: name_of(a.dtype) for n, a in arrays.items()})
    check_dims(op, **arrays)
    check_equal_shapes(op, **arrays)
    return arrays["gradOutput"], arrays["self"], thr


def check_add(chip, self_, other, alpha, out=None, *, has_output=False):
    op = "aclnnAdd"
    tensors = {"self": self_, "other": other, **({"out": out} if has_output else {})}
    require(op, **tensors)
    a = check_scalar(op, "alpha", alpha)
    check_product(op, chip, ADD_DTYPES)
    arrays = {n: as_array(op, n, v) for n, v in tensors.items()}
    for name, arr in arrays.items():
        check_float_dtype(op, name, arr, ADD_DTYPES, chip)
    dtypes = {n: name_of(x.dtype) for n, x in arrays.items()}
    if len(set(dtypes.values())) > 1:
        shown = ", ".join(f"{n} {d}" for n, d in dtypes.items())
        raise ParamError(f"{op}: the dtypes must be equal in npusim; given {shown} (aclnn "
                         "promotes mixed dtypes with Cast kernels, which npusim does not "
                         "model)", code=ACLNN_ERR_PARAM_INVALID)
    check_dims(op, **arrays)
    check_equal_shapes(op, **arrays)
    return arrays["self"], arrays["other"], a


def check_muls(chip, self_, other, out=None, *, has_output=False):
    """aclnnMuls: a tensor and a host scalar; returns (self, other as a float)."""
    op = "aclnnMuls"
    tensors = {"self": self_, **({"out": out} if has_output else {})}
    require(op, **tensors)
    value = check_scalar(op, "other", other)
    check_product(op, chip, MULS_DTYPES)
    arrays = {n: as_array(op, n, v) for n, v in tensors.items()}
    for name, arr in arrays.items():
        check_float_dtype(op, name, arr, MULS_DTYPES, chip)
    check_same(op, "the dtypes", **{n: name_of(a.dtype) for n, a in arrays.items()})
    check_dims(op, **arrays)
    check_equal_shapes(op, **arrays)
    return arrays["self"], value
