"""aclnnSwiGlu's and aclnnSwiGluGrad's argument rules (hicann/ops-nn activation/swi_glu/docs/
aclnnSwiGlu.md, activation/swi_glu_grad/docs/aclnnSwiGluGrad.md).

Products: Atlas A2 runs both; the Atlas training series is not supported by CANN (161002 naming
the products that are); the Atlas inference series is supported by CANN but not modelled here
(161002 saying so). x (and yGrad, out) bf16/fp16/fp32, one dtype; x at least 1-D with an even
size along ``dim``, dim in [-x.ndim, x.ndim - 1]; yGrad has x's shape with dim halved. SwiGlu
takes an empty x; SwiGluGrad takes 1-8 dims and no empty yGrad or x. A None tensor is 161001,
every other violation 161002. Not checked: the grad document's "x shape not 64-byte aligned is
not supported" (its meaning is not clear from the text; npusim runs any size).
"""

import math
from dataclasses import dataclass

import numpy as np

from npusim.dtypes import name_of
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ParamError
from npusim.ops.common import (
    as_array,
    check_dtype,
    check_modelled_product,
    require,
)

OP_FWD = "aclnnSwiGlu"
OP_GRAD = "aclnnSwiGluGrad"
DTYPES = {"atlas-a2": ("bfloat16", "float16", "float32")}
UNMODELLED = ("atlas-inference",)


@dataclass(frozen=True)
class GluArgs:
    """The checked arguments, x seen as (rows, 2, half)."""

    x: np.ndarray
    y_grad: np.ndarray | None
    dim: int               # normalised to [0, ndim)
    rows: int              # the product of x's dims before dim
    half: int              # elements of one half of a row: x.shape[dim] / 2 x the dims after

    @property
    def out_shape(self) -> tuple:
        s = list(self.x.shape)
        s[self.dim] //= 2
        return tuple(s)


def invalid(op: str, message: str) -> ParamError:
    return ParamError(f"{op}: {message}", code=ACLNN_ERR_PARAM_INVALID)


def _check_dim(op: str, x, dim) -> int:
    if x.ndim < 1:
        raise invalid(op, f"x must have at least 1 dim; given shape {tuple(x.shape)}")
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer) \
            or not -x.ndim <= dim < x.ndim:
        raise invalid(op, f"dim = {dim!r}; allowed an integer in [{-x.ndim}, {x.ndim - 1}] "
                          f"for x of shape {tuple(x.shape)}")
    d = int(dim) % x.ndim
    if x.shape[d] % 2:
        raise invalid(op, f"x shape {tuple(x.shape)} has {x.shape[d]} (odd) along dim {dim}; "
                          "it is split in two halves, so it must be even")
    return d


def check_swi_glu(chip, x, dim, y_grad=None, *, grad=False) -> GluArgs:
    op = OP_GRAD if grad else OP_FWD
    tensors = {"yGrad": y_grad, "x": x} if grad else {"x": x}
    require(op, **tensors)
    check_modelled_product(op, chip, DTYPES, UNMODELLED)
    a = {n: as_array(op, n, v) for n, v in tensors.items()}
    for name, arr in a.items():
        check_dtype(op, name, arr, DTYPES, chip)
    x = a["x"]
    d = _check_dim(op, x, dim)
    rows, half = math.prod(x.shape[:d]), math.prod(x.shape[d:]) // 2
    args = GluArgs(x=x, y_grad=a.get("yGrad"), dim=d, rows=rows, half=half)
    if grad:
        if x.ndim > 8 or x.size == 0:
            raise invalid(op, f"x shape {tuple(x.shape)}: allowed 1 to 8 dims and not empty")
        if a["yGrad"].dtype != x.dtype:
            raise invalid(op, f"yGrad dtype {name_of(a['yGrad'].dtype)} must equal x dtype "
                              f"{name_of(x.dtype)}")
        if tuple(a["yGrad"].shape) != args.out_shape:
            raise invalid(op, f"yGrad shape {tuple(a['yGrad'].shape)} must be x's shape with dim "
                              f"{dim} halved: {args.out_shape}")
    return args
