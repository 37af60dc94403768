"""aclnnConvolution, the forward convolution: output = input ⋆ weight (1-D and 2-D, groups = 1,
no bias; ``ops/convolution/forward_args.py`` says what is refused).

The operator runs as aclnn's ``Conv2dImpl`` does in single-op mode on Atlas A2 and the Atlas
training and inference series (ops-nn ``conv/convolution_forward/op_host/op_api/
aclnn_convolution.cpp``: ``CommonPreProcess``, ``Conv2d5HdFp16`` / ``Fp32`` / ``Bf16``,
``CommonPostProcess``), as a sequence of kernels on one GM, in ``stats["kernels"]`` by op type:
[Contiguous per strided input], TransData (input: NCHW -> NC1HWC0, with the Cast to the cube's
dtype when the input's differs), TransData (weight: -> FRACTAL_Z), Conv2D (the TBE cube kernel;
1-D runs as 2-D with H = 1), TransData (output: back to NCHW, with the Cast to the output dtype
when Conv2D wrote another: fp16 for FLOAT on the Atlas training / inference series or with
cubeMathType 2).

The Conv2D kernel is the cube kernel ConvolutionBackward runs for gradInput
(``ops/convolution/cube.py``, ``DxKernel``) on the problem of a transposed convolution's dx,
which is a forward convolution (kernels.md §2(b)5; ``geometry.forward_problem``): the map is the
input in NC1HWC0, read by LoadData3D with the stride, dilation and pads; K = (Cin1, kh, kw,
C0); N = output channels. A 16-bit output leaves L0C in NC1HWC0 (C0 16) as CANN's Conv2D
writes it: FixPipe NZ2NZ with the fp32 -> fp16/bf16 conversion (A2), or L0C -> UB, a vector
Cast and one copy per 16-channel Z column (Atlas training / inference); TransData(output) reads
NC1HWC0. Its tiling is ConvolutionBackward's dx tiling (the ``dx_*`` fields, base_m / base_n /
base_k, buffers) derived the same way.

Differences from CANN, modelled as they are: a FLOAT output (Atlas A2, HF32 or fp32 cube) is
written as (N, Ho·Wo, Cout padded to 16) rows by FixPipe NZ2ND, where CANN writes NC1HWC0 of
C0 8 through FixPipe's channel split, which npusim's FixPipe does not model; the same bytes, and
TransData(output) reads that layout.
The C04 layout (bf16 with Cin <= 4 on A2, and one fp16 customer shape), the splitW branch
(Conv3D for wide inputs), the conv-to-matmul shortcut (feature map equal to the kernel) and
the special 1-D matmul are not modelled: the general Conv2D computes the same results.

``launch_conv2d`` runs the Conv2D kernel alone on an input already in NC1HWC0 and a weight
already in FRACTAL_Z (graph mode, where activations stay in 5HD between layers).
"""

import numpy as np

from npusim.dtypes import name_of
from npusim.engine.sequence import OpRun
from npusim.ops.common import ceil_div, resolve_chip, round_up
from npusim.ops.common.contiguous import to_gm
from npusim.ops.convolution.args import promote
from npusim.ops.convolution.cube import DxKernel
from npusim.ops.convolution.forward_args import check_convolution, cube_dtype
from npusim.ops.convolution.geometry import forward_problem
from npusim.ops.convolution.tiling import conv_tiling
from npusim.ops.convolution.tiling_fit import dx_l1_bytes
from npusim.ops.transdata.kernel import run_transdata
from npusim.ops.transdata.plan import (
    plan_from_5hd,
    plan_from_nd,
    plan_to_5hd,
    plan_weight_dx,
)


