"""aclnnRmsNorm's and aclnnRmsNormGrad's argument rules, from their aclnn documents (hicann/ops-nn
norm/rms_norm/docs/aclnnRmsNorm.md, norm/rms_norm_grad/docs/aclnnRmsNormGrad.md).

Products: Atlas A2 runs both; the Atlas training series is not supported by CANN (161002 naming
the products that are). The Atlas inference series is supported by CANN but not modelled here (its
kernel differs: no DataCopyPad): 161002 saying so. x (and dy) 1-8 dims; gamma = x.shape[n:] with
n < x.ndim (so 1 to x.ndim dims), not empty; dtype pairs (x, gamma): (fp16, fp16), (bf16, bf16),
(fp32, fp32), (fp16, fp32), (bf16, fp32); rstd fp32 with x's leading dims and 1 on gamma's
(RmsNormGrad also takes rstd of shape x.shape[:n]). A None tensor is 161001, every other
violation 161002.
"""

import math
from dataclasses import dataclass

import numpy as np

from npusim.dtypes import name_of
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ParamError
from npusim.ops.common import as_array, check_modelled_product, require

OP_FWD = "aclnnRmsNorm"
OP_GRAD = "aclnnRmsNormGrad"
PRODUCTS = ("atlas-a2",)
UNMODELLED = ("atlas-inference",)          # CANN runs it there; npusim does not model it
DTYPE_PAIRS = {("float16", "float16"), ("bfloat16", "bfloat16"), ("float32", "float32"),
               ("float16", "float32"), ("bfloat16", "float32")}
MAX_DIMS = 8


@dataclass(frozen=True)
class NormArgs:
    """The checked arguments: 2-D views (rows, cols) and the shapes to give back."""

    x: np.ndarray          # x as given (its shape and strides)
    gamma: np.ndarray
    rows: int              # the product of x's leading dims (those gamma does not cover)
    cols: int              # gamma's size (the normalised length)
    rstd_shape: tuple      # x's leading dims, 1 for each of gamma's


def invalid(op: str, message: str) -> ParamError:
    return ParamError(f"{op}: {message}", code=ACLNN_ERR_PARAM_INVALID)


def check_pair(op: str, x_name: str, x, gamma) -> None:
    pair = (name_of(x.dtype), name_of(gamma.dtype))
    if pair not in DTYPE_PAIRS:
        allowed = ", ".join(f"({a}, {b})" for a, b in sorted(DTYPE_PAIRS))
        raise invalid(op, f"({x_name}, gamma) dtypes {pair} are not supported; allowed "
                          f"pairs: {allowed}")


def check_shapes(op: str, x_name: str, x, gamma) -> tuple:
    """(rows, cols, rstd shape) for x and gamma = x.shape[n:]."""
    if not 1 <= x.ndim <= MAX_DIMS:
        raise invalid(op, f"{x_name} has {x.ndim} dims {tuple(x.shape)}; allowed 1 to {MAX_DIMS}")
    if not 1 <= gamma.ndim <= x.ndim:
        raise invalid(op, f"gamma has {gamma.ndim} dims {tuple(gamma.shape)}; allowed 1 to "
                          f"{x_name}'s {x.ndim}")
    lead = x.ndim - gamma.ndim
    if tuple(gamma.shape) != tuple(x.shape[lead:]):
        raise invalid(op, f"gamma shape {tuple(gamma.shape)} must equal the last {gamma.ndim} "
                          f"dims of {x_name} {tuple(x.shape)}, i.e. {tuple(x.shape[lead:])}")
    if gamma.size == 0:
        raise invalid(op, f"gamma {tuple(gamma.shape)} is empty; an empty gamma is not supported")
    rows = math.prod(x.shape[:lead])
    return rows, gamma.size, tuple(x.shape[:lead]) + (1,) * gamma.ndim


def check_rms_norm(chip, x, gamma, epsilon) -> NormArgs:
    """aclnnRmsNorm's rules; epsilon a finite non-negative number (the tiling's check)."""
    require(OP_FWD, x=x, gamma=gamma)
    check_modelled_product(OP_FWD, chip, PRODUCTS, UNMODELLED)
    x, gamma = as_array(OP_FWD, "x", x), as_array(OP_FWD, "gamma", gamma)
    check_pair(OP_FWD, "x", x, gamma)
    number = isinstance(epsilon, int | float | np.floating | np.integer)
    if isinstance(epsilon, bool) or not number or not np.isfinite(epsilon) or epsilon < 0:
        raise invalid(OP_FWD, f"epsilon = {epsilon!r}; a finite number >= 0 is required")
    rows, cols, rstd_shape = check_shapes(OP_FWD, "x", x, gamma)
    return NormArgs(x=x, gamma=gamma, rows=rows, cols=cols, rstd_shape=rstd_shape)


def _rstd_shapes(x, gdim: int) -> tuple:
    lead = tuple(x.shape[:x.ndim - gdim])
    return lead, lead + (1,) * gdim


def check_rms_norm_grad(chip, dy, x, rstd, gamma) -> tuple:
    """aclnnRmsNormGrad's rules: dy and x one dtype and shape (2-8 dims), (x, gamma) a supported
    pair, rstd fp32 of x.shape[:n] (or with gamma's dims as 1, as RmsNorm gives it, or flat).
    Returns (NormArgs, dy, rstd)."""
    require(OP_GRAD, dy=dy, x=x, rstd=rstd, gamma=gamma)
    check_modelled_product(OP_GRAD, chip, PRODUCTS, UNMODELLED)
    a = {n: as_array(OP_GRAD, n, v) for n, v in (("dy", dy), ("x", x), ("rstd", rstd),
                                                 ("gamma", gamma))}
    check_pair(OP_GRAD, "x", a["x"], a["gamma"])
    if a["dy"].dtype != a["x"].dtype:
        raise invalid(OP_GRAD, f"dy dtype {name_of(a['dy'].dtype)} must equal x dtype "
                               f"{name_of(a['x'].dtype)}")
    if name_of(a["rstd"].dtype) != "float32":
        raise invalid(OP_GRAD, f"rstd dtype {name_of(a['rstd'].dtype)} is not supported; "
                               "allowed: float32")
    if tuple(a["dy"].shape) != tuple(a["x"].shape):
        raise invalid(OP_GRAD, f"dy shape {tuple(a['dy'].shape)} must equal x shape "
                               f"{tuple(a['x'].shape)}")
    if not 2 <= a["x"].ndim <= MAX_DIMS:
        raise invalid(OP_GRAD, f"x has {a['x'].ndim} dims {tuple(a['x'].shape)}; allowed 2 to "
                               f"{MAX_DIMS}")
    rows, cols, _ = check_shapes(OP_GRAD, "x", a["x"], a["gamma"])
    lead, kept = _rstd_shapes(a["x"], a["gamma"].ndim)
    if tuple(a["rstd"].shape) not in (lead, kept, (rows,)):
        raise invalid(OP_GRAD, f"rstd shape {tuple(a['rstd'].shape)} must be x's leading dims "
                               f"{lead} (or {kept}, as aclnnRmsNorm gives it, or ({rows},))")
    return NormArgs(x=a["x"], gamma=a["gamma"], rows=rows, cols=cols, rstd_shape=lead), \
        a["dy"], a["rstd"]
