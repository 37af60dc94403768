"""aclnnMaxPool2dWithMask and aclnnMaxPool2dWithMaskBackward, two-phase (the training series;
see ops/pooling/mask_args.py). kernelSize, stride, padding and dilation (aclIntArray) are Python
sequences; indices is the INT8 mask of aclnn's shape (N, C, kH x kW, (ceil(OH x OW / 16) + 1) x
32)."""

import numpy as np

from npusim.aclnn.max_pool2d import _out
from npusim.aclnn.runtime import array_of, current_chip, execute, two_phase
from npusim.ops.common import require, resolve_chip
from npusim.ops.pooling.mask_args import (
    OP_MASK,
    OP_MASK_GRAD,
    check_max_pool_mask,
    check_max_pool_mask_backward,
    mask_shape,
)
from npusim.ops.pooling.max_pool_mask import max_pool2d_with_mask
from npusim.ops.pooling.max_pool_mask_backward import max_pool2d_with_mask_backward


def aclnnMaxPool2dWithMaskGetWorkspaceSize(self, kernelSize, stride, padding,  # noqa: N802, N803, PLR0913
                                           dilation, ceilMode, out, indices):  # noqa: N803
    """Check the arguments; (status, workspace_size, executor)."""
    window = dict(kernel_size=kernelSize, stride=stride, padding=padding, dilation=dilation,
                  ceil_mode=ceilMode)

    def prepare():
        chip = resolve_chip(current_chip())
        require(OP_MASK, out=out, indices=indices)
        x, pool = check_max_pool_mask(chip, array_of(self), **window)
        o, ind = array_of(out), array_of(indices)
        _out(OP_MASK, "out", o, (*pool.lead, *pool.out), (x.dtype,))
        _out(OP_MASK, "indices", ind, mask_shape(pool), ("int8",))

        def run():
            result = max_pool2d_with_mask(x, **window, chip=chip)
            np.copyto(o, result.outputs["out"])
            np.copyto(ind, result.outputs["indices"])
            return result

        return 0, run

    return two_phase(OP_MASK, prepare)


def aclnnMaxPool2dWithMask(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    return execute(OP_MASK, workspace, workspaceSize, executor, stream)


def aclnnMaxPool2dWithMaskBackwardGetWorkspaceSize(gradOutput, self, indices,  # noqa: N802, N803, PLR0913
                                                   kernelSize, stride, padding, dilation,  # noqa: N803
                                                   ceilMode, gradInput):  # noqa: N803
    """Check the arguments; (status, workspace_size, executor)."""
    window = dict(kernel_size=kernelSize, stride=stride, padding=padding, dilation=dilation,
                  ceil_mode=ceilMode)

    def prepare():
        chip = resolve_chip(current_chip())
        require(OP_MASK_GRAD, gradInput=gradInput)
        dy, x, m, _ = check_max_pool_mask_backward(chip, array_of(gradOutput), array_of(self),
                                                   array_of(indices), **window)
        gi = array_of(gradInput)
        _out(OP_MASK_GRAD, "gradInput", gi, x.shape, (x.dtype,))

        def run():
            result = max_pool2d_with_mask_backward(dy, x, m, **window, chip=chip)
            np.copyto(gi, result.outputs["gradInput"])
            return result

        return 0, run

    return two_phase(OP_MASK_GRAD, prepare)


def aclnnMaxPool2dWithMaskBackward(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    return execute(OP_MASK_GRAD, workspace, workspaceSize, executor, stream)
