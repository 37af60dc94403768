"""aclnnRelu, aclnnThresholdBackward and aclnnAdd, two-phase. The aclScalar arguments
(threshold, alpha) are Python numbers here."""

import numpy as np

from npusim.aclnn.runtime import array_of, current_chip, execute, two_phase
from npusim.ops.common import resolve_chip
from npusim.ops.elementwise.args import check_add, check_relu, check_threshold_backward
from npusim.ops.elementwise.operators import (
    ADD,
    RELU,
    THRESHOLD,
    add,
    add_plan,
    relu,
    threshold_backward,
)


def _prepare(check, op, outputs_key, out_tensor, tensors: tuple, scalars: tuple = (),
             workspace=lambda *a: 0):
    def prepare():
        chip = resolve_chip(current_chip())
        arrays = (*(array_of(t) for t in tensors), *scalars)
        out = array_of(out_tensor)
        checked = check(chip, *arrays, out, has_output=True)

        def run():
            result = op(*arrays, chip=chip)
            np.copyto(out, result.outputs[outputs_key])
            return result

        return workspace(checked), run

    return prepare


def aclnnReluGetWorkspaceSize(self, out):  # noqa: N802
    """Check the arguments as the document says; (status, workspace_size, executor)."""
    return two_phase(RELU, _prepare(check_relu, relu, "out", out, (self,)))


def aclnnRelu(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    return execute(RELU, workspace, workspaceSize, executor, stream)


def aclnnThresholdBackwardGetWorkspaceSize(gradOutput, self, threshold, out):  # noqa: N802, N803
    """Check the arguments as the document says; (status, workspace_size, executor)."""
    return two_phase(THRESHOLD, _prepare(check_threshold_backward, threshold_backward,
                                         "gradInput", out, (gradOutput, self), (threshold,)))


def aclnnThresholdBackward(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    return execute(THRESHOLD, workspace, workspaceSize, executor, stream)


def _add_workspace(checked) -> int:
    a, _, alpha = checked
    return a.nbytes if len(add_plan(a.dtype, alpha)) == 2 else 0


def aclnnAddGetWorkspaceSize(self, other, alpha, out):  # noqa: N802
    """Check the arguments as the document says; (status, workspace_size, executor); the
    workspace holds alpha * other on the bf16 path (Mul, then Add)."""
    return two_phase(ADD, _prepare(check_add, add, "out", out, (self, other), (alpha,),
                                   _add_workspace))


def aclnnAdd(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    return execute(ADD, workspace, workspaceSize, executor, stream)
