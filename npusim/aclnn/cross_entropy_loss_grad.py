"""aclnnCrossEntropyLossGradGetWorkspaceSize and aclnnCrossEntropyLossGrad.

Phase one checks the arguments as the seed says and computes the tiling, whose workspace (one
fp32 partial per core for reduction mean) is the workspace size; phase two runs the kernel and
writes xGradOut. reduction is a string ("none", "mean", "sum"), as the C API's ``const char*``.
"""

import numpy as np

from npusim.aclnn.runtime import array_of, current_chip, execute, two_phase
from npusim.ops.common import resolve_chip
from npusim.ops.cross_entropy.args import check_cross_entropy_loss_grad
from npusim.ops.cross_entropy.loss_grad import (
    OP,
    cross_entropy_loss_grad,
    plan,
    workspace_bytes,
)


def aclnnCrossEntropyLossGradGetWorkspaceSize(  # noqa: N802, PLR0913
        gradLoss, logProb, target, weightOptional, gradZlossOptional,  # noqa: N803
        lseForZlossOptional, reduction, ignoreIndex, labelSmoothing,  # noqa: N803
        lseSquareScaleForZloss, xGradOut):  # noqa: N803
    """Check the arguments as the seed says; (status, workspace_size, executor)."""
    def prepare():
        chip = resolve_chip(current_chip())
        params = dict(grad_zloss=array_of(gradZlossOptional),
                      lse_for_zloss=array_of(lseForZlossOptional), reduction=reduction,
                      ignore_index=ignoreIndex, label_smoothing=labelSmoothing,
                      lse_square_scale_for_zloss=lseSquareScaleForZloss)
        g, lp, tgt = (array_of(t) for t in (gradLoss, logProb, target))
        w = array_of(weightOptional)
        out = array_of(xGradOut)
        args = check_cross_entropy_loss_grad(chip, g, lp, tgt, w, x_grad=out, has_output=True,
                                             **params)
        size = workspace_bytes(plan(chip, args), args.reduction)

        def run():
            result = cross_entropy_loss_grad(g, lp, tgt, w, chip=chip, **params)
            np.copyto(out, result.outputs["xGradOut"])
            return result

        return size, run

    return two_phase(OP, prepare)


def aclnnCrossEntropyLossGrad(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    """Run the prepared CrossEntropyLossGrad; writes xGradOut; returns the status."""
    return execute(OP, workspace, workspaceSize, executor, stream)
