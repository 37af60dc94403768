"""The argument rules of aclnnMaxPool2dWithMask and aclnnMaxPool2dWithMaskBackward (hicann/ops-nn
``pooling/max_pool3d_with_argmax_v2/docs/aclnnMaxPool2dWithMask.md``, ``op_api/
aclnn_max_pool2d_with_indices.cpp`` (its isMask path), ``pooling/max_pool3d_grad_with_argmax/
docs/aclnnMaxPool2dWithMaskBackward.md`` and ``op_api/aclnn_max_pool2d_with_indices_backward.cpp``).

Products: npusim models the Atlas training series (CANN's 910 path: Cast FLOAT to FLOAT16,
TransData to NC1HWC0, the TBE kernels MaxPoolWithArgmaxV1 / MaxPoolGradWithArgmaxV1). CANN also
runs the operator on A2 (another path, not modelled: 161002 naming the product).

self (and gradOutput) 3-D (C, H, W) or 4-D (N, C, H, W), not None (161001); FLOAT16 or FLOAT
on the training series (no BFLOAT16), gradOutput of self's dtype. The window rules are those of
the indices operator (``max_args.check_window``: kernelSize 1 or 2 values > 0, stride 0, 1 or 2
values > 0, padding 1 or 2 values from 0 to kernelSize / 2, dilation 1, the output size > 0).
indices (backward) INT8 of aclnn's mask shape (N, C, kH x kW, (ceil(OH x OW / 16) + 1) x 32);
gradOutput of the pool's output shape (161002).
"""

import dataclasses

from npusim.dtypes import name_of
from npusim.ops.common import as_array, ceil_div, check_modelled_product, product_name, require
from npusim.ops.pooling.max_args import _self, check_window, invalid

OP_MASK = "aclnnMaxPool2dWithMask"
OP_MASK_GRAD = "aclnnMaxPool2dWithMaskBackward"
PRODUCTS = ("atlas-training",)
UNMODELLED = ("atlas-a2",)
DTYPES = ("float16", "float32")
C0 = 16


def mask_shape(pool) -> tuple:
    """aclnn's indices shape: (*lead, kH x kW, (ceil(OH x OW / 16) + 1) x 2 x 16), INT8."""
    words = (ceil_div(pool.out[0] * pool.out[1], C0) + 1) * C0
    return (*pool.lead, pool.kernel[0] * pool.kernel[1], 2 * words)


def planes_5hd(pool):
    """The pool with ``planes`` = N x C1 (the NC1HWC0 planes the kernels split)."""
    n = pool.planes // pool.lead[-1]
    return dataclasses.replace(pool, planes=n * ceil_div(pool.lead[-1], C0))


def _nonempty(op: str, x) -> None:
    if x.size == 0:
        raise invalid(op, f"self {tuple(x.shape)} is empty: npusim does not model aclnn's "
                          "empty-tensor path")


def check_max_pool_mask(chip, self_, kernel_size, stride, padding, dilation, ceil_mode):
    """(self, Pool) or the first rule broken."""
    require(OP_MASK, self=self_, kernelSize=kernel_size, stride=stride, padding=padding,
            dilation=dilation)
    check_modelled_product(OP_MASK, chip, PRODUCTS, UNMODELLED)
    x = _self(OP_MASK, chip, "self", self_, DTYPES)
    _nonempty(OP_MASK, x)
    return x, check_window(OP_MASK, x, kernel_size, stride, padding, dilation, ceil_mode)


def check_max_pool_mask_backward(chip, grad_output, self_, mask, kernel_size, stride, padding,
                                 dilation, ceil_mode):
    """(gradOutput, self, indices, Pool) or the first rule broken."""
    op = OP_MASK_GRAD
    require(op, gradOutput=grad_output, self=self_, indices=mask, kernelSize=kernel_size,
            stride=stride, padding=padding, dilation=dilation)
    check_modelled_product(op, chip, PRODUCTS, UNMODELLED)
    x = _self(op, chip, "self", self_, DTYPES)
    dy = _self(op, chip, "gradOutput", grad_output, DTYPES)
    if dy.dtype != x.dtype:
        raise invalid(op, f"gradOutput dtype {name_of(dy.dtype)} differs from self's "
                          f"{name_of(x.dtype)}; they must be the same")
    m = as_array(op, "indices", mask)
    if name_of(m.dtype) != "int8":
        raise invalid(op, f"indices dtype {name_of(m.dtype)}: INT8 (the mask) is supported on "
                          f"{chip.name} ({product_name(chip)})")
    _nonempty(op, x)
    pool = check_window(op, x, kernel_size, stride, padding, dilation, ceil_mode)
    want = (*pool.lead, *pool.out)
    if tuple(dy.shape) != want:
        raise invalid(op, f"gradOutput has shape {tuple(dy.shape)}; the pool of self "
                          f"{tuple(x.shape)} gives {want}")
    if tuple(m.shape) != mask_shape(pool):
        raise invalid(op, f"indices has shape {tuple(m.shape)}; the mask of that pool is "
                          f"{mask_shape(pool)}")
    return dy, x, m, pool
