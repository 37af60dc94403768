"""The convolutions' graph form: Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter on
activations already in NC1HWC0, as a framework's graph mode runs them (no TransData of the
activations or their gradients in or out).

``convolution_5hd`` takes aclnnConvolution's arguments, checks them as that operator does, and
places ``input`` in GM already in NC1HWC0 (``ops/common/five_hd.py``: data as the previous layer
left it, not a kernel); it runs TransData(weight) to FRACTAL_Z and the Conv2D cube kernel
(``forward.launch_conv2d``), whose NC1HWC0 output (N, Cout1, Ho, Wo, 16) is ``output``.
``convolution_backward_5hd`` takes aclnnConvolutionBackward's: gradOutput and input placed in
NC1HWC0; for gradInput TransData(weight) and Conv2DBackpropInput writing NC1HWC0 (the layout
the forward's Conv2D writes, ``DxKernel``'s ``out_5hd``), ``gradInput`` (N, Cin1, H, W, 16); for
gradWeight the dw kernels exactly as aclnn runs them (``backward._Ctx.grad_weight``), with
TransData(gradWeight) back to the weight's layout.

The weight's conversions are kept: the weight lives in the optimizer's fp32 NCHW copy here, as
in single-operator mode (a framework that keeps its parameters in FRACTAL_Z would not run them;
not modelled). The graph form covers what a graph-mode step's convolutions are: 2-D, groups 1,
the activations in the cube's 16-bit dtype (fp16, bf16) so Conv2D writes NC1HWC0, and no
gradBias (its ReduceSum reads NCHW); anything else is a ParamError saying so.
"""

import numpy as np

from npusim.engine.sequence import OpRun
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ParamError
from npusim.ops.common import ceil_div, resolve_chip, round_up
from npusim.ops.common.contiguous import to_gm
from npusim.ops.common.five_hd import to_5hd
from npusim.ops.convolution.args import check_convolution_backward
from npusim.ops.convolution.backward import _Ctx, impl_of, op_types
from npusim.ops.convolution.cube import DxKernel
from npusim.ops.convolution.forward import (
    fractal_z_elements,
    launch_conv2d,
    output_nd_elements,
)
from npusim.ops.convolution.forward_args import check_convolution
from npusim.ops.convolution.geometry import dw_problem, dx_problem, forward_problem
from npusim.ops.convolution.route import aclnn_dw_v2
from npusim.ops.convolution.tiling import conv_tiling
from npusim.ops.convolution.tiling_fit import dx_l1_bytes
from npusim.ops.transdata.kernel import run_transdata
from npusim.ops.transdata.plan import plan_weight_dx

GRAPH = "graph form (NC1HWC0)"


def graph_rule(op: str, ndim: int, groups: int, dtype, compute_dtype: str) -> None:
    """The graph form's scope (the module doc): a ParamError for anything outside it."""
    why = ""
    if ndim != 4:
        why = f"a {ndim - 2}-D convolution; the graph form is 2-D"
    elif groups != 1:
        why = f"groups = {groups}; the graph form is groups 1"
    elif np.dtype(dtype).itemsize != 2 or np.dtype(dtype) != np.dtype(compute_dtype):
        why = (f"activations in {np.dtype(dtype).name} with the cube in {compute_dtype}; the "
               "graph form keeps 16-bit activations the cube takes as they are")
    if why:
        raise ParamError(f"{op} {GRAPH}: {why}", code=ACLNN_ERR_PARAM_INVALID)


def _run(chip, mode, numerics, trace, sanitize, jitter) -> OpRun:
    return OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                 jitter=jitter)


def convolution_5hd(input, weight, bias=None, *, stride, padding, dilation,  # noqa: A002
                    transposed=False, output_padding=None, groups=1, cube_math_type=1,
                    chip="atlas-a2", tiling=None, mode="timed", numerics=True, trace=True,
                    sanitize=True, jitter=None):
    """Conv2D on ``input`` placed in NC1HWC0; ``outputs["output"]`` in NC1HWC0 (module doc)."""
    chip = resolve_chip(chip)
    spec = check_convolution(chip, input, weight, bias, stride=stride, padding=padding,
                             dilation=dilation, transposed=transposed,
                             output_padding=output_padding, groups=groups,
                             cube_math_type=cube_math_type)
    graph_rule("aclnnConvolution", spec.input.ndim, groups, spec.input.dtype, spec.kernel_dtype)
    prob = forward_problem(spec.n, spec.cin, spec.cout, spec.axes)
    cd = np.dtype(spec.compute_dtype)
    c0 = 32 // cd.itemsize
    t = conv_tiling(chip, prob, None, c0, cd.itemsize, spec.cout, tiling)
    run = _run(chip, mode, numerics, trace, sanitize, jitter)
    x5 = to_5hd(spec.input, c0)
    x5_gm = run.gm.tensor("input.5hd", cd, x5.size, x5)
    w = to_gm(run, "weight", spec.weight)
    wb = run.gm.tensor("weight.fz", cd, fractal_z_elements(prob, c0))
    run_transdata(run, plan_weight_dx(chip, "TransData(weight)", spec.w5_shape, 1, prob.kc,
                                      prob.nc, True, c0, w.dtype, cd), w, wb)
    y = run.gm.tensor("output.5hd", cd, output_nd_elements(prob))
    launch_conv2d(run, x5_gm, wb, y, prob, t, cd, cd, spec.hf32, out_5hd=True)
    _, ho, wo = prob.out_dhw
    shape = (spec.n, ceil_div(spec.cout, 16), ho, wo, 16)
    return run.result({"output": (y, shape)}, tiling=t,
                      workspace_bytes=fractal_z_elements(prob, c0) * cd.itemsize)


