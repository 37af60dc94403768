"""aclnnConvolutionBackwardGetWorkspaceSize and aclnnConvolutionBackward;
aclnnConvolutionGetWorkspaceSize and aclnnConvolution (the forward).

The int and bool arrays (biasSizes, stride, padding, dilation, outputPadding, outputMask) are
Python sequences (aclIntArray / aclBoolArray); None is a null pointer (161001). gradInput,
gradWeight and gradBias are the output tensors; one the mask does not ask for may be None.
"""

import numpy as np

from npusim.aclnn.runtime import array_of, current_chip, execute, two_phase
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ParamError
from npusim.ops.common import require, resolve_chip
from npusim.ops.convolution.args import OP, check_convolution_backward
from npusim.ops.convolution.backward import convolution_backward
from npusim.ops.convolution.forward import convolution
from npusim.ops.convolution.forward_args import OP as FORWARD
from npusim.ops.convolution.forward_args import check_convolution

OUTPUTS = ("gradInput", "gradWeight", "gradBias")


def aclnnConvolutionBackwardGetWorkspaceSize(  # noqa: N802, PLR0913
        gradOutput, input, weight, biasSizes, stride, padding, dilation,  # noqa: A002, N803
        transposed, outputPadding, groups, outputMask, cubeMathType, gradInput,  # noqa: N803
        gradWeight, gradBias):  # noqa: N803
    """Check the arguments as the seed says; (status, workspace_size, executor)."""
    params = dict(bias_sizes=biasSizes, stride=stride, padding=padding, dilation=dilation,
                  transposed=transposed, output_padding=outputPadding, groups=groups,
                  output_mask=outputMask, cube_math_type=cubeMathType)

    def prepare():
        chip = resolve_chip(current_chip())
        dy, x, w = (array_of(t) for t in (gradOutput, input, weight))
        outs = [array_of(t) for t in (gradInput, gradWeight, gradBias)]
        require(OP, gradInput=gradInput, gradWeight=gradWeight, gradBias=gradBias)
        spec = check_convolution_backward(chip, dy, x, w, **params)
        _check_outputs(spec, outs)
        probe = convolution_backward(dy, x, w, chip=chip, numerics=False, trace=False,
                                     sanitize=False, **params)

        def run():
            result = convolution_backward(dy, x, w, chip=chip, **params)
            for name, out in zip(OUTPUTS, outs, strict=True):
                if result.outputs[name] is not None:
                    np.copyto(out, result.outputs[name])
            return result

        return probe.workspace_bytes, run

    return two_phase(OP, prepare)


def _check_outputs(spec, outs) -> None:
    wants = ((spec.input.shape, spec.dx_dtype), (spec.weight.shape, spec.dw_dtype),
             ((spec.cout,), spec.grad_output.dtype))
    for name, out, (shape, dtype), asked in zip(OUTPUTS, outs, wants, spec.mask, strict=True):
        if asked and (tuple(out.shape) != tuple(shape) or out.dtype != np.dtype(dtype)):
            raise ParamError(f"{OP}: {name} is {out.dtype} {tuple(out.shape)}; must be "
                             f"{np.dtype(dtype)} {tuple(shape)}", code=ACLNN_ERR_PARAM_INVALID)


def aclnnConvolutionBackward(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    """Run the prepared ConvolutionBackward; writes the outputs; returns the status."""
    return execute(OP, workspace, workspaceSize, executor, stream)


def aclnnConvolutionGetWorkspaceSize(  # noqa: N802, PLR0913
        input, weight, bias, stride, padding, dilation, transposed,  # noqa: A002
        outputPadding, groups, output, cubeMathType):  # noqa: N803
    """aclnnConvolution's phase one: the forward's rules (``ops/convolution/forward_args.py``)
    and the output tensor's shape and dtype; (status, workspace_size, executor)."""
    params = dict(stride=stride, padding=padding, dilation=dilation, transposed=transposed,
                  output_padding=outputPadding, groups=groups, cube_math_type=cubeMathType)

    def prepare():
        chip = resolve_chip(current_chip())
        x, w, b, out = (array_of(t) for t in (input, weight, bias, output))
        require(FORWARD, output=output)
        spec = check_convolution(chip, x, w, b, **params)
        if tuple(out.shape) != spec.out_shape or out.dtype != np.dtype(spec.out_dtype):
            raise ParamError(f"{FORWARD}: output is {out.dtype} {tuple(out.shape)}; must be "
                             f"{np.dtype(spec.out_dtype)} {spec.out_shape}",
                             code=ACLNN_ERR_PARAM_INVALID)
        probe = convolution(x, w, b, chip=chip, numerics=False, trace=False, sanitize=False,
                            **params)

        def run():
            result = convolution(x, w, b, chip=chip, **params)
            np.copyto(out, result.outputs["output"])
            return result

        return probe.workspace_bytes, run

    return two_phase(FORWARD, prepare)


def aclnnConvolution(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    """Run the prepared Convolution; writes the output; returns the status."""
    return execute(FORWARD, workspace, workspaceSize, executor, stream)
