"""The cases of aclnnSwiGlu and aclnnSwiGluGrad: inputs, flops and help for the command."""

from npusim.cases.common import OpCase, Param, random_array

SWIGLU_OPS = 6        # muls, exp, adds, div, mul, mul per output element
SWIGLU_GRAD_OPS = 15  # the sigmoid (5), N (2), M (8) per output element pair

GLU_PARAMS = (Param(name="dim", parse=int, default="-1", help="the dim split in two halves"),)


def _half_shape(shape, dim):
    s = list(shape)
    s[dim] //= 2
    return tuple(s)


def _fwd_make(shape, dtype, params, rng):
    return (random_array(rng, shape, dtype),), {"dim": params["dim"]}


def _grad_make(shape, dtype, params, rng):
    x = random_array(rng, shape, dtype)
    try:
        half = _half_shape(shape, params["dim"])
    except IndexError:     # a dim out of range is the operator's to refuse
        half = shape
    return (random_array(rng, half, dtype), x), {"dim": params["dim"]}


TILING_HELP = ("block_dim (vector cores used), tile_length (elements of every UB tile, whole "
               "32 bytes), buffer_num (2 as CANN, 1 single)")

SWI_GLU = OpCase(
    name="swi_glu", aclnn="aclnnSwiGlu",
    summary="out = silu(A) * B, A and B the two halves of x along dim",
    shape_help="x's shape (dim, the last by default, is even and halved in out)",
    default_shape=(4096, 8192), demo_shape=(2048, 8192), quick_shape=(64, 1024),
    dtypes=("bfloat16", "float16", "float32"), unit="vector",
    make=_fwd_make, flops=lambda a, k: SWIGLU_OPS * a[0].size // 2, params=GLU_PARAMS,
    tiling_help=TILING_HELP, sweep_example="--tiling tile_length=pow2:1024:8192 "
                                           "--tiling buffer_num=1,2",
    notes="Elementwise over the halves: the roofline is x in and out out over the HBM "
          "bandwidth. Atlas A2 only (CANN does not run it on the training series).")

SWI_GLU_GRAD = OpCase(
    name="swi_glu_grad", aclnn="aclnnSwiGluGrad",
    summary="out = [yGrad*(sig(A) + sig(A)*(1-sig(A))*A)*B, yGrad*sig(A)*A] along dim",
    shape_help="x's shape (yGrad is x's shape with dim halved; out is x's shape)",
    default_shape=(4096, 8192), demo_shape=(2048, 8192), quick_shape=(64, 1024),
    dtypes=("bfloat16", "float16", "float32"), unit="vector",
    make=_grad_make, flops=lambda a, k: SWIGLU_GRAD_OPS * a[0].size, params=GLU_PARAMS,
    tiling_help=TILING_HELP, sweep_example="--tiling tile_length=pow2:1024:4096",
    notes="Elementwise: x and yGrad in, out out, so the roofline is those bytes over the HBM "
          "bandwidth. Atlas A2 only.")
