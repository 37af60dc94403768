"""The argument rules of aclnnAdaptiveAvgPool2d (hicann/ops-nn
``pooling/adaptive_avg_pool2d/op_api/aclnn_adaptive_avg_pool2d.cpp``): self, outputSize and out
not null (161001); self 3-D (C, H, W) or 4-D (N, C, H, W); FLOAT or FLOAT16, also BFLOAT16 on
A2 (ASCEND910B..910E); outputSize of two values, each > 0 (161002).

npusim models outputSize (1, 1), the global average pool, which aclnn runs as one ReduceMean
over H and W; another size (aclnn's AdaptiveAvgPool3d or assist-matrix BatchMatMul path) is
refused as not modelled. Products modelled: the Atlas training series and A2.
"""

import numbers

from npusim.dtypes import name_of
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, ParamError
from npusim.ops.common import PRODUCT_NAMES, as_array, product_name, require

OP = "aclnnAdaptiveAvgPool2d"
DTYPES = {"atlas-training": ("float16", "float32"),
          "atlas-a2": ("bfloat16", "float16", "float32")}


def _bad(text: str) -> ParamError:
    return ParamError(f"{OP}: {text}", code=ACLNN_ERR_PARAM_INVALID)


def check_output_size(output_size) -> tuple:
    if output_size is None:
        raise ParamError(f"{OP}: outputSize is None (a null pointer); two sizes are required",
                         code=ACLNN_ERR_PARAM_NULLPTR)
    try:
        sizes = tuple(output_size)
    except TypeError:
        raise _bad(f"outputSize = {output_size!r}: two integers are required") from None
    if len(sizes) != 2 or not all(isinstance(s, numbers.Integral) and not isinstance(s, bool)
                                  for s in sizes):
        raise _bad(f"outputSize = {output_size!r}: two integers are required")
    if min(sizes) <= 0:
        raise _bad(f"outputSize = {sizes}: each value must be greater than 0")
    if sizes != (1, 1):
        raise _bad(f"outputSize = {sizes}: npusim models (1, 1) only (ReduceMean over H and W, "
                   "the global average pool); other sizes run AdaptiveAvgPool3d or "
                   "BatchMatMul kernels in CANN, which are not modelled")
    return sizes


def check_adaptive_avg_pool2d(chip, self_, output_size):
    """The input array, or the first rule it breaks."""
    require(OP, self=self_)
    if chip.product not in DTYPES:
        supported = ", ".join(f"{p} ({PRODUCT_NAMES[p]})" for p in DTYPES)
        raise _bad(f"not modelled on {chip.name} ({product_name(chip)}); modelled products: "
                   f"{supported}")
    x = as_array(OP, "self", self_)
    check_output_size(output_size)
    if x.ndim not in (3, 4):
        raise _bad(f"self has {x.ndim} dimensions {tuple(x.shape)}; allowed 3 (C, H, W) or "
                   "4 (N, C, H, W)")
    got, allowed = name_of(x.dtype), DTYPES[chip.product]
    if got not in allowed:
        raise _bad(f"self dtype {got} is not supported on {chip.name} ({product_name(chip)}); "
                   f"allowed: {', '.join(allowed)}")
    rows = x.size // max(x.shape[-1] * x.shape[-2], 1) if x.size else 0
    if x.shape[-1] * x.shape[-2] == 0 and min(x.shape[:-2]) > 0:
        raise _bad(f"self {tuple(x.shape)}: H and W must not be 0 (the mean of nothing)")
    return x, rows


BACKWARD = "aclnnAdaptiveAvgPool2dBackward"
BACKWARD_DTYPES = {"atlas-training": ("float16", "float32"), "atlas-a2": ("float16", "float32")}


def check_adaptive_avg_pool2d_backward(chip, grad_output, self_):
    """(gradOutput, self, rows) or the first rule they break: both given (161001); 3-D or 4-D,
    the same number of dimensions, the same leading dimensions and dtype (161002). npusim
    models gradOutput's H and W of 1 (the global pool's gradient: aclnn's Fill and Mul) and
    FLOAT16 / FLOAT (the document's BFLOAT16 on A2 is not modelled)."""
    op = BACKWARD
    require(op, gradOutput=grad_output, self=self_)
    if chip.product not in BACKWARD_DTYPES:
        supported = ", ".join(f"{p} ({PRODUCT_NAMES[p]})" for p in BACKWARD_DTYPES)
        raise ParamError(f"{op}: not modelled on {chip.name} ({product_name(chip)}); modelled "
                         f"products: {supported}", code=ACLNN_ERR_PARAM_INVALID)
    dy, x = as_array(op, "gradOutput", grad_output), as_array(op, "self", self_)
    for name, arr in (("gradOutput", dy), ("self", x)):
        if arr.ndim not in (3, 4):
            raise ParamError(f"{op}: {name} has {arr.ndim} dimensions {tuple(arr.shape)}; "
                             "allowed 3 or 4", code=ACLNN_ERR_PARAM_INVALID)
        got, allowed = name_of(arr.dtype), BACKWARD_DTYPES[chip.product]
        if got not in allowed:
            raise ParamError(f"{op}: {name} dtype {got} is not modelled on {chip.name}; "
                             f"allowed: {', '.join(allowed)}", code=ACLNN_ERR_PARAM_INVALID)
    if dy.dtype != x.dtype or dy.ndim != x.ndim or dy.shape[:-2] != x.shape[:-2]:
        raise ParamError(f"{op}: gradOutput {name_of(dy.dtype)} {tuple(dy.shape)} and self "
                         f"{name_of(x.dtype)} {tuple(x.shape)} must share the dtype and the "
                         "dimensions before H and W", code=ACLNN_ERR_PARAM_INVALID)
    if dy.shape[-2:] != (1, 1):
        raise ParamError(f"{op}: gradOutput {tuple(dy.shape)}: npusim models H and W of 1 "
                         "(the global average pool) only", code=ACLNN_ERR_PARAM_INVALID)
    if x.shape[-1] * x.shape[-2] == 0 and min(x.shape[:-2]) > 0:
        raise ParamError(f"{op}: self {tuple(x.shape)}: H and W must not be 0",
                         code=ACLNN_ERR_PARAM_INVALID)
    return dy, x, dy.size