class _Graph(_Ctx):
    """aclnnConvolutionBackward's kernels with gradOutput and input placed in NC1HWC0 and
    gradInput written in it: no TransData of an activation or its gradient."""

    def gm_inputs(self):
        s = self.spec
        self.dy5[1] = self.placed("gradOutput.5hd", s.grad_output)
        self.x5 = self.placed("input.5hd", s.input) if s.mask[1] else None
        self.w = to_gm(self.run, "weight", s.weight) if s.mask[0] else None
        self.x = None      # the input's NCHW copy: not in GM, the graph form has it in 5HD

    def placed(self, name, arr):
        five = to_5hd(arr, self.c0, self.cd)
        return self.run.gm.tensor(name, self.cd, five.size, five)

    def to_5hd(self, name, gm, shape5, enlarge=1):
        return self.x5      # dw's only conversion (groups 1): the input, already placed

    def grad_input(self, p):
        s, t, run = self.spec, self.t, self.run
        if p is None:
            return (run.gm.tensor("gradInput", s.dx_dtype, 0), s.input.shape)
        wb = self.weight_b(p)
        n16 = round_up(p.nc, 16)
        _, h, w = p.out_dhw
        dx5 = run.gm.tensor("gradInput.5hd", s.dx_dtype, p.n * h * w * n16)
        l1_a, l1_b = dx_l1_bytes(p, t, self.c0, self.cd.itemsize)
        dx_type = op_types(s, t, run.chip)[0]
        run.launch(DxKernel, block_dim=t.dx_block_dim, name=dx_type, impl=impl_of(dx_type),
                   args=dict(dy5=self.dy5[1], wb=wb, out=dx5, prob=p, tiling=t, cd=self.cd,
                             out_dtype=np.dtype(s.dx_dtype), l1_a=l1_a, l1_b=l1_b,
                             hf32=s.hf32, out_5hd=True))
        return (dx5, (p.n, n16 // 16, h, w, 16))


def convolution_backward_5hd(grad_output, input, weight, *, bias_sizes, stride,  # noqa: A002
                             padding, dilation, transposed=False, output_padding=None,
                             groups=1, output_mask=(True, True, True), cube_math_type=1,
                             chip="atlas-a2", tiling=None, mode="timed", numerics=True,
                             trace=True, sanitize=True, jitter=None):
    """gradInput (NC1HWC0) and gradWeight from gradOutput and input placed in NC1HWC0
    (module doc); gradBias is outside the graph form."""
    chip = resolve_chip(chip)
    if output_padding is None:
        output_padding = (0,) * max(np.ndim(input) - 2, 0) if input is not None else None
    spec = check_convolution_backward(
        chip, grad_output, input, weight, bias_sizes=bias_sizes, stride=stride,
        padding=padding, dilation=dilation, transposed=transposed,
        output_padding=output_padding, groups=groups, output_mask=output_mask,
        cube_math_type=cube_math_type)
    op = "aclnnConvolutionBackward"
    graph_rule(op, spec.input.ndim, groups, spec.input.dtype, spec.compute_dtype)
    if transposed or spec.mask[2] or spec.empty:
        raise ParamError(f"{op} {GRAPH}: transposed = {transposed}, output_mask = "
                         f"{tuple(spec.mask)}, input {spec.input.shape}: the graph form is a "
                         "non-transposed, non-empty convolution without gradBias",
                         code=ACLNN_ERR_PARAM_INVALID)
    dx = dx_problem(spec.n, 1, spec.cin, spec.cout, spec.axes, False) if spec.mask[0] else None
    dw = dw_problem(spec.n, 1, spec.cin, spec.cout, spec.axes, False, enlarge=True) \
        if spec.mask[1] else None
    cd = np.dtype(spec.compute_dtype)
    c0 = 32 // cd.itemsize
    t = conv_tiling(chip, dx, dw, c0, cd.itemsize, spec.cout, tiling,
                    dw_v2=dw is not None and aclnn_dw_v2(spec, chip))
    ctx = _Graph(_run(chip, mode, numerics, trace, sanitize, jitter), spec, t, cd, c0)
    ctx.gm_inputs()
    out = {"gradInput": ctx.grad_input(dx) if spec.mask[0] else None,
           "gradWeight": ctx.grad_weight(dw) if spec.mask[1] else None, "gradBias": None}
    return ctx.run.result(out, tiling=t, workspace_bytes=ctx.workspace)
