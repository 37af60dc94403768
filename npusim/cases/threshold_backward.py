"""The case of aclnnThresholdBackward (ReLU's gradient): inputs, flops and help."""

from npusim.cases.common import OpCase, Param, random_array
from npusim.cases.five_hd import elementwise
from npusim.cases.relu import ELEMENTWISE_SWEEP, ELEMENTWISE_TILING


def _make(shape, dtype, params, rng):
    grad, x = random_array(rng, shape, dtype), random_array(rng, shape, dtype)
    return (grad, x), {"threshold": params["threshold"]}


def _flops(args, kwargs):
    return args[0].size   # one compare per element (the select moves data)


THRESHOLD_BACKWARD = OpCase(
    name="threshold_backward", aclnn="aclnnThresholdBackward",
    summary="gradInput = gradOutput where self > threshold, else 0",
    shape_help="the shape of gradOutput and self (and gradInput)",
    default_shape=(32, 64, 56, 56), demo_shape=(1024, 1024), quick_shape=(64, 1024),
    dtypes=("float16", "float32", "bfloat16"), unit="vector",
    values_free_timing=True,
    make=_make, flops=_flops, five_hd=elementwise("threshold_backward", 2, "gradInput"),
    params=(Param(name="threshold", parse=float, default="0",
                  help="the threshold (0: ReLU's gradient, the ReluGrad kernel; else "
                       "ThresholdGradV2D)"),),
    sweep_example=ELEMENTWISE_SWEEP, tiling_help=ELEMENTWISE_TILING,
    notes="Elementwise, on the template kernel with SiluGrad's schedule (ops/elementwise): "
          "compare and select per tile. bf16 on Atlas A2 only.")
