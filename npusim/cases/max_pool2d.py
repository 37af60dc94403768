"""The cases of aclnnMaxPool2dWithIndices and its backward (A2): inputs, flops and help.

``--param kernel_size=3 --param stride=2 --param padding=1`` is ResNet-50's stem pool. The
backward's indices are those of the forward on its ``self`` (made by the forward's golden: an
input here, not a checked output), gradOutput seeded.
"""

from npusim.cases.common import OpCase, Param, parse_bool, parse_ints, random_array
from npusim.errors import NpusimError

TILING = ("rows (rows per slab: output rows forward, input rows, a multiple of the stride, "
          "backward), buffer_num (1 single, 2 double buffering)")
PARAMS = (Param(name="kernel_size", parse=parse_ints, default="3", help="kH or kH,kW"),
          Param(name="stride", parse=parse_ints, default="2", help="sH or sH,sW"),
          Param(name="padding", parse=parse_ints, default="1", help="pH or pH,pW"),
          Param(name="ceil_mode", parse=parse_bool, default="false",
                help="round the output size up"))


def _window(params) -> dict:
    return {"kernel_size": params["kernel_size"], "stride": params["stride"],
            "padding": params["padding"], "ceil_mode": params["ceil_mode"]}


def _shape(name, shape):
    if len(shape) not in (3, 4):
        raise NpusimError(f"{name}: --shape is NxCxHxW (or CxHxW), got {len(shape)} "
                          "dimensions")
    return shape


def _make(shape, dtype, params, rng):
    x = random_array(rng, _shape("max_pool2d_with_indices", shape), dtype)
    return (x,), _window(params)


def _make_backward(shape, dtype, params, rng):
    from npusim.golden import max_pool2d_with_indices

    x = random_array(rng, _shape("max_pool2d_with_indices_backward", shape), dtype)
    window = _window(params)
    try:
        fwd = max_pool2d_with_indices(x, **window)
    except (ValueError, ZeroDivisionError, IndexError) as exc:
        raise NpusimError(f"max_pool2d_with_indices_backward: the window {window} does not "
                          f"pool {shape}: {exc}") from None
    dy = random_array(rng, fwd["out"].shape, dtype)
    return (dy, x, fwd["indices"]), window


def _flops(args, kwargs):
    k = kwargs["kernel_size"]
    return args[0].size // 4 * (k[0] * k[-1])     # ~ one compare per tap of each output


MAX_POOL2D_WITH_INDICES = OpCase(
    name="max_pool2d_with_indices", aclnn="aclnnMaxPool2dWithIndices",
    summary="out = the maximum of each window, indices = its flat position in the plane",
    shape_help="NxCxHxW of self; ResNet-50's stem pool at batch 32 is 32x64x112x112 with "
               "kernel_size=3 stride=2 padding=1",
    default_shape=(32, 64, 112, 112), demo_shape=(4, 64, 112, 112), quick_shape=(2, 8, 14, 14),
    dtypes=("float16", "float32", "bfloat16"), unit="vector", make=_make, flops=_flops,
    params=PARAMS, tiling_help=TILING, sweep_example="--tiling rows=4:28:8",
    notes="Atlas A2 only (CANN does not support it on the Atlas training series). One "
          "MaxPool3DWithArgmaxV2 kernel: per slab of output rows, a Gather per kernel tap, "
          "Compare and Select of the value and its index; indices int32.")

MAX_POOL2D_WITH_INDICES_BACKWARD = OpCase(
    name="max_pool2d_with_indices_backward", aclnn="aclnnMaxPool2dWithIndicesBackward",
    summary="gradInput[p] = the sum of gradOutput over the windows whose index is p",
    shape_help="NxCxHxW of self and gradInput (gradOutput and indices are the pool's output "
               "shape); ResNet-50's at batch 32 is 32x64x112x112",
    default_shape=(32, 64, 112, 112), demo_shape=(4, 64, 112, 112), quick_shape=(2, 8, 14, 14),
    dtypes=("float32",), unit="vector", make=_make_backward,
    flops=lambda a, k: a[1].size * 2 * k["kernel_size"][0] * k["kernel_size"][-1],
    params=PARAMS, tiling_help=TILING, sweep_example="--tiling rows=2:16:2",
    notes="Atlas A2 only, FLOAT only (CANN's dtype list on A2). One MaxPool3DGradWithArgmax "
          "kernel: per slab of input rows, per tap a Gather of gradient and index, Compare EQ "
          "with the position, Select, Add.")
