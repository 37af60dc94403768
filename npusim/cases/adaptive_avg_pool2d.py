"""The cases of aclnnAdaptiveAvgPool2d and its backward with output size (1, 1) (ResNet-50's
global average pool): inputs, flops and help."""

from npusim.cases.common import OpCase, random_array
from npusim.errors import NpusimError

POOL_TILING = ("block_dim (vector cores used), tile_rows (rows of H x W per UB tile), "
               "buffer_num (1 single, 2 double buffering)")


def _nchw(name, shape):
    if len(shape) not in (3, 4):
        raise NpusimError(f"{name}: --shape is NxCxHxW (or CxHxW), got {len(shape)} dimensions")
    return shape


def _make(shape, dtype, params, rng):
    return (random_array(rng, _nchw("adaptive_avg_pool2d", shape), dtype),), \
        {"output_size": (1, 1)}


def _flops(args, kwargs):
    return 2 * args[0].size    # a multiply and an add per element


def _make_backward(shape, dtype, params, rng):
    shape = _nchw("adaptive_avg_pool2d_backward", shape)
    grad = random_array(rng, (*shape[:-2], 1, 1), dtype)
    return (grad, random_array(rng, shape, dtype)), {}


def _flops_backward(args, kwargs):
    return args[1].size        # one multiply per element of out


ADAPTIVE_AVG_POOL2D = OpCase(
    name="adaptive_avg_pool2d", aclnn="aclnnAdaptiveAvgPool2d",
    summary="out[n, c] = mean of self[n, c, :, :] (output size (1, 1): ReduceMean)",
    shape_help="NxCxHxW of self (out is NxCx1x1); ResNet-50's at batch 32 is 32x2048x7x7",
    default_shape=(32, 2048, 7, 7), demo_shape=(32, 512, 7, 7), quick_shape=(4, 64, 7, 7),
    dtypes=("float16", "float32", "bfloat16"), unit="vector", make=_make, flops=_flops,
    tiling_help=POOL_TILING, sweep_example="--tiling tile_rows=64,128,256 --tiling buffer_num=1,2",
    notes="One ReduceMean kernel (TBE): scale by 1 / (H x W), then sum each row. bf16 on A2.")

ADAPTIVE_AVG_POOL2D_BACKWARD = OpCase(
    name="adaptive_avg_pool2d_backward", aclnn="aclnnAdaptiveAvgPool2dBackward",
    summary="out[n, c, h, w] = gradOutput[n, c] / (H x W) (gradOutput of H = W = 1)",
    shape_help="NxCxHxW of self and out (gradOutput is NxCx1x1)",
    default_shape=(32, 2048, 7, 7), demo_shape=(32, 512, 7, 7), quick_shape=(4, 64, 7, 7),
    dtypes=("float16", "float32"), unit="vector", make=_make_backward, flops=_flops_backward,
    tiling_help=POOL_TILING, sweep_example="--tiling tile_rows=64,128,256 --tiling buffer_num=1,2",
    notes="Two kernels, as aclnn runs them: Fill (1 / (H x W), a self-sized workspace), then "
          "Mul by gradOutput broadcast over H x W (Brcb, then a repeat-form Mul).")
