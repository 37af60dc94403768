"""aclnnBatchNorm and aclnnBatchNormBackward, two-phase (training mode; see
ops/batch_norm/args.py). The outputs are tensors of the caller's; as aclnn does, the forward
writes the updated running statistics back into runningMean and runningVar. outputMask (an
aclBoolArray) is a Python sequence; an output the mask leaves out may be None."""

import numpy as np

from npusim.aclnn.runtime import array_of, current_chip, execute, two_phase
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ParamError
from npusim.ops.batch_norm.args import (
    OP_BWD,
    OP_FWD,
    check_batch_norm,
    check_batch_norm_backward,
)
from npusim.ops.batch_norm.backward import batch_norm_backward
from npusim.ops.batch_norm.forward import batch_norm
from npusim.ops.common import require, resolve_chip


def _out(op: str, name: str, out, shape, dtype):
    if tuple(out.shape) != tuple(shape) or out.dtype != np.dtype(dtype):
        raise ParamError(f"{op}: {name} is {out.dtype} {tuple(out.shape)}; must be "
                         f"{np.dtype(dtype)} {tuple(shape)}", code=ACLNN_ERR_PARAM_INVALID)


def aclnnBatchNormGetWorkspaceSize(input, weight, bias, runningMean, runningVar,  # noqa: N802, A002, N803, PLR0913
                                   training, momentum, eps, output, saveMean, saveInvstd):  # noqa: N803
    """Check the arguments; (status, workspace_size, executor)."""

    def prepare():
        chip = resolve_chip(current_chip())
        require(OP_FWD, output=output, saveMean=saveMean, saveInvstd=saveInvstd)
        x, w, b, rm, rv = (array_of(t) for t in (input, weight, bias, runningMean, runningVar))
        act, _, _, _ = check_batch_norm(chip, x, w, b, rm, rv, training, momentum, eps)
        outs = [array_of(t) for t in (output, saveMean, saveInvstd)]
        _out(OP_FWD, "output", outs[0], act.shape, act.array.dtype)
        for name, o in zip(("saveMean", "saveInvstd"), outs[1:], strict=True):
            _out(OP_FWD, name, o, (act.nchw[1],), np.float32)
        kw = dict(training=training, momentum=momentum, eps=eps, chip=chip)
        probe = batch_norm(x, w, b, rm, rv, numerics=False, trace=False, sanitize=False, **kw)

        def run():
            result = batch_norm(x, w, b, rm, rv, **kw)
            for name, o in zip(("output", "saveMean", "saveInvstd", "runningMean",
                                "runningVar"), (*outs, rm, rv), strict=True):
                if o is not None:
                    np.copyto(o, result.outputs[name])
            return result

        return probe.workspace_bytes, run

    return two_phase(OP_FWD, prepare)


def aclnnBatchNorm(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    return execute(OP_FWD, workspace, workspaceSize, executor, stream)


def aclnnBatchNormBackwardGetWorkspaceSize(gradOut, input, weight, runningMean,  # noqa: N802, A002, N803, PLR0913
                                           runningVar, saveMean, saveInvstd, training, eps,  # noqa: N803
                                           outputMask, gradInput, gradWeight, gradBias):  # noqa: N803
    """Check the arguments; (status, workspace_size, executor)."""

    def prepare():
        chip = resolve_chip(current_chip())
        args = [array_of(t) for t in (gradOut, input, weight, runningMean, runningVar, saveMean,
                                      saveInvstd)]
        _, act, _, _, mask = check_batch_norm_backward(chip, *args, training, eps, outputMask)
        outs = [array_of(t) for t in (gradInput, gradWeight, gradBias)]
        names = ("gradInput", "gradWeight", "gradBias")
        c = act.nchw[1]
        for name, o, on, (shape, dtype) in zip(names, outs, mask, (
                (act.shape, act.array.dtype), ((c,), np.float32), ((c,), np.float32)),
                strict=True):
            if on:
                require(OP_BWD, **{name: o})
                _out(OP_BWD, name, o, shape, dtype)
        kw = dict(training=training, eps=eps, output_mask=outputMask, chip=chip)
        probe = batch_norm_backward(*args, numerics=False, trace=False, sanitize=False, **kw)

        def run():
            result = batch_norm_backward(*args, **kw)
            for name, o in zip(names, outs, strict=True):
                if result.outputs[name] is not None:
                    np.copyto(o, result.outputs[name])
            return result

        return probe.workspace_bytes, run

    return two_phase(OP_BWD, prepare)


def aclnnBatchNormBackward(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    return execute(OP_BWD, workspace, workspaceSize, executor, stream)
