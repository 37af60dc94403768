"""The case of aclnnConvolutionBackward: 1-D, 2-D and 3-D geometry from ``--shape`` and
``--param``, inputs, flops and help for the command."""

import numpy as np

from npusim.cases.common import OpCase, Param, parse_bool, parse_ints, parse_mask, random_array
from npusim.cases.five_hd import FiveHD, four_d
from npusim.errors import NpusimError


def _weight_shape(text):
    try:
        dims = tuple(int(v) for v in str(text).lower().replace("×", "x").split("x"))
    except ValueError:
        dims = ()
    if not 2 <= len(dims) <= 5 or min(dims) < 1:
        raise ValueError("Cout x k (the kernel size in every spatial dimension), Cout x kH x kW "
                         "(one size per dimension) or the full weight shape, e.g. 64x3 or 64x3x3")
    return dims


CONV_PARAMS = (
    Param(name="weight", parse=_weight_shape, default="64x3",
          help="Cout x k: output channels and a kernel size for every spatial dimension; or "
               "Cout x kH x kW (1-D: Cout x kL, 3-D: Cout x kD x kH x kW); or the full weight "
               "shape. In channels follow from --shape and groups"),
    Param(name="stride", parse=parse_ints, default="1",
          help="stride, one value or one per spatial dimension (h,w)"),
    Param(name="padding", parse=parse_ints, default="1",
          help="padding, one value, one per spatial dimension, or top,bottom,left,right (2-D)"),
    Param(name="dilation", parse=parse_ints, default="1",
          help="dilation, one value or one per spatial dimension"),
    Param(name="groups", parse=int, default="1", help="channel groups"),
    Param(name="transposed", parse=parse_bool, default="false",
          help="the forward was a transposed convolution"),
    Param(name="output_padding", parse=parse_ints, default="0",
          help="output padding of a transposed convolution"),
    Param(name="output_mask", parse=parse_mask, default="1,1,1",
          help="which of gradInput, gradWeight, gradBias to compute"),
    Param(name="cube_math_type", parse=int, default="1",
          help="0 keep dtype, 1 allow fp32 down-precision (HF32 on A2), 2 use fp16, 3 HF32"),
)


def _per_dim(name: str, values: tuple, nsp: int, pad4: bool = False) -> tuple:
    """One value per spatial dimension from one value or one each (or 2-D padding's four)."""
    if len(values) == 1:
        return values * nsp
    if len(values) == nsp or pad4 and nsp == 2 and len(values) == 4:
        return values
    raise NpusimError(f"convolution_backward: {name}={','.join(map(str, values))}: one value "
                      f"or {nsp} (one per spatial dimension of a {nsp}-D convolution)")


