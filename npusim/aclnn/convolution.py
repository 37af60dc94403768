"""aclnnConvolutionBackwardGetWorkspaceSize and aclnnConvolutionBackward.

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
