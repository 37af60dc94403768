"""aclnnMatmulGetWorkspaceSize and aclnnMatmul (2-D, Atlas A2 and the Atlas training series; see
ops/matmul/args.py)."""

import numpy as np

from npusim.aclnn.runtime import array_of, current_chip, execute, two_phase
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, ParamError
from npusim.ops.common import resolve_chip
from npusim.ops.matmul.args import OP, check_matmul
from npusim.ops.matmul.operator import matmul
from npusim.ops.matmul.training import workspace_bytes


def aclnnMatmulGetWorkspaceSize(self, mat2, out, cubeMathType):  # noqa: N802, N803
    """Check the arguments as the document says; (status, workspace_size, executor); the
    workspace holds the fp16 copies on the float32 path (and on the training series the
    FRACTAL_NZ operands and result)."""

    def prepare():
        chip = resolve_chip(current_chip())
        a, b, o = array_of(self), array_of(mat2), array_of(out)
        if o is None:
            raise ParamError(f"{OP}: out is None (a null pointer); a tensor is required",
                             code=ACLNN_ERR_PARAM_NULLPTR)
        a, b, _ = check_matmul(chip, a, b, cubeMathType)
        if o.shape != (a.shape[0], b.shape[1]) or o.dtype != a.dtype:
            raise ParamError(f"{OP}: out {o.dtype} {tuple(o.shape)}; self @ mat2 is {a.dtype} "
                             f"{(a.shape[0], b.shape[1])}", code=ACLNN_ERR_PARAM_INVALID)
        size = 2 * (a.size + b.size + o.size) if a.dtype != np.float16 and a.size else 0
        if chip.product == "atlas-training":
            size = workspace_bytes(a, b) if a.size and b.size else 0

        def run():
            result = matmul(a, b, cube_math_type=cubeMathType, chip=chip)
            np.copyto(o, result.outputs["out"])
            return result

        return size, run

    return two_phase(OP, prepare)


def aclnnMatmul(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    """Run the prepared MatMul; writes out; returns the status."""
    return execute(OP, workspace, workspaceSize, executor, stream)
