"""The cases of aclnnMaxPool2dWithMask and its backward (the training series): inputs, flops and
help.

``--param kernel_size=3 --param stride=2 --param padding=1`` is ResNet-50's stem pool. The
backward's mask is the forward golden's on its ``self`` (an input here, not a checked output),
gradOutput seeded.
"""

from npusim.cases.common import OpCase, random_array
from npusim.cases.five_hd import FiveHD, four_d
from npusim.cases.max_pool2d import PARAMS, _shape, _window
from npusim.errors import NpusimError

TILING = "rows (output rows per slab), buffer_num (1 single, 2 double buffering)"


def _make(shape, dtype, params, rng):
    x = random_array(rng, _shape("max_pool2d_with_mask", shape), dtype)
    return (x,), _window(params)


def _make_backward(shape, dtype, params, rng):
    from npusim.golden import max_pool2d_with_mask

    x = random_array(rng, _shape("max_pool2d_with_mask_backward", shape), dtype)
    window = _window(params)
    try:
        fwd = max_pool2d_with_mask(x, **window)
    except (ValueError, ZeroDivisionError, IndexError) as exc:
        raise NpusimError(f"max_pool2d_with_mask_backward: the window {window} does not pool "
                          f"{shape}: {exc}") from None
    dy = random_array(rng, fwd["out"].shape, dtype)
    return (dy, x, fwd["indices"]), window


def _taps(kwargs) -> int:
    k = kwargs["kernel_size"]
    return k[0] * k[-1]


def _fp16(shape, dtype, params) -> str:
    """"" when the graph form takes the call (a 4-D fp16 activation), else why not."""
    return four_d(shape, dtype, params) or ("" if dtype == "float16" else
                                             f"{dtype}: the kernels take float16 (FLOAT runs "
                                             "the aclnn operator's Casts)")


def _run_5hd(args, kwargs, **options):
    from npusim.ops.pooling.mask_graph import max_pool2d_with_mask_5hd

    return max_pool2d_with_mask_5hd(*args, **kwargs, **options)


def _run_backward_5hd(args, kwargs, **options):
    from npusim.ops.pooling.mask_graph import max_pool2d_with_mask_backward_5hd

    return max_pool2d_with_mask_backward_5hd(*args, **kwargs, **options)


FIVE_HD = FiveHD(run=_run_5hd, outputs=lambda args, kwargs: {"out": args[0].shape[1]},
                 kernels="MaxPoolWithArgmaxV1 on NC1HWC0", applies=_fp16)
FIVE_HD_BACKWARD = FiveHD(run=_run_backward_5hd,
                          outputs=lambda args, kwargs: {"gradInput": args[1].shape[1]},
                          kernels="MaxPoolGradWithArgmaxV1 on NC1HWC0", applies=_fp16)


MAX_POOL2D_WITH_MASK = OpCase(
    name="max_pool2d_with_mask", aclnn="aclnnMaxPool2dWithMask",
    summary="out = the maximum of each window, indices = a bit mask of the tap that held it",
    shape_help="NxCxHxW of self; ResNet-50's stem pool at batch 32 is 32x64x112x112 with "
               "kernel_size=3 stride=2 padding=1",
    default_shape=(32, 64, 112, 112), demo_shape=(4, 64, 112, 112), quick_shape=(2, 16, 14, 14),
    dtypes=("float16", "float32"), unit="vector", make=_make,
    flops=lambda a, k: a[0].size // 4 * _taps(k), params=PARAMS, tiling_help=TILING,
    sweep_example="--tiling rows=1:8:1", five_hd=FIVE_HD,
    notes="Atlas training series (CANN's 910 path; A2 runs other kernels, not modelled): "
          "TransData to NC1HWC0, one MaxPoolWithArgmaxV1 kernel (per slab of output rows an "
          "img2col of the taps, Max, Compare EQ and the first-tap rule), TransData back; "
          "FLOAT is cast to FLOAT16 and back around them.")

MAX_POOL2D_WITH_MASK_BACKWARD = OpCase(
    name="max_pool2d_with_mask_backward", aclnn="aclnnMaxPool2dWithMaskBackward",
    summary="gradInput[p] = the sum of gradOutput over the windows whose mask bit is at p",
    shape_help="NxCxHxW of self and gradInput (gradOutput is the pool's output shape); "
               "ResNet-50's at batch 32 is 32x64x112x112",
    default_shape=(32, 64, 112, 112), demo_shape=(4, 64, 112, 112), quick_shape=(2, 16, 14, 14),
    dtypes=("float16", "float32"), unit="vector", make=_make_backward,
    flops=lambda a, k: a[0].size * 2 * _taps(k), params=PARAMS, tiling_help=TILING,
    sweep_example="--tiling rows=1:8:1", five_hd=FIVE_HD_BACKWARD,
    notes="Atlas training series: TransData of gradOutput and self to NC1HWC0, one "
          "MaxPoolGradWithArgmaxV1 kernel (per output row and tap a Select by the mask bits, "
          "a Cast to fp32, the col2img add), TransData back.")
