"""The operators the ``npusim`` command knows, one ``OpCase`` each.

A case says how to make seeded random inputs of the operator's natural shape from a main shape
(``--shape``), a dtype and the operator's own parameters (``--param``), how to call
``npusim.ops.<name>``, which golden in ``npusim.golden`` checks it, and the work it does (bytes
through HBM and floating-point operations) for the roofline. Adding an operator to the command
is one ``OpCase`` in ``CASES``; a case whose ``npusim.ops`` function does not exist yet is listed
as not available rather than failing.

The golden only checks outputs after the run; it never produces them. Cycles come only from
the simulation.
"""

import importlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from npusim.dtypes import DTYPES
from npusim.errors import NpusimError

MAX_ELEMENTS = 1 << 28   # a bigger input is refused before numpy tries to allocate it
DTYPE_ALIASES = {"fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32",
                 "bf16": "bfloat16"}


@dataclass(frozen=True, kw_only=True)
class Param:
    """One operator parameter, given on the command line as ``--param name=value``."""

    name: str
    parse: Callable[[str], object]
    default: str
    help: str


@dataclass(frozen=True, kw_only=True)
class OpCase:
    """How the command runs one operator."""

    name: str                 # the npusim.ops function, and the command's name for the op
    aclnn: str                # the aclnn name
    summary: str              # one line: what the operator computes
    shape_help: str           # what --shape sets
    default_shape: tuple      # npusim run's default
    demo_shape: tuple         # npusim demo's size
    quick_shape: tuple        # npusim demo --quick's size (a smoke test)
    dtypes: tuple             # dtypes the operator takes on some product (the first is default)
    unit: str                 # "vector" (roofline = bytes / HBM) or "cube" (and flops / peak)
    make: Callable            # (shape, dtype, params, rng) -> (args tuple, kwargs dict)
    flops: Callable           # (args, kwargs) -> floating-point operations of the op
    params: tuple = ()
    golden_options: Callable | None = None   # (result, args, kwargs) -> what the run chose
    tiling_help: str = ""     # the tiling fields a user may override, for --help
    notes: str = ""
    examples: tuple = ()      # more argument lines for --help's examples
    sweep_example: str = "--tiling block_dim=8:48:8"   # npusim sweep --help's example space
    atomic_outputs: tuple = ()   # outputs summed by GM atomic adds in simulated-time order:
    #                              checked within a summation-order bound, not bit for bit

    def available(self) -> bool:
        """True when ``npusim.ops`` has the operator."""
        return self.function() is not None

    def function(self):
        ops = importlib.import_module("npusim.ops")
        return getattr(ops, self.name, None)

    def golden(self):
        """The numpy reference ``golden(*args, **kwargs)``, or None when there is none yet."""
        golden = importlib.import_module("npusim.golden")
        return getattr(golden, self.name, None)

    def parse_params(self, pairs: dict) -> dict:
        """Typed parameter values: the defaults overridden by ``pairs`` (name -> text)."""
        known = {p.name: p for p in self.params}
        for key in pairs:
            if key not in known:
                allowed = ", ".join(known) or "none"
                raise NpusimError(f"{self.name} has no parameter {key!r}; parameters: {allowed}")
        values = {}
        for p in self.params:
            text = pairs.get(p.name, p.default)
            try:
                values[p.name] = p.parse(text)
            except (ValueError, TypeError) as exc:
                raise NpusimError(f"{self.name}: parameter {p.name}={text!r}: {exc}") from None
        return values


def parse_shape(text: str) -> tuple:
    """``"4x1024x1024"`` -> (4, 1024, 1024); a clear error for anything else."""
    parts = text.lower().replace("×", "x").split("x")
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        raise NpusimError(f"shape {text!r} does not parse: write the dimensions separated by "
                          "'x', e.g. 4x1024x1024") from None
    if any(d < 1 for d in dims) or len(dims) > 8:
        raise NpusimError(f"shape {text!r}: 1 to 8 dimensions, each a positive integer")
    if int(np.prod(dims, dtype=np.float64)) > MAX_ELEMENTS:
        raise NpusimError(f"shape {text!r} has more than {MAX_ELEMENTS:,} elements; "
                          "the simulator keeps every tensor in host memory")
    return dims


