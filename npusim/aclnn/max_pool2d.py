"""aclnnMaxPool2dWithIndices and aclnnMaxPool2dWithIndicesBackward, two-phase (A2; see
ops/pooling/max_args.py). kernelSize, stride, padding and dilation (aclIntArray) are Python
sequences. indices may be INT32 or INT64 for the forward (aclnn casts the kernel's int32 for an
INT64 tensor; npusim copies the values, the Cast kernel is not modelled)."""

import numpy as np

from npusim.aclnn.runtime import array_of, current_chip, execute, two_phase
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ParamError
from npusim.ops.common import require, resolve_chip
from npusim.ops.pooling.max_args import (
    OP_MAX,
    OP_MAX_GRAD,
    check_max_pool,
    check_max_pool_backward,
)
from npusim.ops.pooling.max_pool import max_pool2d_with_indices
from npusim.ops.pooling.max_pool_backward import max_pool2d_with_indices_backward


def _out(op: str, name: str, out, shape, dtypes):
    if tuple(out.shape) != tuple(shape) or out.dtype not in [np.dtype(d) for d in dtypes]:
        raise ParamError(f"{op}: {name} is {out.dtype} {tuple(out.shape)}; must be "
                         f"{' or '.join(map(str, dtypes))} {tuple(shape)}",
                         code=ACLNN_ERR_PARAM_INVALID)


def aclnnMaxPool2dWithIndicesGetWorkspaceSize(self, kernelSize, stride, padding,  # noqa: N802, N803, PLR0913
                                              dilation, ceilMode, out, indices):  # noqa: N803
    """Check the arguments; (status, workspace_size, executor)."""
    window = dict(kernel_size=kernelSize, stride=stride, padding=padding, dilation=dilation,
                  ceil_mode=ceilMode)

    def prepare():
        chip = resolve_chip(current_chip())
        require(OP_MAX, out=out, indices=indices)
        x, pool = check_max_pool(chip, array_of(self), **window)
        o, ind = array_of(out), array_of(indices)
        shape = (*pool.lead, *pool.out)
        _out(OP_MAX, "out", o, shape, (x.dtype,))
        _out(OP_MAX, "indices", ind, shape, ("int32", "int64"))

        def run():
            result = max_pool2d_with_indices(x, **window, chip=chip)
            np.copyto(o, result.outputs["out"])
            np.copyto(ind, result.outputs["indices"].astype(ind.dtype))
            return result

        return 0, run

    return two_phase(OP_MAX, prepare)


def aclnnMaxPool2dWithIndices(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    return execute(OP_MAX, workspace, workspaceSize, executor, stream)


def aclnnMaxPool2dWithIndicesBackwardGetWorkspaceSize(gradOutput, self, indices,  # noqa: N802, N803, PLR0913
                                                      kernelSize, stride, padding, dilation,  # noqa: N803
                                                      ceilMode, gradInput):  # noqa: N803
    """Check the arguments; (status, workspace_size, executor)."""
    window = dict(kernel_size=kernelSize, stride=stride, padding=padding, dilation=dilation,
                  ceil_mode=ceilMode)

    def prepare():
        chip = resolve_chip(current_chip())
        require(OP_MAX_GRAD, gradInput=gradInput)
        dy, x, ind, _ = check_max_pool_backward(chip, array_of(gradOutput), array_of(self),
                                                array_of(indices), **window)
        gi = array_of(gradInput)
        _out(OP_MAX_GRAD, "gradInput", gi, x.shape, (x.dtype,))

        def run():
            result = max_pool2d_with_indices_backward(dy, x, ind, **window, chip=chip)
            np.copyto(gi, result.outputs["gradInput"])
            return result

        return 0, run

    return two_phase(OP_MAX_GRAD, prepare)


def aclnnMaxPool2dWithIndicesBackward(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    return execute(OP_MAX_GRAD, workspace, workspaceSize, executor, stream)
