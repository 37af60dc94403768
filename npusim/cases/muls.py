"""The case of aclnnMuls (a tensor times a scalar): inputs, flops and help."""

from npusim.cases.common import OpCase, Param, random_array
from npusim.cases.relu import ELEMENTWISE_SWEEP, ELEMENTWISE_TILING


def _make(shape, dtype, params, rng):
    return (random_array(rng, shape, dtype),), {"other": params["other"]}


MULS = OpCase(
    name="muls", aclnn="aclnnMuls",
    summary="out = self * other (a scalar)",
    shape_help="the shape of self (and out); ResNet-50's largest parameter is 512x512x3x3",
    default_shape=(512, 512, 3, 3), demo_shape=(1024, 1024), quick_shape=(64, 1024),
    dtypes=("float32", "float16", "bfloat16"), unit="vector",
    values_free_timing=True,
    make=_make, flops=lambda args, kwargs: args[0].size,
    params=(Param(name="other", parse=float, default="0.9",
                  help="the scalar (SGD's momentum, as torch_npu's per-tensor step on the Atlas "
                       "training series multiplies the momentum buffers)"),),
    sweep_example=ELEMENTWISE_SWEEP, tiling_help=ELEMENTWISE_TILING,
    notes="Elementwise, on the template kernel with SiluGrad's schedule (ops/elementwise): Mul "
          "by the scalar in self's dtype; bf16 (Atlas A2 only) runs Muls through fp32.")