def convolution(input, weight, bias=None, *, stride, padding, dilation,  # noqa: A002
                transposed=False, output_padding=None, groups=1, cube_math_type=1,
                chip="atlas-a2", tiling=None, mode="timed", numerics=True, trace=True,
                sanitize=True, jitter=None):
    """Run aclnnConvolution on ``chip``; outputs ``output``. ``output_padding`` is ignored
    (it applies to a transposed convolution only, which is not modelled)."""
    chip = resolve_chip(chip)
    spec = check_convolution(chip, input, weight, bias, stride=stride, padding=padding,
                             dilation=dilation, transposed=transposed,
                             output_padding=output_padding, groups=groups,
                             cube_math_type=cube_math_type)
    prob = forward_problem(spec.n, spec.cin, spec.cout, spec.axes)
    cd = np.dtype(spec.compute_dtype)
    c0 = 32 // cd.itemsize
    t = conv_tiling(chip, prob, None, c0, cd.itemsize, spec.cout, tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    out = run.gm.tensor("output", spec.out_dtype, int(np.prod(spec.out_shape)))
    workspace = 0
    if not spec.empty:
        workspace = _single_op(run, spec, prob, t, cd, out)
    return run.result({"output": (out, spec.out_shape)}, tiling=t, workspace_bytes=workspace)


def _single_op(run, spec, prob, t, cd, out) -> int:
    """The single-op sequence: TransData of input and weight, Conv2D, TransData of the output;
    returns the workspace bytes (the converted tensors)."""
    c0 = 32 // cd.itemsize
    x = to_gm(run, "input", spec.input)
    w = to_gm(run, "weight", spec.weight)
    x5 = run.gm.tensor("input.5hd", cd, five_hd_elements(spec.x5_shape, c0))
    run_transdata(run, plan_to_5hd(run.chip, "TransData(input)", spec.x5_shape, 1, c0,
                                   x.dtype, cd), x, x5)
    wb = run.gm.tensor("weight.fz", cd, fractal_z_elements(prob, c0))
    run_transdata(run, plan_weight_dx(run.chip, "TransData(weight)", spec.w5_shape, 1,
                                      prob.kc, prob.nc, True, c0, w.dtype, cd), w, wb)
    kd = np.dtype(spec.kernel_dtype)
    five = kd.itemsize == 2   # Conv2D writes NC1HWC0 (C0 16); FLOAT: ND rows (module doc)
    y = run.gm.tensor("output.5hd" if five else "output.nd", kd, output_nd_elements(prob))
    launch_conv2d(run, x5, wb, y, prob, t, cd, kd, spec.hf32, out_5hd=five)
    hw = prob.out_dhw[1] * prob.out_dhw[2]
    n16 = round_up(prob.nc, 16)
    if five:
        plan = plan_from_5hd(run.chip, "TransData(output)",
                             (prob.n, prob.out_dhw[0], n16 // 16, hw, 16), spec.cout, kd,
                             np.dtype(spec.out_dtype))
    else:
        plan = plan_from_nd(run.chip, "TransData(output)", (prob.n, 1, prob.out_dhw[0], hw, n16),
                            spec.cout, 1, kd, np.dtype(spec.out_dtype))
    run_transdata(run, plan, y, out)
    return _workspace(spec, prob, c0, cd, kd)


def _workspace(spec, prob, c0, cd, kd) -> int:
    return (five_hd_elements(spec.x5_shape, c0) * cd.itemsize
            + fractal_z_elements(prob, c0) * cd.itemsize
            + output_nd_elements(prob) * kd.itemsize)


def five_hd_elements(shape5, c0: int) -> int:
    """Elements of (N, C, D, H, W) in NC1HWC0 (channels padded to C0)."""
    n, c, d, h, w = shape5
    return n * d * ceil_div(c, c0) * h * w * c0


def fractal_z_elements(prob, c0: int) -> int:
    """Elements of the weight as Conv2D's B matrix: [kD][Cin1][kH·kW][Cout1][16][C0]."""
    return (int(np.prod(prob.kdhw)) * ceil_div(prob.kc, c0) * ceil_div(prob.nc, 16) * 16
            * c0)


def output_nd_elements(prob) -> int:
    """Elements of Conv2D's output: (N, Do, Ho·Wo, Cout padded to 16), in NC1HWC0 or rows."""
    return (prob.n * prob.out_dhw[0] * prob.out_dhw[1] * prob.out_dhw[2]
            * round_up(prob.nc, 16))


def launch_conv2d(run, x5, wb, out, prob, t, cd, out_dtype, hf32, out_5hd=True) -> None:
    """Launch the Conv2D cube kernel alone: ``x5`` the input in NC1HWC0 (N, C1, H, W, C0) of
    the cube's dtype ``cd``, ``wb`` the weight in FRACTAL_Z as ``plan_weight_dx`` (transposed
    order) writes it, ``out`` of ``out_dtype``: with ``out_5hd`` (a 16-bit ``out_dtype``) the
    output in NC1HWC0 (N, Cout1, Ho, Wo, 16) as CANN's Conv2D writes it, else (N, Ho·Wo, Cout
    padded to 16) rows; ``prob`` from ``geometry.forward_problem``, ``t`` from
    ``tiling.conv_tiling`` with it as dx. This is the whole of what a graph-mode step runs for a
    convolution whose activations stay in NC1HWC0: its output is the next layer's input."""
    c0 = 32 // cd.itemsize
    l1_a, l1_b = dx_l1_bytes(prob, t, c0, cd.itemsize)
    args = dict(dy5=x5, wb=wb, out=out, prob=prob, tiling=t, cd=cd,
                out_dtype=np.dtype(out_dtype), l1_a=l1_a, l1_b=l1_b, hf32=hf32)
    if out_5hd:
        args["out_5hd"] = True
    run.launch(DxKernel, block_dim=t.dx_block_dim, name="Conv2D", impl="tbe", args=args)


def golden_options(result, input, weight, cube_math_type) -> dict:  # noqa: A002
    """What the run chose that the golden (``npusim.golden.convolution``) must round like: the
    cube's dtype and HF32 width for the chip and cubeMathType, and the dtype Conv2D wrote."""
    chip = result.chip
    cd, hf32 = cube_dtype(chip, promote(name_of(input.dtype), name_of(weight.dtype)),
                          cube_math_type)
    return {"compute_dtype": cd, "hf32_bits": chip.hf32_mantissa_bits if hf32 else 0,
            "kernel_dtype": cd}