def _kernel(params, c: int, nsp: int) -> tuple:
    """The full weight shape from the weight parameter (see its help)."""
    g, dims = max(params["groups"], 1), params["weight"]
    if len(dims) == nsp + 2:
        return dims
    if len(dims) not in (2, nsp + 1):
        raise NpusimError(f"convolution_backward: weight={'x'.join(map(str, dims))} for a "
                          f"{nsp}-D convolution: Cout x k, Cout x {nsp} kernel sizes, or the "
                          f"full {nsp + 2}-D weight shape")
    cout, ks = dims[0], dims[1:] * nsp if len(dims) == 2 else dims[1:]
    return (c, cout // g, *ks) if params["transposed"] else (cout, c // g, *ks)


def conv_geometry(shape, params):
    """(weight shape, gradOutput shape) of a 1-D, 2-D or 3-D convolution with input ``shape``
    N x C x spatial dims."""
    if len(shape) not in (3, 4, 5):
        raise NpusimError(f"convolution_backward: --shape is the input N x C x L (1-D), "
                          f"N x C x H x W (2-D) or N x C x D x H x W (3-D); got {len(shape)} "
                          "dimensions")
    n, c, *sp = shape
    nsp = len(sp)
    wdims = _kernel(params, c, nsp)
    stride, dil = _per_dim("stride", params["stride"], nsp), _per_dim("dilation",
                                                                       params["dilation"], nsp)
    pads = _per_dim("padding", params["padding"], nsp, pad4=True)
    lo, hi = (pads[0::2], pads[1::2]) if len(pads) == 2 * nsp != nsp else (pads, pads)
    ks = wdims[2:]
    if params["transposed"]:
        op = _per_dim("output_padding", params["output_padding"], nsp)
        out = [(sp[i] - 1) * stride[i] - lo[i] - hi[i] + dil[i] * (ks[i] - 1) + op[i] + 1
               for i in range(nsp)]
        cout = wdims[1] * max(params["groups"], 1)
    else:
        out = [(sp[i] + lo[i] + hi[i] - dil[i] * (ks[i] - 1) - 1) // max(stride[i], 1) + 1
               for i in range(nsp)]
        cout = wdims[0]
    if min(out) < 1:
        raise NpusimError(f"convolution_backward: input {shape} with kernel "
                          f"{'x'.join(map(str, ks))} gives an empty output "
                          f"({'x'.join(map(str, out))})")
    return wdims, (n, cout, *out)


def _conv_make(shape, dtype, params, rng):
    wshape, gshape = conv_geometry(shape, params)
    x, weight = random_array(rng, shape, dtype), random_array(rng, wshape, dtype)
    dy = random_array(rng, gshape, dtype)
    nsp = len(shape) - 2
    kwargs = {k: params[k] for k in ("groups", "transposed", "output_mask", "cube_math_type")}
    kwargs.update(stride=_per_dim("stride", params["stride"], nsp),
                  padding=_per_dim("padding", params["padding"], nsp, pad4=True),
                  dilation=_per_dim("dilation", params["dilation"], nsp),
                  output_padding=_per_dim("output_padding", params["output_padding"], nsp))
    kwargs["bias_sizes"] = (gshape[1],)
    return (dy, x, weight), kwargs


def _conv_golden_options(result, args, kwargs) -> dict:
    """What the run chose that the golden must round like (the op module says which)."""
    from npusim.ops.convolution.backward import golden_options

    return golden_options(result, *args, kwargs["cube_math_type"])


def _conv_flops(args, kwargs):
    """2 x multiply-accumulates of the forward convolution, once per gradient asked for
    (gradInput and gradWeight), plus one add per gradOutput element for gradBias."""
    dy, x, weight = args
    side = x if kwargs["transposed"] else dy
    macs = side.shape[0] * int(np.prod(side.shape[2:])) * weight.size
    mask = kwargs["output_mask"]
    return 2 * macs * (int(mask[0]) + int(mask[1])) + (dy.size if mask[2] else 0)


def graph_scope(shape, dtype, params) -> str:
    """"" when the convolutions' graph form (``ops/convolution/graph.py``) takes the call,
    else why not."""
    mask = params.get("output_mask", (True, True, False))
    why = four_d(shape, dtype, params) or (
        f"groups {params['groups']}" if params["groups"] != 1 else
        f"{dtype} activations (the graph form is fp16 or bf16)"
        if dtype not in ("float16", "bfloat16") else
        "transposed" if params.get("transposed") else
        "gradBias asked for (its ReduceSum reads NCHW)" if mask[2] else "")
    return why


def _run_5hd(args, kwargs, **options):
    from npusim.ops.convolution.graph import convolution_backward_5hd

    return convolution_backward_5hd(*args, **kwargs, **options)


FIVE_HD = FiveHD(run=_run_5hd, outputs=lambda args, kwargs: {"gradInput": args[1].shape[1]},
                 applies=graph_scope,
                 kernels="TransData(weight), Conv2DBackpropInput and Conv2DBackpropFilter on "
                         "NC1HWC0, TransData(gradWeight)")


CONVOLUTION = OpCase(
    name="convolution_backward", aclnn="aclnnConvolutionBackward",
    summary="gradInput, gradWeight, gradBias of a 1-D, 2-D or 3-D convolution (3-D on Atlas "
            "A2 only)",
    shape_help="the forward input: N x C x L (1-D), N x C x H x W (2-D) or N x C x D x H x W "
               "(3-D); gradOutput and weight follow from the params",
    default_shape=(8, 64, 56, 56), demo_shape=(4, 64, 28, 28), quick_shape=(1, 16, 8, 8),
    dtypes=("float16", "float32", "bfloat16"), unit="cube",
    values_free_timing=True,
    make=_conv_make, flops=_conv_flops, params=CONV_PARAMS,
    golden_options=_conv_golden_options, five_hd=FIVE_HD,
    sweep_example="--shape 4x64x28x28 --tiling base_m=pow2:32:128 --tiling base_n=pow2:32:256",
    examples=("--shape 2x3x224x224 --param weight=64x7 --param padding=3 --param stride=2",
              "--shape 8x256x56 --param weight=256x5 --param padding=2   (1-D)",
              "--shape 1x16x8x16x16 --param weight=32x3 --chip atlas-a2   (3-D)",
              "--chip atlas-inference --dtype float32   (Ascend 310P3: computed in fp16)",
              "--shape 4x64x28x28 --tiling base_n=64 --tiling dw_k_parts=2"),
    tiling_help="base_m, base_n, base_k (the cube base block: GEMM rows, columns, K per L0 "
                "tile), dx_base_n (dx input channels per block, at most base_n), dx_step_k1 "
                "(gradOutput channel blocks per dx L1 chunk), dx_step_kh "
                "(kernel rows per dx L1 chunk), dx_step_m (dx M base blocks per task sharing "
                "L1, L0B and L0C: CANN's stepM), dx_b1_keep (dx weight of all K kept in L1 "
                "across a core's tasks: CANN's B1 full load), "
                "dw_step_k (grad positions per dw L1 chunk), dw_step_m (dw M base blocks per "
                "task sharing the feature chunk, its L0B tile and L0C), "
                "dw_step_kh (0: dw N blocks across channel blocks, or kernel rows per dw N "
                "block), narrow (1-D: L1 chunks hold only the map columns they reach), "
                "l1_buffers / l0_buffers (1 or 2: double buffering), dx_block_dim / "
                "dw_block_dim (cube cores), dw_k_parts (parts K of "
                "dw is split into, added atomically), deterministic (dw parts summed in a fixed "
                "order instead), bias_block_dim, bias_tile (the gradBias ReduceSum). Fields not "
                "given are derived to fit.",
    notes="Cube work: the roofline is the larger of the flops over the cube peak and the bytes "
          "over the GM bandwidth (HBM; LPDDR4X DRAM on the Atlas inference series, where FLOAT "
          "runs in fp16 with cubeMathType 1 or 2).")