def parse_dtype(text: str, case: OpCase) -> str:
    """The dtype name for ``text`` (fp16, float16, bf16, ...) if the operator takes it."""
    name = DTYPE_ALIASES.get(text.lower(), text.lower())
    if name not in case.dtypes:
        raise NpusimError(f"{case.name} does not take dtype {text!r}; "
                          f"dtypes: {', '.join(case.dtypes)}")
    return name


def parse_ints(text: str) -> tuple:
    """``"1"`` -> (1,) and ``"2,1"`` -> (2, 1): one value for every spatial dimension, or one
    per dimension (up to 4: the 2-D padding's top, bottom, left, right form)."""
    try:
        values = tuple(int(v) for v in str(text).split(","))
    except ValueError:
        values = ()
    if not 1 <= len(values) <= 4 or min(values) < 0:
        raise ValueError("one non-negative integer, or one per spatial dimension, e.g. 1 or "
                         "2,1")
    return values


def parse_bool(text: str) -> bool:
    low = str(text).lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError("true or false")


def parse_mask(text: str) -> tuple:
    """``"1,1,0"`` -> (True, True, False): which of gradInput, gradWeight, gradBias to compute."""
    values = tuple(parse_bool(v) for v in str(text).split(","))
    if len(values) != 3:
        raise ValueError("three flags for gradInput, gradWeight, gradBias, e.g. 1,1,0")
    return values


def random_array(rng, shape, dtype: str) -> np.ndarray:
    """Standard normal values rounded to ``dtype``."""
    return rng.standard_normal(shape, dtype=np.float32).astype(DTYPES[dtype])


# --- SiluBackward -------------------------------------------------------------------------

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
    make=_silu_make, flops=_silu_flops,
    sweep_example="--tiling tile_length=pow2:1024:8192 --tiling buffer_num=1,2 "
                  "--tiling block_dim=16:48:16",
    tiling_help="block_dim (vector cores used), tile_length (elements per UB tile, whole "
                "32-byte blocks), buffer_num (1 single, 2 double buffering)",
    notes="Elementwise: the roofline is the bytes in and out over the HBM bandwidth. "
          "TFLOPS counts the 9 vector operations per element.")


# --- ConvolutionBackward ------------------------------------------------------------------

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
    from npusim.ops.convolution_backward import golden_options

    return golden_options(result, *args, kwargs["cube_math_type"])


def _conv_flops(args, kwargs):
    """2 x multiply-accumulates of the forward convolution, once per gradient asked for
    (gradInput and gradWeight), plus one add per gradOutput element for gradBias."""
    dy, x, weight = args
    side = x if kwargs["transposed"] else dy
    macs = side.shape[0] * int(np.prod(side.shape[2:])) * weight.size
    mask = kwargs["output_mask"]
    return 2 * macs * (int(mask[0]) + int(mask[1])) + (dy.size if mask[2] else 0)


