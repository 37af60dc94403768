"""The case of aclnnRelu: inputs, flops and help for the command."""

from npusim.cases.common import OpCase, random_array
from npusim.cases.five_hd import elementwise

ELEMENTWISE_SWEEP = ("--tiling tile_length=pow2:1024:16384 --tiling buffer_num=1,2 "
                     "--tiling block_dim=16:48:16")
ELEMENTWISE_TILING = ("block_dim (vector cores used), tile_length (elements per UB tile, whole "
                      "32-byte blocks), buffer_num (1 single, 2 double buffering)")


def _make(shape, dtype, params, rng):
    return (random_array(rng, shape, dtype),), {}


def _flops(args, kwargs):
    return args[0].size   # one max per element


RELU = OpCase(
    name="relu", aclnn="aclnnRelu",
    summary="out = max(self, 0)",
    shape_help="the shape of self (and out); ResNet-50's first ReLU at batch 32 is 32x64x112x112",
    default_shape=(32, 64, 56, 56), demo_shape=(1024, 1024), quick_shape=(64, 1024),
    dtypes=("float16", "float32", "bfloat16"), unit="vector",
    values_free_timing=True,
    make=_make, flops=_flops, five_hd=elementwise("relu", 1, "out"),
    sweep_example=ELEMENTWISE_SWEEP, tiling_help=ELEMENTWISE_TILING,
    notes="Elementwise, on the template kernel with SiluGrad's schedule (ops/elementwise): the "
          "roofline is the bytes in and out over the HBM bandwidth. bf16 on Atlas A2 only.")
