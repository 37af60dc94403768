"""aclnnLogSoftmax, aclnnLogSoftmaxBackward, aclnnNLLLoss and aclnnNLLLossBackward, two-phase
(the training series; see ops/cross_entropy/nll_args.py)."""

import numpy as np

from npusim.aclnn.max_pool2d import _out
from npusim.aclnn.runtime import array_of, current_chip, execute, two_phase
from npusim.ops.common import require, resolve_chip
from npusim.ops.cross_entropy.log_softmax import log_softmax, log_softmax_backward
from npusim.ops.cross_entropy.nll_args import (
    OP_LSM,
    OP_LSM_GRAD,
    OP_NLL,
    OP_NLL_GRAD,
    check_log_softmax,
    check_log_softmax_backward,
    check_nll_loss,
    check_nll_loss_backward,
)
from npusim.ops.cross_entropy.nll_loss import nll_loss, nll_loss_backward


def _two_phase(op: str, check, call, outs: dict):
    """check() -> (args, kwargs, {output name: (array, shape, dtypes)}); call runs the op."""

    def prepare():
        chip = resolve_chip(current_chip())
        require(op, **{name: spec for name, spec in outs.items()})
        args, kwargs, wants = check(chip)
        for name, (arr, shape, dtypes) in wants.items():
            _out(op, name, arr, shape, dtypes)

        def run():
            result = call(*args, **kwargs, chip=chip)
            for name, (arr, _, _) in wants.items():
                np.copyto(arr, result.outputs[name].reshape(arr.shape))
            return result

        return 0, run

    return two_phase(op, prepare)


def aclnnLogSoftmaxGetWorkspaceSize(self, dim, out):  # noqa: N802
    def check(chip):
        x = check_log_softmax(chip, array_of(self), dim)
        return (x, dim), {}, {"out": (array_of(out), x.shape, (x.dtype,))}
    return _two_phase(OP_LSM, check, log_softmax, {"out": out})


def aclnnLogSoftmax(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    return execute(OP_LSM, workspace, workspaceSize, executor, stream)


def aclnnLogSoftmaxBackwardGetWorkspaceSize(gradOutput, output, dim, out):  # noqa: N802, N803
    def check(chip):
        g, y = check_log_softmax_backward(chip, array_of(gradOutput), array_of(output), dim)
        return (g, y, dim), {}, {"out": (array_of(out), g.shape, (g.dtype,))}
    return _two_phase(OP_LSM_GRAD, check, log_softmax_backward, {"out": out})


def aclnnLogSoftmaxBackward(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    return execute(OP_LSM_GRAD, workspace, workspaceSize, executor, stream)


def aclnnNLLLossGetWorkspaceSize(self, target, weight, reduction, ignoreIndex, out,  # noqa: N802, N803, PLR0913
                                 totalWeightOut):  # noqa: N803
    def check(chip):
        a = check_nll_loss(chip, array_of(self), array_of(target), array_of(weight), reduction,
                           ignoreIndex)
        shape = (a.self_.shape[0],) if a.reduction == "none" else (1,)
        return ((a.self_, a.target, a.weight, reduction, ignoreIndex), {},
                {"out": (array_of(out), shape, ("float32",)),
                 "totalWeightOut": (array_of(totalWeightOut), (1,), ("float32",))})
    return _two_phase(OP_NLL, check, nll_loss, {"out": out, "totalWeightOut": totalWeightOut})


def aclnnNLLLoss(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    return execute(OP_NLL, workspace, workspaceSize, executor, stream)


def aclnnNLLLossBackwardGetWorkspaceSize(gradOutput, self, target, weight, reduction,  # noqa: N802, N803, PLR0913
                                         ignoreIndex, totalWeight, out):  # noqa: N803
    def check(chip):
        g, tw, a = check_nll_loss_backward(chip, array_of(gradOutput), array_of(self),
                                           array_of(target), array_of(weight), reduction,
                                           ignoreIndex, array_of(totalWeight))
        return ((g, a.self_, a.target, a.weight, reduction, ignoreIndex, tw), {},
                {"out": (array_of(out), a.self_.shape, ("float32",))})
    return _two_phase(OP_NLL_GRAD, check, nll_loss_backward, {"out": out})


def aclnnNLLLossBackward(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    return execute(OP_NLL_GRAD, workspace, workspaceSize, executor, stream)
