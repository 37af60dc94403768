"""The argument rules of the training series' loss: aclnnLogSoftmax, aclnnLogSoftmaxBackward,
aclnnNLLLoss and aclnnNLLLossBackward (hicann/ops-nn ``loss/nll_loss/docs/aclnnNLLLoss.md``,
``aclnnNLLLossBackward.md``, the aclnnLogSoftmax and aclnnLogSoftmaxBackward documents). torch's
``cross_entropy`` is ``log_softmax`` then ``nll_loss``; op-plugin runs these four there.

npusim models them on the Atlas training series (CANN runs them on A2 too, with other kernels:
161002 naming the product). self 2-D (N, C) (the loss's shape; a 1-D (C) input is not modelled),
FLOAT or FLOAT16; dim the last axis (1 or -1; another dim is not modelled). NLLLoss: target
(N,) INT64, INT32 or UINT8; weight (C,) of self's dtype, required (torch passes ones);
reduction 0 none, 1 mean, 2 sum; FLOAT only in npusim (FLOAT16 is not modelled).
NLLLossBackward: gradOutput (N,) for none, else (1,) or (); totalWeight (1,) or (); self's
dtype. Bad values are 161002, None 161001.
"""

import numbers
from dataclasses import dataclass

import numpy as np

from npusim.dtypes import name_of
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ParamError
from npusim.ops.common import as_array, check_modelled_product, product_name, require

OP_LSM, OP_LSM_GRAD = "aclnnLogSoftmax", "aclnnLogSoftmaxBackward"
OP_NLL, OP_NLL_GRAD = "aclnnNLLLoss", "aclnnNLLLossBackward"
PRODUCTS, UNMODELLED = ("atlas-training",), ("atlas-a2",)
LSM_DTYPES, NLL_DTYPES = ("float16", "float32"), ("float32",)
TARGET_DTYPES = ("int32", "int64", "uint8")
REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def invalid(op: str, message: str) -> ParamError:
    return ParamError(f"{op}: {message}", code=ACLNN_ERR_PARAM_INVALID)


def _rows(op: str, chip, name: str, value, dtypes: tuple) -> np.ndarray:
    arr = as_array(op, name, value)
    if name_of(arr.dtype) not in dtypes:
        raise invalid(op, f"{name} dtype {name_of(arr.dtype)} is not supported by npusim on "
                          f"{chip.name} ({product_name(chip)}); allowed: {', '.join(dtypes)}")
    if arr.ndim != 2 or 0 in arr.shape:
        raise invalid(op, f"{name} has shape {tuple(arr.shape)}; npusim models a 2-D (N, C) "
                          "tensor with N, C > 0")
    return arr


def _dim(op: str, dim) -> None:
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or dim not in (1, -1):
        raise invalid(op, f"dim = {dim!r}: npusim models the class axis of (N, C), 1 or -1")


def _same(op: str, name: str, arr, other, other_name: str) -> None:
    if arr.dtype != other.dtype or arr.shape != other.shape:
        raise invalid(op, f"{name} is {name_of(arr.dtype)} {tuple(arr.shape)}; must match "
                          f"{other_name}, {name_of(other.dtype)} {tuple(other.shape)}")


def check_log_softmax(chip, self_, dim) -> np.ndarray:
    require(OP_LSM, self=self_)
    check_modelled_product(OP_LSM, chip, PRODUCTS, UNMODELLED)
    x = _rows(OP_LSM, chip, "self", self_, LSM_DTYPES)
    _dim(OP_LSM, dim)
    return x


def check_log_softmax_backward(chip, grad_output, output, dim) -> tuple:
    require(OP_LSM_GRAD, gradOutput=grad_output, output=output)
    check_modelled_product(OP_LSM_GRAD, chip, PRODUCTS, UNMODELLED)
    g = _rows(OP_LSM_GRAD, chip, "gradOutput", grad_output, LSM_DTYPES)
    y = as_array(OP_LSM_GRAD, "output", output)
    _same(OP_LSM_GRAD, "output", y, g, "gradOutput")
    _dim(OP_LSM_GRAD, dim)
    return g, y


@dataclass(frozen=True)
class NllArgs:
    """The checked arguments of aclnnNLLLoss (and its backward)."""

    self_: np.ndarray
    target: np.ndarray
    weight: np.ndarray
    reduction: str
    ignore_index: int


def check_nll_loss(chip, self_, target, weight, reduction, ignore_index, op=OP_NLL) -> NllArgs:
    require(op, self=self_, target=target, weight=weight)
    check_modelled_product(op, chip, PRODUCTS, UNMODELLED)
    x = _rows(op, chip, "self", self_, NLL_DTYPES)
    t, w = as_array(op, "target", target), as_array(op, "weight", weight)
    if name_of(t.dtype) not in TARGET_DTYPES:
        raise invalid(op, f"target dtype {name_of(t.dtype)}; allowed: "
                          f"{', '.join(TARGET_DTYPES)}")
    if tuple(t.shape) != (x.shape[0],):
        raise invalid(op, f"target has shape {tuple(t.shape)}; must be ({x.shape[0]},)")
    if w.dtype != x.dtype or tuple(w.shape) != (x.shape[1],):
        raise invalid(op, f"weight is {name_of(w.dtype)} {tuple(w.shape)}; must be "
                          f"{name_of(x.dtype)} ({x.shape[1]},)")
    if isinstance(reduction, bool) or reduction not in REDUCTIONS:
        raise invalid(op, f"reduction = {reduction!r}; allowed 0 (none), 1 (mean), 2 (sum)")
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, numbers.Integral):
        raise invalid(op, f"ignoreIndex = {ignore_index!r}; an integer is required")
    return NllArgs(x, t, w, REDUCTIONS[reduction], int(ignore_index))


def check_nll_loss_backward(chip, grad_output, self_, target, weight, reduction, ignore_index,
                            total_weight) -> tuple:
    """(gradOutput, totalWeight, NllArgs) or the first rule broken."""
    op = OP_NLL_GRAD
    require(op, gradOutput=grad_output, self=self_, target=target, weight=weight,
            totalWeight=total_weight)
    a = check_nll_loss(chip, self_, target, weight, reduction, ignore_index, op)
    g, tw = as_array(op, "gradOutput", grad_output), as_array(op, "totalWeight", total_weight)
    want = ((a.self_.shape[0],),) if a.reduction == "none" else ((1,), ())
    for name, arr, shapes in (("gradOutput", g, want), ("totalWeight", tw, ((1,), ()))):
        if arr.dtype != a.self_.dtype or tuple(arr.shape) not in shapes:
            raise invalid(op, f"{name} is {name_of(arr.dtype)} {tuple(arr.shape)}; must be "
                              f"{name_of(a.self_.dtype)} of shape "
                              f"{' or '.join(map(str, shapes))} for reduction {a.reduction}")
    return g, tw, a
