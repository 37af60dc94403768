"""The case of aclnnAdd (equal shapes): inputs, flops and help."""

from npusim.cases.common import OpCase, Param, random_array
from npusim.cases.five_hd import elementwise
from npusim.cases.relu import ELEMENTWISE_SWEEP, ELEMENTWISE_TILING


def _make(shape, dtype, params, rng):
    a, b = random_array(rng, shape, dtype), random_array(rng, shape, dtype)
    return (a, b), {"alpha": params["alpha"]}


def _flops(args, kwargs):
    per = 1 if kwargs["alpha"] == 1 else 2   # add, or multiply and add
    return per * args[0].size


ADD = OpCase(
    name="add", aclnn="aclnnAdd",
    summary="out = self + alpha * other (equal shapes)",
    shape_help="the shape of self and other (and out); a ResNet-50 residual at batch 32 is "
               "32x256x56x56",
    default_shape=(32, 256, 56, 56), demo_shape=(1024, 1024), quick_shape=(64, 1024),
    dtypes=("float16", "float32", "bfloat16"), unit="vector",
    values_free_timing=True,
    make=_make, flops=_flops, five_hd=elementwise("add", 2, "out"),
    params=(Param(name="alpha", parse=float, default="1",
                  help="other's factor: 1 runs Add; else Axpy (fp16, fp32) or Mul then Add "
                       "(bf16)"),),
    sweep_example=ELEMENTWISE_SWEEP, tiling_help=ELEMENTWISE_TILING,
    notes="Elementwise, on the template kernel with SiluGrad's schedule (ops/elementwise). "
          "Broadcasting and mixed dtypes are not modelled. bf16 on Atlas A2 only.")
