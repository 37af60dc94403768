"""aclnnSiluBackwardGetWorkspaceSize and aclnnSiluBackward."""

import numpy as np

from npusim.aclnn.runtime import array_of, current_chip, execute, two_phase
from npusim.ops.common import resolve_chip
from npusim.ops.silu.backward import OP, check_silu_backward, silu_backward


def aclnnSiluBackwardGetWorkspaceSize(gradOutput, self, gradInput):  # noqa: N802, N803
    """Check the arguments as the seed says; (status, workspace_size, executor)."""

    def prepare():
        chip = resolve_chip(current_chip())
        dy, x = (array_of(t) for t in (gradOutput, self))
        out = array_of(gradInput)
        check_silu_backward(chip, dy, x, out, has_output=True)

        def run():
            result = silu_backward(dy, x, chip=chip)
            np.copyto(out, result.outputs["gradInput"])
            return result

        return 0, run

    return two_phase(OP, prepare)


def aclnnSiluBackward(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    """Run the prepared SiluBackward; writes gradInput; returns the status."""
    return execute(OP, workspace, workspaceSize, executor, stream)
