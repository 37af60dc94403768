"""aclnnMoeTokenPermute, aclnnMoeTokenUnpermute and aclnnMoeTokenUnpermuteGrad, two-phase.

numOutTokens is a Python int (int64_t), paddedMode a bool; restoreShapeOptional must be None
(CANN supports only nullptr). The outputs are tensors of the shapes and dtypes the operators
produce. The workspace is the system workspace only, which npusim does not model: 0 bytes.
"""

import numpy as np

from npusim.aclnn.runtime import array_of, current_chip, execute, two_phase
from npusim.dtypes import name_of
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, ParamError
from npusim.ops.common import resolve_chip
from npusim.ops.moe import token_permute, token_unpermute, token_unpermute_grad


def _check_out(op: str, name: str, out, dtype, shape) -> None:
    if out is None:
        raise ParamError(f"{op}: {name} is None (a null pointer); a tensor is required",
                         code=ACLNN_ERR_PARAM_NULLPTR)
    if out.dtype != np.dtype(dtype) or tuple(out.shape) != tuple(shape):
        raise ParamError(f"{op}: {name} is {name_of(out.dtype)} {tuple(out.shape)}; it must be "
                         f"{name_of(np.dtype(dtype))} {tuple(shape)}", code=ACLNN_ERR_PARAM_INVALID)


def _no_restore_shape(op: str, restore_shape) -> None:
    if restore_shape is not None:
        raise ParamError(f"{op}: restoreShapeOptional = {restore_shape!r}: only None (nullptr) "
                         "is supported", code=ACLNN_ERR_PARAM_INVALID)


def _prepared(run_op, outputs: dict):
    """The run that copies each of ``outputs`` (name -> host array) out of the Result."""
    def run():
        result = run_op()
        for name, array in outputs.items():
            if array is not None and result.outputs.get(name) is not None:
                np.copyto(array, result.outputs[name])
        return result
    return 0, run


def aclnnMoeTokenPermuteGetWorkspaceSize(  # noqa: N802
        tokens, indices, numOutTokens, paddedMode, permuteTokensOut,  # noqa: N803
        sortedIndicesOut):  # noqa: N803
    """Check the arguments as the document says; (status, workspace_size, executor)."""
    op = token_permute.OP

    def prepare():
        chip = resolve_chip(current_chip())
        x, idx, top_k, rows = token_permute.check_moe_token_permute(
            chip, array_of(tokens), array_of(indices), numOutTokens, paddedMode)
        outs = {"permuteTokensOut": array_of(permuteTokensOut),
                "sortedIndicesOut": array_of(sortedIndicesOut)}
        _check_out(op, "permuteTokensOut", outs["permuteTokensOut"], x.dtype,
                   (rows, *x.shape[1:]))
        _check_out(op, "sortedIndicesOut", outs["sortedIndicesOut"], np.int32, (idx.size,))
        return _prepared(lambda: token_permute.moe_token_permute(
            x, idx, num_out_tokens=numOutTokens, chip=chip), outs)

    return two_phase(op, prepare)


def aclnnMoeTokenPermute(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    return execute(token_permute.OP, workspace, workspaceSize, executor, stream)


def aclnnMoeTokenUnpermuteGetWorkspaceSize(  # noqa: N802
        permutedTokens, sortedIndices, probsOptional, paddedMode,  # noqa: N803
        restoreShapeOptional, out):  # noqa: N803
    """Check the arguments as the document says; (status, workspace_size, executor)."""
    op = token_unpermute.OP

    def prepare():
        chip = resolve_chip(current_chip())
        x, idx, probs, top_k = token_unpermute.check_moe_token_unpermute(
            chip, array_of(permutedTokens), array_of(sortedIndices), array_of(probsOptional),
            paddedMode)
        _no_restore_shape(op, restoreShapeOptional)
        result = array_of(out)
        _check_out(op, "out", result, x.dtype, (idx.size // top_k, x.shape[1]))
        return _prepared(lambda: token_unpermute.moe_token_unpermute(x, idx, probs, chip=chip),
                         {"unpermutedTokens": result})

    return two_phase(op, prepare)


def aclnnMoeTokenUnpermute(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    return execute(token_unpermute.OP, workspace, workspaceSize, executor, stream)


def aclnnMoeTokenUnpermuteGradGetWorkspaceSize(  # noqa: N802
        permuteTokens, unpermutedTokensGrad, sortedIndices, probsOptional,  # noqa: N803
        paddedMode, restoreShapeOptional, permutedTokensGradOut, probsGradOut):  # noqa: N803
    """Check the arguments as the document says; (status, workspace_size, executor). Without
    probs, probsGradOut may be None (nothing is written to it)."""
    op = token_unpermute_grad.OP

    def prepare():
        chip = resolve_chip(current_chip())
        x, grad, idx, probs, _ = token_unpermute_grad.check_moe_token_unpermute_grad(
            chip, array_of(permuteTokens), array_of(unpermutedTokensGrad),
            array_of(sortedIndices), array_of(probsOptional), paddedMode)
        _no_restore_shape(op, restoreShapeOptional)
        outs = {"permutedTokensGradOut": array_of(permutedTokensGradOut),
                "probsGradOut": array_of(probsGradOut)}
        _check_out(op, "permutedTokensGradOut", outs["permutedTokensGradOut"], x.dtype, x.shape)
        if probs is not None:
            _check_out(op, "probsGradOut", outs["probsGradOut"], probs.dtype, probs.shape)
        return _prepared(lambda: token_unpermute_grad.moe_token_unpermute_grad(
            x, grad, idx, probs, chip=chip), outs)

    return two_phase(op, prepare)


def aclnnMoeTokenUnpermuteGrad(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    return execute(token_unpermute_grad.OP, workspace, workspaceSize, executor, stream)
