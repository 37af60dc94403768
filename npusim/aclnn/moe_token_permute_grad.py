"""aclnnMoeTokenPermuteGradGetWorkspaceSize and aclnnMoeTokenPermuteGrad.

numTopk is a Python int (int64_t), paddedModeOptional a bool; out is the output tensor. The
workspace is the system workspace only, which npusim does not model: 0 bytes.
"""

import numpy as np

from npusim.aclnn.runtime import array_of, current_chip, execute, two_phase
from npusim.ops.common import resolve_chip
from npusim.ops.moe.token_permute_grad import (
    OP,
    check_moe_token_permute_grad,
    moe_token_permute_grad,
)


def aclnnMoeTokenPermuteGradGetWorkspaceSize(  # noqa: N802
        permutedOutputGrad, sortedIndices, numTopk, paddedModeOptional, out):  # noqa: N803
    """Check the arguments as the seed says; (status, workspace_size, executor)."""

    def prepare():
        chip = resolve_chip(current_chip())
        grad, indices, result = (array_of(t) for t in (permutedOutputGrad, sortedIndices, out))
        grad, indices, topk = check_moe_token_permute_grad(
            chip, grad, indices, numTopk, paddedModeOptional, result, has_output=True)

        def run():
            r = moe_token_permute_grad(grad, indices, num_topk=topk, chip=chip)
            np.copyto(result, r.outputs["out"])
            return r

        return 0, run

    return two_phase(OP, prepare)


def aclnnMoeTokenPermuteGrad(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    """Run the prepared MoeTokenPermuteGrad; writes out; returns the status."""
    return execute(OP, workspace, workspaceSize, executor, stream)
