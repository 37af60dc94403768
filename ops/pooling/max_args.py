"""The argument rules of aclnnMaxPool2dWithIndices and aclnnMaxPool2dWithIndicesBackward
(hicann/ops-nn ``pooling/max_pool3d_with_argmax_v2/op_api/aclnn_max_pool2d_with_indices.cpp``,
``pooling/max_pool3d_grad_with_argmax/op_api/aclnn_max_pool2d_with_indices_backward.cpp`` and
their docs).

Products: Atlas A2 (its non-regbase path: MaxPool3DWithArgmaxV2 and MaxPool3DGradWithArgmax on
NCDHW with D = 1). The Atlas training series is not supported by CANN for these two (its dtype
list is empty; torch_npu runs aclnnMaxPool2dWithMask there): 161002 naming the product.

self (and gradOutput) 3-D (C, H, W) or 4-D (N, C, H, W), not None (161001). Forward: FLOAT16,
FLOAT or BFLOAT16; backward: FLOAT only on A2, indices INT32. kernelSize 1 or 2 values, each >
0; stride 0 (= kernelSize), 1 or 2 values, each > 0; padding 1 or 2 values, each >= 0 and <=
kernelSize / 2; dilation 1 or 2 values, all 1 on A2; the output size from the formula (floor,
or ceil with the last window starting inside the input or its left padding) > 0; backward:
gradOutput and indices of that output shape, self's leading dims (161002).
"""

import numbers
from dataclasses import dataclass

import numpy as np

from npusim.dtypes import name_of
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ParamError
from npusim.ops.common import as_array, check_modelled_product, product_name, require

OP_MAX = "aclnnMaxPool2dWithIndices"
OP_MAX_GRAD = "aclnnMaxPool2dWithIndicesBackward"
PRODUCTS = ("atlas-a2",)
FWD_DTYPES = ("bfloat16", "float16", "float32")
BWD_DTYPES = ("float32",)


@dataclass(frozen=True)
class Pool:
    """The checked window: (kh, kw), (sh, sw), (ph, pw), input (H, W) and output (OH, OW)."""

    kernel: tuple
    stride: tuple
    pad: tuple
    hw: tuple
    out: tuple
    planes: int          # N x C
    lead: tuple          # self's dims before H and W


def invalid(op: str, message: str) -> ParamError:
    return ParamError(f"{op}: {message}", code=ACLNN_ERR_PARAM_INVALID)


def _ints(op: str, name: str, value, sizes: tuple) -> tuple:
    try:
        vals = tuple(value)
    except TypeError:
        vals = (value,) if isinstance(value, numbers.Integral) else None
    if vals is None or len(vals) not in sizes or not all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in vals):
        raise invalid(op, f"{name} = {value!r}: {' or '.join(map(str, sizes))} integers are "
                          "required")
    return tuple(int(v) for v in vals)


def out_size(size: int, k: int, s: int, p: int, ceil: bool) -> int:
    """PoolingOutShape of the op_api (dilation 1)."""
    span = size + 2 * p - (k - 1) - 1 + (s - 1 if ceil else 0)
    out = span // s + 1
    if ceil and (out - 1) * s >= size + p:
        out -= 1
    return out


def check_window(op: str, x: np.ndarray, kernel_size, stride, padding, dilation,
                 ceil_mode) -> Pool:
    k = _ints(op, "kernelSize", kernel_size, (1, 2))
    s = _ints(op, "stride", stride, (0, 1, 2))
    p = _ints(op, "padding", padding, (1, 2))
    d = _ints(op, "dilation", dilation, (1, 2))
    k, s, p, d = (v * 2 if len(v) == 1 else v for v in (k, s or k, p, d))
    if min(k) <= 0 or min(s) <= 0:
        raise invalid(op, f"kernelSize {k} and stride {s} must be greater than 0")
    if min(p) < 0 or p[0] > k[0] // 2 or p[1] > k[1] // 2:
        raise invalid(op, f"padding {p}: each value from 0 to kernelSize / 2 ({k})")
    if d != (1, 1):
        raise invalid(op, f"dilation {d}: only 1 is supported")
    if not isinstance(ceil_mode, bool | np.bool_):
        raise invalid(op, f"ceilMode = {ceil_mode!r}: True or False")
    h, w = x.shape[-2:]
    out = (out_size(h, k[0], s[0], p[0], bool(ceil_mode)),
           out_size(w, k[1], s[1], p[1], bool(ceil_mode)))
    if min(out) <= 0:
        raise invalid(op, f"self {tuple(x.shape)} with kernelSize {k}, stride {s}, padding "
                          f"{p}: output size {out} has an axis of 0")
    lead = tuple(x.shape[:-2])
    return Pool(k, s, p, (h, w), out, int(np.prod(lead)), lead)


def _self(op: str, chip, name: str, value, dtypes: tuple) -> np.ndarray:
    arr = as_array(op, name, value)
    if arr.ndim not in (3, 4):
        raise invalid(op, f"{name} has {arr.ndim} dims {tuple(arr.shape)}; allowed 3 (C, H, W) "
                          "or 4 (N, C, H, W)")
    if name_of(arr.dtype) not in dtypes:
        raise invalid(op, f"{name} dtype {name_of(arr.dtype)} is not supported on {chip.name} "
                          f"({product_name(chip)}); allowed: {', '.join(dtypes)}")
    return arr


def check_max_pool(chip, self_, kernel_size, stride, padding, dilation, ceil_mode):
    """(self, Pool) or the first rule broken."""
    require(OP_MAX, self=self_, kernelSize=kernel_size, stride=stride, padding=padding,
            dilation=dilation)
    check_modelled_product(OP_MAX, chip, PRODUCTS)
    x = _self(OP_MAX, chip, "self", self_, FWD_DTYPES)
    if x.size == 0:
        raise invalid(OP_MAX, f"self {tuple(x.shape)} is empty: npusim does not model aclnn's "
                              "empty-tensor path")
    return x, check_window(OP_MAX, x, kernel_size, stride, padding, dilation, ceil_mode)


def check_max_pool_backward(chip, grad_output, self_, indices, kernel_size, stride, padding,
                            dilation, ceil_mode):
    """(gradOutput, self, indices, Pool) or the first rule broken."""
    op = OP_MAX_GRAD
    require(op, gradOutput=grad_output, self=self_, indices=indices, kernelSize=kernel_size,
            stride=stride, padding=padding, dilation=dilation)
    check_modelled_product(op, chip, PRODUCTS)
    x = _self(op, chip, "self", self_, BWD_DTYPES)
    dy = _self(op, chip, "gradOutput", grad_output, BWD_DTYPES)
    idx = as_array(op, "indices", indices)
    if name_of(idx.dtype) != "int32":
        raise invalid(op, f"indices dtype {name_of(idx.dtype)}: INT32 is supported on "
                          f"{chip.name} ({product_name(chip)})")
    if x.size == 0:
        raise invalid(op, f"self {tuple(x.shape)} is empty: npusim does not model aclnn's "
                          "empty-tensor path")
    pool = check_window(op, x, kernel_size, stride, padding, dilation, ceil_mode)
    want = (*pool.lead, *pool.out)
    for name, arr in (("gradOutput", dy), ("indices", idx)):
        if tuple(arr.shape) != want:
            raise invalid(op, f"{name} has shape {tuple(arr.shape)}; the pool of self "
                              f"{tuple(x.shape)} gives {want}")
    return dy, x, idx, pool
