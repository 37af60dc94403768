"""aclnnCrossEntropyLoss's argument rules, from its document (hicann/ops-nn
``loss/cross_entropy_loss/docs/aclnnCrossEntropyLoss.md``): Atlas A2 and A3 only.

input 2-D (N, C) with C > 0, fp32/fp16/bf16; target int32 or int64 (N,); weightOptional fp32
(C,); reduction none/mean/sum; labelSmoothing in [0, 1]; lseSquareScaleForZloss and returnZloss
"not supported: passing them has no effect" (zlossOut and lseForZlossOut are not computed). A
None input is 161001; a dtype outside the lists is 161002; a shape, reduction or labelSmoothing
outside the rules is 561002 (ACLNN_ERR_INNER_TILING_ERROR, raised by the tiling as the document
says). npusim models labelSmoothing 0 only (a ParamError 161002 says so otherwise). Target
values are device data: the kernel checks them (``ops/cross_entropy/loss_kernel.py``).
"""

from dataclasses import dataclass

import numpy as np

from npusim.errors import ACLNN_ERR_PARAM_INVALID, ParamError
from npusim.ops.common import as_array, check_dtype, check_modelled_product, require

OP = "aclnnCrossEntropyLoss"
ACLNN_ERR_INNER_TILING_ERROR = 561002
PRODUCTS = ("atlas-a2",)
INPUT_DTYPES = {"atlas-a2": ("bfloat16", "float16", "float32")}
TARGET_DTYPES = {"atlas-a2": ("int32", "int64")}
WEIGHT_DTYPES = {"atlas-a2": ("float32",)}
REDUCTIONS = ("none", "mean", "sum")


@dataclass(frozen=True)
class CeLossArgs:
    """The checked arguments of one call."""

    input: np.ndarray
    target: np.ndarray
    weight: np.ndarray | None
    reduction: str
    ignore_index: int

    @property
    def rows(self) -> int:
        return self.input.shape[0]

    @property
    def cols(self) -> int:
        return self.input.shape[1]


def _tiling_error(message: str) -> ParamError:
    return ParamError(f"{OP}: {message}", code=ACLNN_ERR_INNER_TILING_ERROR)


def _check_shapes(x, target, weight) -> None:
    if x.ndim != 2 or x.shape[1] < 1:
        raise _tiling_error(f"input must be 2-D (N, C) with C > 0; given shape "
                            f"{tuple(x.shape)}")
    if tuple(target.shape) != (x.shape[0],):
        raise _tiling_error(f"target has shape {tuple(target.shape)}; must be "
                            f"({x.shape[0]},) for input {tuple(x.shape)}")
    if weight is not None and tuple(weight.shape) != (x.shape[1],):
        raise _tiling_error(f"weightOptional has shape {tuple(weight.shape)}; must be "
                            f"({x.shape[1]},) for input {tuple(x.shape)}")


def _check_scalars(reduction, ignore_index, label_smoothing) -> None:
    if not isinstance(reduction, str) or reduction not in REDUCTIONS:
        raise _tiling_error(f"reduction = {reduction!r}; allowed: {', '.join(REDUCTIONS)}")
    if isinstance(ignore_index, bool | np.bool_) or not isinstance(ignore_index,
                                                                    int | np.integer):
        raise ParamError(f"{OP}: ignore_index = {ignore_index!r}; an integer is required",
                         code=ACLNN_ERR_PARAM_INVALID)
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing,
                                                           int | float | np.number) \
            or not 0.0 <= label_smoothing <= 1.0:
        raise _tiling_error(f"label_smoothing = {label_smoothing!r}; allowed 0.0 to 1.0")
    if label_smoothing != 0.0:
        raise ParamError(f"{OP}: label_smoothing = {label_smoothing!r}: npusim models 0.0 only",
                         code=ACLNN_ERR_PARAM_INVALID)


def check_cross_entropy_loss(chip, input, target, weight=None, *, reduction="mean",
                             ignore_index=-100, label_smoothing=0.0) -> CeLossArgs:
    """Every rule of the document; returns the checked arrays."""
    require(OP, input=input, target=target)
    check_modelled_product(OP, chip, PRODUCTS)
    x, t = as_array(OP, "input", input), as_array(OP, "target", target)
    w = None if weight is None else as_array(OP, "weightOptional", weight)
    check_dtype(OP, "input", x, INPUT_DTYPES, chip)
    check_dtype(OP, "target", t, TARGET_DTYPES, chip)
    if w is not None:
        check_dtype(OP, "weightOptional", w, WEIGHT_DTYPES, chip)
    _check_shapes(x, t, w)
    _check_scalars(reduction, ignore_index, label_smoothing)
    return CeLossArgs(input=x, target=t, weight=w, reduction=reduction,
                      ignore_index=int(ignore_index))
