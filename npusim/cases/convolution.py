"""The case of aclnnConvolution (the forward): 1-D and 2-D geometry from ``--shape`` and
``--param`` as convolution_backward's case takes them (a workload lists a layer's forward and
backward with the same shape and params), inputs, flops and help."""

import numpy as np

from npusim.cases.common import OpCase, random_array
from npusim.cases.convolution_backward import CONV_PARAMS, _per_dim, conv_geometry, graph_scope
from npusim.cases.five_hd import FiveHD

FORWARD_PARAMS = tuple(p for p in CONV_PARAMS if p.name in (
    "weight", "stride", "padding", "dilation", "groups", "cube_math_type"))


def _make(shape, dtype, params, rng):
    full = dict(params, transposed=False)
    wshape, _ = conv_geometry(shape, full)
    x, weight = random_array(rng, shape, dtype), random_array(rng, wshape, dtype)
    nsp = len(shape) - 2
    kwargs = {"groups": params["groups"], "cube_math_type": params["cube_math_type"],
              "stride": _per_dim("stride", params["stride"], nsp),
              "padding": _per_dim("padding", params["padding"], nsp, pad4=True),
              "dilation": _per_dim("dilation", params["dilation"], nsp)}
    return (x, weight), kwargs


def _golden_options(result, args, kwargs) -> dict:
    """What the run chose that the golden must round like (the op module says which)."""
    from npusim.ops.convolution.forward import golden_options

    return golden_options(result, *args, kwargs["cube_math_type"])


def _flops(args, kwargs):
    """2 x the multiply-accumulates: output positions x the weight's elements."""
    x, weight = args
    full = dict(weight=weight.shape, stride=kwargs["stride"], padding=kwargs["padding"],
                dilation=kwargs["dilation"], groups=kwargs["groups"], transposed=False)
    _, out = conv_geometry(x.shape, full)
    return 2 * out[0] * int(np.prod(out[2:])) * weight.size


def _run_5hd(args, kwargs, **options):
    from npusim.ops.convolution.graph import convolution_5hd

    return convolution_5hd(*args, **kwargs, **options)


FIVE_HD = FiveHD(run=_run_5hd, outputs=lambda args, kwargs: {"output": args[1].shape[0]},
                 applies=graph_scope, kernels="TransData(weight), Conv2D on NC1HWC0")


CONVOLUTION_FORWARD = OpCase(
    name="convolution", aclnn="aclnnConvolution",
    summary="output = input ⋆ weight, the forward convolution (1-D, 2-D; groups 1, no bias)",
    shape_help="the input: N x C x L (1-D) or N x C x H x W (2-D); the weight and output follow "
               "from the params (as convolution_backward's)",
    default_shape=(8, 64, 56, 56), demo_shape=(4, 64, 28, 28), quick_shape=(1, 16, 8, 8),
    dtypes=("float16", "float32", "bfloat16"), unit="cube",
    values_free_timing=True,
    make=_make, flops=_flops, params=FORWARD_PARAMS, golden_options=_golden_options,
    five_hd=FIVE_HD,
    sweep_example="--shape 4x64x28x28 --tiling base_m=pow2:32:128 --tiling base_n=pow2:32:256",
    examples=("--shape 32x3x224x224 --param weight=64x7 --param padding=3 --param stride=2",
              "--shape 32x1024x14x14 --param weight=256x1 --param padding=0",
              "--chip atlas-inference --dtype float32   (Ascend 310P3: computed in fp16)"),
    tiling_help="the dx fields of convolution_backward's tiling: base_m, base_n, base_k, "
                "dx_base_n, dx_step_k1, dx_step_kh, dx_step_m, dx_b1_keep, narrow, "
                "l1_buffers / l0_buffers, dx_block_dim. Fields not given are derived to fit.",
    notes="Kernels: TransData (input, weight), Conv2D, TransData (output). Cube work: the "
          "roofline is the larger of the flops over the cube peak and the bytes over the GM "
          "bandwidth.")
