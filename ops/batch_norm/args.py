"""The argument rules of aclnnBatchNorm and aclnnBatchNormBackward (hicann/ops-nn
``norm/batch_norm_v3/op_host/op_api/aclnn_batch_norm.cpp``,
``norm/batch_norm_grad_v3/op_host/op_api/aclnn_batch_norm_backward.cpp`` and their docs).

Both: the activations (input; gradOut and input) not None (161001); 2 to 8 dims, the channel
axis 1; FLOAT16 or FLOAT, also BFLOAT16 on A2 (ASCEND910B), the same dtype and shape for
gradOut and input; weight, bias, running_mean, running_var, save_mean, save_invstd 1-D of C
(161002). They may be None: aclnn fills them with 1 (weight, running_var, save_invstd) or 0 (the
others) by a Fill kernel, which npusim does not model (it places the values).

What npusim models, refused with 161002 otherwise: training mode (aclnn's BNInfer and
BNInferGrad kernels are not modelled); 2-D to 4-D activations (aclnn views 2-D and 3-D ones as
(N, C, L, 1)-shaped NCHW; 5-D runs the BN3D kernels); per-channel tensors in FLOAT (aclnn casts
others to FLOAT by a Cast kernel, not modelled), as a mixed-precision step keeps them; and at
least two values per channel (N x H x W > 1: torch's rule; the running variance is unbiased by
M / (M - 1)).
"""

import numbers
from dataclasses import dataclass

import numpy as np

from npusim.dtypes import name_of
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ParamError
from npusim.ops.common import as_array, check_modelled_product, product_name, require

OP_FWD = "aclnnBatchNorm"
OP_BWD = "aclnnBatchNormBackward"
PRODUCTS = ("atlas-training", "atlas-a2")
DTYPES = {"atlas-training": ("float16", "float32"),
          "atlas-a2": ("bfloat16", "float16", "float32")}


@dataclass(frozen=True)
class Activation:
    """An activation viewed as (N, C, H, W) and the shape to give back."""

    array: np.ndarray
    nchw: tuple
    shape: tuple


def invalid(op: str, message: str) -> ParamError:
    return ParamError(f"{op}: {message}", code=ACLNN_ERR_PARAM_INVALID)


def activation(op: str, chip, name: str, value) -> Activation:
    arr = as_array(op, name, value)
    if not 2 <= arr.ndim <= 8:
        raise invalid(op, f"{name} has {arr.ndim} dims {tuple(arr.shape)}; allowed 2 to 8")
    if arr.ndim > 4:
        raise invalid(op, f"{name} has {arr.ndim} dims {tuple(arr.shape)}: npusim models 2 to 4 "
                          "(5 and more run CANN's BN3D kernels, not modelled)")
    got, allowed = name_of(arr.dtype), DTYPES[chip.product]
    if got not in allowed:
        raise invalid(op, f"{name} dtype {got} is not supported on {chip.name} "
                          f"({product_name(chip)}); allowed: {', '.join(allowed)}")
    nchw = tuple(arr.shape) + (1,) * (4 - arr.ndim)
    return Activation(arr, nchw, tuple(arr.shape))


def channel_tensor(op: str, name: str, value, channels: int, fill: float) -> np.ndarray:
    """The per-channel tensor as fp32 (None: ``fill``, as aclnn's Fill would)."""
    if value is None:
        return np.full(channels, fill, np.float32)
    arr = as_array(op, name, value)
    if arr.ndim != 1 or arr.shape[0] != channels:
        raise invalid(op, f"{name} has shape {tuple(arr.shape)}; it must be 1-D of the "
                          f"channel count C = {channels}")
    if name_of(arr.dtype) != "float32":
        raise invalid(op, f"{name} dtype {name_of(arr.dtype)}: npusim models float32 "
                          "per-channel tensors (aclnn casts others to float32 by a Cast kernel, "
                          "not modelled)")
    return np.ascontiguousarray(arr)


def check_training(op: str, training) -> None:
    if training is not True:
        raise invalid(op, f"training = {training!r}: npusim models training mode (True) only; "
                          "inference runs CANN's BNInfer / BNInferGrad kernels, not modelled")


def check_float(op: str, name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise invalid(op, f"{name} = {value!r}: a finite real number is required")
    return float(value)


def check_count(op: str, nchw: tuple) -> int:
    n, _, h, w = nchw
    count = n * h * w
    if count <= 1 and nchw[1] > 0:
        raise invalid(op, f"input {nchw} has {count} value per channel: training needs more "
                          "than 1 (N x H x W > 1)")
    return count


def check_batch_norm(chip, x, weight, bias, running_mean, running_var, training, momentum,
                     eps) -> tuple:
    """(activation, [weight, bias, running_mean, running_var] fp32, momentum, eps)."""
    require(OP_FWD, input=x)
    check_modelled_product(OP_FWD, chip, PRODUCTS)
    check_training(OP_FWD, training)
    act = activation(OP_FWD, chip, "input", x)
    c = act.nchw[1]
    chans = [channel_tensor(OP_FWD, name, v, c, fill) for name, v, fill in (
        ("weight", weight, 1.0), ("bias", bias, 0.0), ("running_mean", running_mean, 0.0),
        ("running_var", running_var, 1.0))]
    mom, e = check_float(OP_FWD, "momentum", momentum), check_float(OP_FWD, "eps", eps)
    if act.array.size:
        check_count(OP_FWD, act.nchw)
    return act, chans, mom, e


def check_mask(op: str, output_mask) -> tuple:
    try:
        mask = tuple(output_mask)
    except TypeError:
        mask = ()
    if len(mask) != 3 or not all(isinstance(m, bool | np.bool_) for m in mask):
        raise invalid(op, f"output_mask = {output_mask!r}: three booleans (gradInput, "
                          "gradWeight, gradBias) are required")
    return tuple(bool(m) for m in mask)


def check_batch_norm_backward(chip, grad_out, x, weight, running_mean, running_var, save_mean,
                              save_invstd, training, eps, output_mask) -> tuple:
    """(gradOut, input activations, [weight, save_mean, save_invstd] fp32, eps, mask)."""
    require(OP_BWD, gradOut=grad_out, input=x)
    check_modelled_product(OP_BWD, chip, PRODUCTS)
    check_training(OP_BWD, training)
    dy, act = activation(OP_BWD, chip, "gradOut", grad_out), activation(OP_BWD, chip, "input", x)
    if dy.array.dtype != act.array.dtype or dy.shape != act.shape:
        raise invalid(OP_BWD, f"gradOut {name_of(dy.array.dtype)} {dy.shape} and input "
                              f"{name_of(act.array.dtype)} {act.shape} must have the same dtype "
                              "and shape")
    c = act.nchw[1]
    for name, v, fill in (("running_mean", running_mean, 0.0), ("running_var", running_var, 1.0)):
        channel_tensor(OP_BWD, name, v, c, fill)     # checked; training mode does not read them
    chans = [channel_tensor(OP_BWD, name, v, c, fill) for name, v, fill in (
        ("weight", weight, 1.0), ("save_mean", save_mean, 0.0),
        ("save_invstd", save_invstd, 1.0))]
    e = check_float(OP_BWD, "eps", eps)
    mask = check_mask(OP_BWD, output_mask)
    if act.array.size:
        check_count(OP_BWD, act.nchw)
    return dy, act, chans, e, mask
