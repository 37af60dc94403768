"""The case of aclnnSiluBackward: inputs, flops and help for the command."""

from npusim.cases.common import OpCase, random_array

SILU_VECTOR_OPS = 9   # muls, exp, adds, div, sub, mul, adds, mul, mul per element


def _silu_make(shape, dtype, params, rng):
    return (random_array(rng, shape, dtype), random_array(rng, shape, dtype)), {}


def _silu_flops(args, kwargs):
    return SILU_VECTOR_OPS * args[0].size


SILU = OpCase(
    name="silu_backward", aclnn="aclnnSiluBackward",
    summary="gradInput = gradOutput * sigmoid(self) * (1 + self * (1 - sigmoid(self)))",
    shape_help="the shape of gradOutput and self (and gradInput)",
    default_shape=(4, 1024, 1024), demo_shape=(1024, 1024), quick_shape=(64, 1024),
    dtypes=("float16", "float32", "bfloat16"), unit="vector",
    values_free_timing=True,
    make=_silu_make, flops=_silu_flops,
    sweep_example="--tiling tile_length=pow2:1024:8192 --tiling buffer_num=1,2 "
                  "--tiling block_dim=16:48:16",
    tiling_help="block_dim (vector cores used), tile_length (elements per UB tile, whole "
                "32-byte blocks), buffer_num (1 single, 2 double buffering)",
    notes="Elementwise: the roofline is the bytes in and out over the HBM bandwidth. "
          "TFLOPS counts the 9 vector operations per element.")
