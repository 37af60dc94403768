"""aclnnAdaptiveAvgPool2d and aclnnAdaptiveAvgPool2dBackward, two-phase (outputSize (1, 1); see
ops/pooling/args.py). outputSize (an aclIntArray) is a Python sequence here."""

import numpy as np

from npusim.aclnn.runtime import array_of, current_chip, execute, two_phase
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, ParamError
from npusim.ops.common import resolve_chip
from npusim.ops.pooling.adaptive_avg import OP, adaptive_avg_pool2d
from npusim.ops.pooling.adaptive_avg_backward import OP as BACKWARD
from npusim.ops.pooling.adaptive_avg_backward import adaptive_avg_pool2d_backward
from npusim.ops.pooling.args import check_adaptive_avg_pool2d, check_adaptive_avg_pool2d_backward


def _out(op: str, tensor, shape, dtype):
    out = array_of(tensor)
    if out is None:
        raise ParamError(f"{op}: out is None (a null pointer); a tensor is required",
                         code=ACLNN_ERR_PARAM_NULLPTR)
    if tuple(out.shape) != tuple(shape) or out.dtype != dtype:
        raise ParamError(f"{op}: out {out.dtype} {tuple(out.shape)}; expected {dtype} "
                         f"{tuple(shape)}", code=ACLNN_ERR_PARAM_INVALID)
    return out


def aclnnAdaptiveAvgPool2dGetWorkspaceSize(self, outputSize, out):  # noqa: N802, N803
    """Check the arguments as the document says; (status, workspace_size, executor)."""

    def prepare():
        chip = resolve_chip(current_chip())
        x, _ = check_adaptive_avg_pool2d(chip, array_of(self), outputSize)
        o = _out(OP, out, (*x.shape[:-2], 1, 1), x.dtype)

        def run():
            result = adaptive_avg_pool2d(x, outputSize, chip=chip)
            np.copyto(o, result.outputs["out"])
            return result

        return 0, run

    return two_phase(OP, prepare)


def aclnnAdaptiveAvgPool2d(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    return execute(OP, workspace, workspaceSize, executor, stream)


def aclnnAdaptiveAvgPool2dBackwardGetWorkspaceSize(gradOutput, self, out):  # noqa: N802, N803
    """Check the arguments; (status, workspace_size, executor): the workspace holds Fill's
    self-sized tensor."""

    def prepare():
        chip = resolve_chip(current_chip())
        dy, x, _ = check_adaptive_avg_pool2d_backward(chip, array_of(gradOutput),
                                                      array_of(self))
        o = _out(BACKWARD, out, x.shape, x.dtype)

        def run():
            result = adaptive_avg_pool2d_backward(dy, x, chip=chip)
            np.copyto(o, result.outputs["out"])
            return result

        return x.nbytes, run

    return two_phase(BACKWARD, prepare)


def aclnnAdaptiveAvgPool2dBackward(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    return execute(BACKWARD, workspace, workspaceSize, executor, stream)
