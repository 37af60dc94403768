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
    atomic_outputs: tuple = ()   # outputs summed by GM atomic adds in simulated-time order: the
    #                              report checks them within a summation-order bound, not bit for bit

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
    """``"1"`` -> (1, 1) and ``"2,1"`` -> (2, 1): a pair of non-negative integers."""
    try:
        values = tuple(int(v) for v in str(text).split(","))
    except ValueError:
        values = ()
    if len(values) == 1:
        values *= 2
    if len(values) != 2 or min(values) < 0:
        raise ValueError("one or two non-negative integers, e.g. 1 or 2,1")
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
    tiling_help="block_dim (vector cores used), tile_length (elements per UB tile, whole "
                "32-byte blocks), buffer_num (1 single, 2 double buffering)",
    notes="Elementwise: the roofline is the bytes in and out over the HBM bandwidth. "
          "TFLOPS counts the 9 vector operations per element.")


# --- ConvolutionBackward ------------------------------------------------------------------

def _weight_shape(text):
    dims = tuple(int(v) for v in str(text).lower().split("x"))
    if len(dims) not in (3, 4) or min(dims) < 1:
        raise ValueError("out_channels x kH x kW (or the full 4-D weight shape), e.g. 64x3x3")
    return dims


CONV_PARAMS = (
    Param(name="weight", parse=_weight_shape, default="64x3x3",
          help="Cout x kH x kW: output channels and kernel size (in channels follow from "
               "--shape and groups), or the full 4-D weight shape"),
    Param(name="stride", parse=parse_ints, default="1", help="stride, one value or h,w"),
    Param(name="padding", parse=parse_ints, default="1", help="padding, one value or h,w"),
    Param(name="dilation", parse=parse_ints, default="1", help="dilation, one value or h,w"),
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


def conv_geometry(shape, params):
    """(weight shape, gradOutput shape) of a 2-D convolution with input ``shape`` NCHW."""
    if len(shape) != 4:
        raise NpusimError(f"convolution_backward: --shape is the input N x C x H x W, "
                          f"got {len(shape)} dimensions")
    n, c, h, w = shape
    g = params["groups"]
    wdims = params["weight"]
    if len(wdims) == 3:
        cout, kh, kw = wdims
        wdims = (c, cout // max(g, 1), kh, kw) if params["transposed"] else \
            (cout, c // max(g, 1), kh, kw)
    (sh, sw), (ph, pw), (dh, dw) = params["stride"], params["padding"], params["dilation"]
    kh, kw = wdims[2], wdims[3]
    if params["transposed"]:
        oph, opw = params["output_padding"]
        ho = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
        wo = (w - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
        cout = wdims[1] * g
    else:
        ho = (h + 2 * ph - dh * (kh - 1) - 1) // max(sh, 1) + 1
        wo = (w + 2 * pw - dw * (kw - 1) - 1) // max(sw, 1) + 1
        cout = wdims[0]
    if ho < 1 or wo < 1:
        raise NpusimError(f"convolution_backward: input {shape} with kernel {kh}x{kw} gives an "
                          f"empty output ({ho}x{wo})")
    return wdims, (n, cout, ho, wo)


def _conv_make(shape, dtype, params, rng):
    wshape, gshape = conv_geometry(shape, params)
    x, weight = random_array(rng, shape, dtype), random_array(rng, wshape, dtype)
    dy = random_array(rng, gshape, dtype)
    kwargs = {k: params[k] for k in ("stride", "padding", "dilation", "groups", "transposed",
                                     "output_padding", "output_mask", "cube_math_type")}
    kwargs["bias_sizes"] = (gshape[1],)
    return (dy, x, weight), kwargs


def _conv_golden_options(result, args, kwargs) -> dict:
    """What the run chose that the golden must round like: the cube's dtype for the chip and
    cube_math_type (HF32 on atlas-a2, fp16 on atlas-training), the dw K split, the bias tile."""
    from npusim.dtypes import name_of
    from npusim.ops.conv_args import compute_dtype, promote
    from npusim.ops.convolution_backward import bias_tile

    dy = args[0]
    chip, t = result.chip, result.tiling
    cd, hf32 = compute_dtype(chip, promote(*(name_of(a.dtype) for a in args)),
                             kwargs["cube_math_type"])
    return {"compute_dtype": cd, "hf32_bits": chip.hf32_mantissa_bits if hf32 else 0,
            "dw_k_parts": t.dw_k_parts, "bias_tile": bias_tile(t, int(np.prod(dy.shape[2:])))}


def _conv_flops(args, kwargs):
    """2 x multiply-accumulates of the forward convolution, once per gradient asked for
    (gradInput and gradWeight), plus one add per gradOutput element for gradBias."""
    dy, x, weight = args
    side = x if kwargs["transposed"] else dy
    macs = side.shape[0] * side.shape[2] * side.shape[3] * weight.size
    mask = kwargs["output_mask"]
    return 2 * macs * (int(mask[0]) + int(mask[1])) + (dy.size if mask[2] else 0)


CONVOLUTION = OpCase(
    name="convolution_backward", aclnn="aclnnConvolutionBackward",
    summary="gradInput, gradWeight, gradBias of a 2-D convolution",
    shape_help="the forward input N x C x H x W (gradOutput and weight follow from the params)",
    default_shape=(8, 64, 56, 56), demo_shape=(4, 64, 28, 28), quick_shape=(1, 16, 8, 8),
    dtypes=("float16", "float32", "bfloat16"), unit="cube",
    make=_conv_make, flops=_conv_flops, params=CONV_PARAMS,
    golden_options=_conv_golden_options,
    notes="Cube work: the roofline is the larger of the flops over the cube peak and the bytes "
          "over the HBM bandwidth.")

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
    default_shape=(2048, 4096), demo_shape=(1024, 4096), quick_shape=(64, 512),
    dtypes=("bfloat16", "float16", "float32"), unit="vector",
    make=_moe_make, flops=_moe_flops, params=MOE_PARAMS,
    tiling_help="block_dim (AIV cores used), hidden_splited_length (elements of a row per UB "
                "chunk), buffer_num (input-row queue depth, 1 to 4), tokens_splited_length "
                "(tokens whose indices one UB batch holds)",
    notes="A gather: every kept row of permutedOutputGrad is read once and every output row "
          "written once, so the roofline is those bytes over the HBM bandwidth. TFLOPS counts "
          "the fp32 adds. Atlas A2 only.")

CASES = {case.name: case for case in (SILU, CONVOLUTION, MOE_TOKEN_PERMUTE_GRAD)}


def find_case(name: str) -> OpCase:
    """The case for ``name`` (silu_backward, SiluBackward or aclnnSiluBackward)."""
    key = name.lower().replace("_", "").removeprefix("aclnn")
    for case in CASES.values():
        if key == case.name.replace("_", ""):
            if not case.available():
                raise NpusimError(f"{case.name} is not available yet in this npusim "
                                  f"(npusim.ops has no {case.name}); ops: "
                                  f"{', '.join(available_names())}")
            return case
    raise NpusimError(f"unknown op {name!r}; ops: {', '.join(available_names())}")


def available_names() -> list:
    return [name for name, case in CASES.items() if case.available()]