CONVOLUTION = OpCase(
    name="convolution_backward", aclnn="aclnnConvolutionBackward",
    summary="gradInput, gradWeight, gradBias of a 1-D, 2-D or 3-D convolution (3-D on Atlas "
            "A2 only)",
    shape_help="the forward input: N x C x L (1-D), N x C x H x W (2-D) or N x C x D x H x W "
               "(3-D); gradOutput and weight follow from the params",
    default_shape=(8, 64, 56, 56), demo_shape=(4, 64, 28, 28), quick_shape=(1, 16, 8, 8),
    dtypes=("float16", "float32", "bfloat16"), unit="cube",
    make=_conv_make, flops=_conv_flops, params=CONV_PARAMS,
    golden_options=_conv_golden_options,
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

# --- MoeTokenPermuteGrad -----------------------------------------------------------------

MOE_EXPERTS = 64        # experts the generated routing draws each token's topK choices from
MOE_MAX_TOPK = 512      # numTopk's limit (the seed); a larger topk is left for the op to refuse


def parse_fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise ValueError("a fraction from 0 to 1")
    return value


MOE_PARAMS = (
    Param(name="topk", parse=int, default="8", help="numTopk: experts (copies) per token"),
    Param(name="drop", parse=parse_fraction, default="0",
          help="fraction of the tokens x topk copies the forward dropped (numOutTokens = "
               "(1 - drop) x tokens x topk rows of permutedOutputGrad)"),
)


def moe_routing(rng, tokens: int, topk: int, drop: float):
    """sortedIndices as MoeTokenPermute makes them: the rank of each (token, k) slot when the
    slots are stably sorted by expert, with experts drawn uniformly; and numOutTokens."""
    experts = rng.integers(0, MOE_EXPERTS, tokens * topk)
    first = np.argsort(experts, kind="stable")
    ranks = np.argsort(first, kind="stable").astype(np.int32)
    return ranks, int(round(tokens * topk * (1.0 - drop)))


def _moe_make(shape, dtype, params, rng):
    if len(shape) != 2:
        raise NpusimError(f"moe_token_permute_grad: --shape is TOKENS x HIDDEN, got "
                          f"{len(shape)} dimensions")
    tokens, hidden = shape
    topk = params["topk"]
    k = min(max(topk, 1), MOE_MAX_TOPK)   # an out-of-range topk is the op's to refuse
    if tokens * k * hidden > MAX_ELEMENTS:
        raise NpusimError(f"moe_token_permute_grad: permutedOutputGrad would have "
                          f"{tokens * k * hidden:,} elements (tokens x topk x hidden), more "
                          f"than {MAX_ELEMENTS:,}; the simulator keeps every tensor in host memory")
    indices, rows = moe_routing(rng, tokens, k, params["drop"])
    grad = random_array(rng, (rows, hidden), dtype)
    return (grad, indices), {"num_topk": topk}


def _moe_flops(args, kwargs):
    """fp32 adds: one per hidden element for every surviving copy after a token's first."""
    grad, indices = args
    k = kwargs["num_topk"]
    alive = (indices.reshape(-1, k) < grad.shape[0]).sum(axis=1)
    return int(np.maximum(alive - 1, 0).sum()) * grad.shape[1]


MOE_TOKEN_PERMUTE_GRAD = OpCase(
    name="moe_token_permute_grad", aclnn="aclnnMoeTokenPermuteGrad",
    summary="out[t] = sum over k of permutedOutputGrad[sortedIndices[t * topK + k]] "
            "(dropped copies skipped)",
    shape_help="TOKENS x HIDDEN: the shape of out (permutedOutputGrad has tokens x topk rows, "
               "fewer with drop)",
    default_shape=(1024, 4096), demo_shape=(512, 4096), quick_shape=(64, 512),
    dtypes=("bfloat16", "float16", "float32"), unit="vector",
    make=_moe_make, flops=_moe_flops, params=MOE_PARAMS,
    tiling_help="block_dim (AIV cores used), hidden_splited_length (elements of a row per UB "
                "chunk), buffer_num (input-row queue depth, 1 to 4), tokens_splited_length "
                "(tokens whose indices one UB batch holds)",
    notes="A gather: every kept row of permutedOutputGrad is read once and every output row "
          "written once, so the roofline is those bytes over the HBM bandwidth. TFLOPS counts "
          "the fp32 adds. Atlas A2 only.")

# --- EmbeddingDenseBackward --------------------------------------------------------------

EMB_ZIPF_EXPONENT = 1.1   # indices=zipf: row r of a random ranking drawn with weight 1 / r**1.1
EMB_INDEX_DTYPES = ("int64", "int32", "int16", "int8", "uint8", "bool", "float32", "float16",
                    "float64")


def _emb_choice(allowed):
    def parse(text):
        if text not in allowed:
            raise ValueError(f"one of {', '.join(allowed)}")
        return text
    return parse


def _emb_variant(text):
    return None if text in ("", "default") else _emb_choice(
        ("sorted", "deterministic", "small_dim", "v1"))(text)


EMB_PARAMS = (
    Param(name="num_weights", parse=int, default="32000", help="numWeights: rows of out"),
    Param(name="padding_idx", parse=int, default="-1",
          help="paddingIdx: rows with this index are skipped (negative: none)"),
    Param(name="scale_grad_by_freq", parse=parse_bool, default="false",
          help="divide each out row by how often its index occurs"),
    Param(name="indices", parse=_emb_choice(("uniform", "zipf")), default="uniform",
          help="index distribution: uniform over numWeights, or zipf (a few hot rows take "
               "most tokens: long runs of one index)"),
    Param(name="index_dtype", parse=_emb_choice(EMB_INDEX_DTYPES), default="int64",
          help="dtype of indices (cast to int32 as aclnn casts it)"),
    Param(name="variant", parse=_emb_variant, default="default",
          help="the kernel: default (as CANN chooses), sorted, deterministic, small_dim "
               "(Atlas A2), v1 (Atlas training)"),
)


def emb_indices(rng, count: int, num_weights: int, kind: str) -> np.ndarray:
    """``count`` indices in [0, num_weights): uniform, or Zipf-ranked over a random order."""
    if kind == "uniform":
        return rng.integers(0, num_weights, count)
    ranks = (rng.zipf(EMB_ZIPF_EXPONENT, count) - 1) % num_weights
    return rng.permutation(num_weights)[ranks]


def _emb_make(shape, dtype, params, rng):
    if len(shape) < 2:
        raise NpusimError("embedding_dense_backward: --shape is TOKENS x DIM (or more leading "
                          f"dims), got {len(shape)} dimension")
    nw = params["num_weights"]
    if nw < 1:
        raise NpusimError(f"embedding_dense_backward: num_weights = {nw}: must be at least 1")
    if nw * shape[-1] > MAX_ELEMENTS * 4:
        raise NpusimError(f"embedding_dense_backward: out would have {nw * shape[-1]:,} "
                          f"elements (num_weights x dim), more than {MAX_ELEMENTS * 4:,}")
    idx = emb_indices(rng, int(np.prod(shape[:-1])), nw, params["indices"])
    idx = idx.reshape(shape[:-1]).astype(DTYPES[params["index_dtype"]])
    kwargs = {"num_weights": nw, "padding_idx": params["padding_idx"],
              "scale_grad_by_freq": params["scale_grad_by_freq"], "variant": params["variant"]}
    return (random_array(rng, shape, dtype), idx), kwargs


def _emb_flops(args, kwargs):
    """fp32 adds: one per element of every grad row that is not padding; with scale, one
    multiply per element of out."""
    grad, idx = args
    kept = int(np.sum(np.asarray(idx).reshape(-1).astype(np.int64) != kwargs["padding_idx"]))
    scale = kwargs["num_weights"] * grad.shape[-1] if kwargs["scale_grad_by_freq"] else 0
    return kept * grad.shape[-1] + scale


def _emb_golden_options(result, args, kwargs) -> dict:
    """The tiling the run chose (variant, core split, flush size): the summation order."""
    return {"chip": result.chip, "tiling": result.tiling, "atomic": True}


EMBEDDING_DENSE_BACKWARD = OpCase(
    name="embedding_dense_backward", aclnn="aclnnEmbeddingDenseBackward",
    summary="out[i] = sum of the grad rows whose index is i (numWeights x DIM)",
    shape_help="TOKENS x DIM: the shape of grad (more leading dims allowed); indices has the "
               "leading dims",
    default_shape=(8192, 4096), demo_shape=(2048, 1024), quick_shape=(64, 128),
    dtypes=("float32", "float16", "bfloat16"), unit="vector",
    make=_emb_make, flops=_emb_flops, params=EMB_PARAMS,
    golden_options=_emb_golden_options, atomic_outputs=("out",),
    tiling_help="variant (sorted, deterministic, small_dim on Atlas A2; v1 on Atlas training), "
                "block_dim (cores of the main kernel), dim_chunk (DIM elements per pass), "
                "batch_rows (rows per UB batch: v1, small_dim), flush_rows (rows an "
                "accumulator sums before an atomic flush, 10 as CANN)",
    notes="A scatter-add: out is zeroed, grad read once and the touched rows atomically "
          "added, so the time depends on the indices (repeats are summed in UB before they "
          "reach GM). The roofline counts grad and indices in and out written once. out is an "
          "atomic output except with variant=deterministic.")

# --- CrossEntropyLossGrad ----------------------------------------------------------------

CE_IGNORED_EVERY = 16   # every 16th row's target is set to ignore_index (an ignored row)
CE_VECTOR_OPS = 2       # exp and the multiply by nll per element (casts not counted)

CE_PARAMS = (
    Param(name="reduction", parse=str, default="mean",
          help="none (gradLoss per row), mean or sum (0-D gradLoss)"),
    Param(name="ignore_index", parse=int, default="-100",
          help="targets equal to it give a zero row; every 16th row's target is set to it"),
    Param(name="weight", parse=parse_bool, default="false",
          help="pass a class weight (fp32, C values)"),
)


def _ce_make(shape, dtype, params, rng):
    if len(shape) != 2:
        raise NpusimError(f"cross_entropy_loss_grad: --shape is N x C (rows x classes), got "
                          f"{len(shape)} dimensions")
    n, c = shape
    logits = rng.standard_normal(shape, dtype=np.float32)
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_prob = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    target = rng.integers(0, c, n, dtype=np.int64)
    target[::CE_IGNORED_EVERY] = params["ignore_index"]
    reduction = params["reduction"]
    grad_loss = random_array(rng, (n,) if reduction == "none" else (), dtype)
    args = (grad_loss, log_prob.astype(DTYPES[dtype]), target)
    if params["weight"]:
        args += (rng.uniform(0.5, 2.0, c).astype(np.float32),)
    return args, {"reduction": reduction, "ignore_index": params["ignore_index"]}


def _ce_golden_options(result, args, kwargs) -> dict:
    """The cores and row batches the run used: they fix the order of mean's sum."""
    return {"block_dim": result.tiling.block_dim, "row_batch": result.tiling.row_batch}


def _ce_flops(args, kwargs):
    return CE_VECTOR_OPS * args[1].size


CROSS_ENTROPY_LOSS_GRAD = OpCase(
    name="cross_entropy_loss_grad", aclnn="aclnnCrossEntropyLossGrad",
    summary="xGradOut = exp(logProb) x nll - nll at the target column, nll = gradLoss x "
            "weight[target] (/ the weight sum for mean); ignored rows zero",
    shape_help="N x C: logProb's shape (rows x classes; the vocabulary is C)",
    default_shape=(1024, 32000), demo_shape=(512, 32000), quick_shape=(64, 1000),
    dtypes=("bfloat16", "float16", "float32"), unit="vector",
    make=_ce_make, flops=_ce_flops, params=CE_PARAMS, golden_options=_ce_golden_options,
    sweep_example="--shape 256x32000 --tiling col_chunk=pow2:2048:16384 --tiling buffer_num=1,2",
    tiling_help="block_dim (AIV cores used), row_batch (rows whose metadata one UB batch "
                "holds), col_chunk (elements of a row per UB chunk, whole 512 bytes), "
                "buffer_num (1 as CANN, 2 double buffering)",
    notes="Streams logProb in and xGradOut out once, so the roofline is those bytes (plus "
          "target, gradLoss and weight) over the HBM bandwidth. TFLOPS counts exp and the "
          "multiply per element. Atlas A2 only; mean sums per-core partials through a "
          "workspace after SyncAll, in a fixed order (deterministic, no atomics).")

CASES = {case.name: case for case in (SILU, CONVOLUTION, MOE_TOKEN_PERMUTE_GRAD,
                                               EMBEDDING_DENSE_BACKWARD, CROSS_ENTROPY_LOSS_GRAD)}


def lookup_case(name) -> OpCase | None:
    """The registered case for ``name`` (silu_backward, SiluBackward or aclnnSiluBackward),
    available or not; None when there is none."""
    key = str(name).lower().replace("_", "").removeprefix("aclnn")
    return next((c for c in CASES.values() if key == c.name.replace("_", "")), None)


def find_case(name: str) -> OpCase:
    """The case for ``name``, which ``npusim.ops`` must have; else a clear NpusimError."""
    case = lookup_case(name)
    if case is None:
        raise NpusimError(f"unknown op {name!r}; ops: {', '.join(available_names())}")
    if not case.available():
        raise NpusimError(f"{case.name} is not available yet in this npusim "
                          f"(npusim.ops has no {case.name}); ops: "
                          f"{', '.join(available_names())}")
    return case


def available_names() -> list:
    return [name for name, case in CASES.items() if case.available()]
