"""aclnnCrossEntropyLossGrad's argument rules, from its seed document (Atlas A2 only).

gradLoss 0-D for mean/sum and (N,) for none; logProb 2-D (N, C) with N < 200000 and C > 0;
target int64 (N,); weightOptional fp32 (C,); gradLoss, logProb (and xGradOut) one dtype of
fp16/fp32/bf16; labelSmoothing and lseSquareScaleForZloss only 0.0; the zloss tensors only None;
reduction none/mean/sum; ignoreIndex an integer below C. A None for a required tensor is
ParamError 161001; every other violation 161002. Target values are device data the host does
not see: the kernel checks them (``ops/cross_entropy/kernel.py``).
"""

from dataclasses import dataclass

import numpy as np

from npusim.dtypes import name_of
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ParamError
from npusim.ops.common import PRODUCT_NAMES, as_array, check_dtype, check_same, require

OP = "aclnnCrossEntropyLossGrad"
FLOAT_DTYPES = ("bfloat16", "float16", "float32")
DTYPES = {"atlas-a2": FLOAT_DTYPES}
TARGET_DTYPES = {"atlas-a2": ("int64",)}
WEIGHT_DTYPES = {"atlas-a2": ("float32",)}
REDUCTIONS = ("none", "mean", "sum")
MAX_ROWS = 200_000   # logProb's N must be below this (seed, 约束与限制)


@dataclass(frozen=True)
class CeArgs:
    """The checked arguments of one call."""

    grad_loss: np.ndarray
    log_prob: np.ndarray
    target: np.ndarray
    weight: np.ndarray | None
    reduction: str
    ignore_index: int
    label_smoothing: float

    @property
    def rows(self) -> int:
        return self.log_prob.shape[0]

    @property
    def cols(self) -> int:
        return self.log_prob.shape[1]


def _invalid(message: str) -> ParamError:
    return ParamError(f"{OP}: {message}", code=ACLNN_ERR_PARAM_INVALID)


def check_product(chip) -> None:
    """Atlas A2 only: anything else is 161002 naming the products that support the operator."""
    if chip.product not in DTYPES:
        supported = ", ".join(PRODUCT_NAMES.get(p, p) for p in DTYPES)
        product = PRODUCT_NAMES.get(chip.product, chip.product)
        raise _invalid(f"not supported on {chip.name} ({product}); supported on: {supported}")


def _check_reduction(reduction) -> None:
    if not isinstance(reduction, str) or reduction not in REDUCTIONS:
        raise _invalid(f"reduction = {reduction!r}; allowed: {', '.join(REDUCTIONS)}")


def _check_scalars(ignore_index, label_smoothing, lse_scale, cols) -> None:
    if isinstance(ignore_index, bool | np.bool_) or not isinstance(ignore_index, int | np.integer):
        raise _invalid(f"ignore_index = {ignore_index!r}; an integer is required")
    if ignore_index >= cols:
        raise _invalid(f"ignore_index = {ignore_index} must be less than C = {cols} (a negative "
                       "value ignores the rows whose target equals it)")
    for name, value in (("label_smoothing", label_smoothing),
                        ("lse_square_scale_for_zloss", lse_scale)):
        if isinstance(value, bool) or not isinstance(value, int | float | np.number) \
                or value != 0.0:
            raise _invalid(f"{name} = {value!r}; only 0.0 is supported")


def _check_shapes(a: dict, reduction: str) -> None:
    lp = a["logProb"]
    if lp.ndim != 2:
        raise _invalid(f"logProb must be 2-D (N, C); given shape {tuple(lp.shape)}")
    n, c = lp.shape
    if c < 1:
        raise _invalid(f"logProb (N, C) = {tuple(lp.shape)}: C, the number of classes, must be > 0")
    if n >= MAX_ROWS:
        raise _invalid(f"logProb (N, C) = {tuple(lp.shape)}: N must be below {MAX_ROWS}")
    want = {"target": (n,), "gradLoss": (n,) if reduction == "none" else ()}
    if a.get("weight") is not None:
        want["weight"] = (c,)
    if a.get("xGradOut") is not None:
        want["xGradOut"] = (n, c)
    for name, shape in want.items():
        if tuple(a[name].shape) != shape:
            hint = f" (reduction {reduction!r})" if name == "gradLoss" else ""
            raise _invalid(f"{name} has shape {tuple(a[name].shape)}; must be {shape}{hint} "
                           f"for logProb {tuple(lp.shape)}")


def check_cross_entropy_loss_grad(chip, grad_loss, log_prob, target, weight=None, *,
                                  grad_zloss=None, lse_for_zloss=None, reduction="mean",
                                  ignore_index=-100, label_smoothing=0.0,
                                  lse_square_scale_for_zloss=0.0, x_grad=None,
                                  has_output=False) -> CeArgs:
    """Every rule of the seed; returns the checked arrays."""
    tensors = {"gradLoss": grad_loss, "logProb": log_prob, "target": target}
    if has_output:
        tensors["xGradOut"] = x_grad
    require(OP, **tensors)
    check_product(chip)
    for name, value in (("gradZlossOptional", grad_zloss), ("lseForZlossOptional", lse_for_zloss)):
        if value is not None:
            raise _invalid(f"{name} must be None (a null pointer): zloss is not supported")
    a = {name: as_array(OP, name, value) for name, value in tensors.items()}
    if weight is not None:
        a["weight"] = as_array(OP, "weight", weight)
    for name in ("gradLoss", "logProb", "xGradOut"):
        if name in a:
            check_dtype(OP, name, a[name], DTYPES, chip)
    check_dtype(OP, "target", a["target"], TARGET_DTYPES, chip)
    if "weight" in a:
        check_dtype(OP, "weight", a["weight"], WEIGHT_DTYPES, chip)
    check_same(OP, "the dtypes", **{n: name_of(a[n].dtype) for n in ("gradLoss", "logProb",
                                                                      "xGradOut") if n in a})
    _check_reduction(reduction)
    _check_shapes(a, reduction)
    _check_scalars(ignore_index, label_smoothing, lse_square_scale_for_zloss,
                   a["logProb"].shape[1])
    return CeArgs(grad_loss=a["gradLoss"], log_prob=a["logProb"], target=a["target"],
                  weight=a.get("weight"), reduction=reduction, ignore_index=int(ignore_index),
                  label_smoothing=float(label_smoothing))
