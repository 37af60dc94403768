"""The case of aclnnMoeTokenPermute: tokens and a router's top-k expert choices, inputs and help
for the command. The default shape is the MoE layer's (4096 tokens x 7168, top-8 of 256)."""

import numpy as np

from npusim.cases.common import MAX_ELEMENTS, OpCase, Param, random_array
from npusim.cases.moe_token_permute_grad import moe_routing, parse_fraction
from npusim.errors import NpusimError

MAX_TOPK = 512      # a larger topk is left for the op to refuse (made with 512)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError("a positive integer")
    return value


PERMUTE_PARAMS = (
    Param(name="topk", parse=int, default="8", help="experts (copies) per token: indices' dim 1"),
    Param(name="experts", parse=_positive, default="256",
          help="experts the router chooses from (each token's topk are distinct when topk <= "
               "experts)"),
    Param(name="num_out_tokens", parse=int, default="0",
          help="numOutTokens: rows of permuteTokensOut kept (0 all; <= 0 counts from the end)"),
)


def router_choices(rng, tokens: int, topk: int, experts: int) -> np.ndarray:
    """(tokens, topk) int32 expert indices as a top-k router picks them: distinct per token
    (uniform at random) when topk <= experts, else drawn with repeats."""
    if topk <= experts:
        keys = rng.random((tokens, experts), dtype=np.float32)
        return np.argsort(keys, axis=1)[:, :topk].astype(np.int32)
    return rng.integers(0, experts, (tokens, topk)).astype(np.int32)


def _clamped_topk(op: str, topk: int, tokens: int) -> int:
    """topk as the routing is made with (1 to 512); a value outside is the op's to refuse, so
    its arrays are made at that size, unless there can be none of it."""
    if topk < 0:
        raise NpusimError(f"{op}: topk = {topk}: experts per token, allowed 1 to {MAX_TOPK}")
    if tokens * topk > MAX_ELEMENTS:
        raise NpusimError(f"{op}: tokens x topk = {tokens * topk:,} indices, more than "
                          f"{MAX_ELEMENTS:,}")
    return min(max(topk, 1), MAX_TOPK)


def _make(shape, dtype, params, rng):
    if len(shape) != 2:
        raise NpusimError(f"moe_token_permute: --shape is TOKENS x HIDDEN, got {len(shape)} "
                          "dimensions")
    tokens, hidden = shape
    k = _clamped_topk("moe_token_permute", params["topk"], tokens)
    if tokens * k * hidden > MAX_ELEMENTS or tokens * params["experts"] > MAX_ELEMENTS:
        raise NpusimError(f"moe_token_permute: permuteTokensOut would have "
                          f"{tokens * k * hidden:,} elements (tokens x topk x hidden), more "
                          f"than {MAX_ELEMENTS:,}; the simulator keeps every tensor in host memory")
    indices = router_choices(rng, tokens, k, params["experts"])
    if params["topk"] != k:
        indices = np.zeros((tokens, params["topk"]), np.int32)   # the op refuses this topk
    return (random_array(rng, shape, dtype), indices), \
        {"num_out_tokens": params["num_out_tokens"]}


MOE_TOKEN_PERMUTE = OpCase(
    name="moe_token_permute", aclnn="aclnnMoeTokenPermute",
    summary="each token copied to the rows of its topk experts, grouped by expert "
            "(permuteTokensOut) and where each copy went (sortedIndicesOut)",
    shape_help="TOKENS x HIDDEN: the shape of tokens (indices is TOKENS x topk)",
    default_shape=(4096, 7168), demo_shape=(1024, 4096), quick_shape=(64, 512),
    dtypes=("bfloat16", "float16", "float32", "int8"), unit="vector",
    make=_make, flops=lambda args, kwargs: 0, params=PERMUTE_PARAMS,
    tiling_help="block_dim (cores of the index copy), once_ub_token_nums (token rows per "
                "copy-in), sort_chunk (keys one UB sorts), merge_window (keys a merge step "
                "holds)",
    sweep_example="--tiling once_ub_token_nums=1,2,4,6",
    notes="Two sorts of the tokens x topk indices, then a scatter: every token row is read "
          "once and written topk times, so the roofline is those bytes (and the indices) over "
          "the HBM bandwidth; no arithmetic. Atlas A2 only.")


def parse_bool(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise ValueError("true or false")
    return text.lower() == "true"


UNPERMUTE_PARAMS = (
    Param(name="topk", parse=int, default="8", help="experts (copies) per token (probs' dim 1; "
          "1 without probs)"),
    Param(name="probs", parse=parse_bool, default="true",
          help="pass probs (the router's weights, rows summing to 1); false: topk is 1"),
    Param(name="drop", parse=parse_fraction, default="0",
          help="fraction of the copies the forward dropped (permutedTokens has that many fewer "
               "rows)"),
)


def router_probs(rng, tokens: int, topk: int, dtype: str) -> np.ndarray:
    """A router's top-k weights: positive, each row summing to 1, in ``dtype``."""
    w = rng.random((tokens, topk), dtype=np.float32) + np.float32(0.05)
    return (w / w.sum(axis=1, keepdims=True)).astype(random_array(rng, (0,), dtype).dtype)


def _unpermute_make(shape, dtype, params, rng):
    if len(shape) != 2:
        raise NpusimError(f"moe_token_unpermute: --shape is TOKENS x HIDDEN, got {len(shape)} "
                          "dimensions")
    tokens, hidden = shape
    k = _clamped_topk("moe_token_unpermute", params["topk"], tokens) if params["probs"] else 1
    if tokens * k * hidden > MAX_ELEMENTS:
        raise NpusimError(f"moe_token_unpermute: permutedTokens would have "
                          f"{tokens * k * hidden:,} elements (tokens x topk x hidden), more "
                          f"than {MAX_ELEMENTS:,}; the simulator keeps every tensor in host memory")
    indices, rows = moe_routing(rng, tokens, k, params["drop"])
    x = random_array(rng, (rows, hidden), dtype)
    if not params["probs"]:
        return (x, indices), {}
    probs = router_probs(rng, tokens, k, dtype)
    if params["topk"] != k:
        probs = np.zeros((tokens, params["topk"]), probs.dtype)   # the op refuses this topk
    return (x, indices, probs), {}


def _unpermute_flops(args, kwargs):
    """fp32 Muls and Adds: per hidden element, one product per surviving copy and one add per
    surviving copy after a token's first (none without probs)."""
    if len(args) < 3:
        return 0
    x, indices, probs = args
    alive = ((indices.reshape(probs.shape) < x.shape[0]) & (probs != 0)).sum(axis=1)
    return int((2 * alive - 1).clip(min=0).sum()) * x.shape[1]


MOE_TOKEN_UNPERMUTE = OpCase(
    name="moe_token_unpermute", aclnn="aclnnMoeTokenUnpermute",
    summary="out[t] = sum over k of probs[t, k] * permutedTokens[sortedIndices[t * topK + k]]",
    shape_help="TOKENS x HIDDEN: the shape of unpermutedTokens (permutedTokens has tokens x "
               "topk rows, fewer with drop)",
    default_shape=(4096, 7168), demo_shape=(512, 4096), quick_shape=(64, 512),
    dtypes=("bfloat16", "float16", "float32"), unit="vector",
    make=_unpermute_make, flops=_unpermute_flops, params=UNPERMUTE_PARAMS,
    tiling_help="block_dim (AIV cores used), hidden_splited_length (elements of a row per UB "
                "chunk), buffer_num (input-row queue depth, 1 to 4), tokens_splited_length "
                "(tokens whose indices and probs one UB batch holds)",
    notes="A weighted gather: every kept row of permutedTokens is read once and every output "
          "row written once, so the roofline is those bytes over the HBM bandwidth. TFLOPS "
          "counts the fp32 products and adds. Atlas A2 only.")


def _unpermute_grad_make(shape, dtype, params, rng):
    (x, indices, *probs), _ = _unpermute_make(shape, dtype, params, rng)
    grad = random_array(rng, shape, dtype)
    return (x, grad, indices, *probs), {}


def _unpermute_grad_flops(args, kwargs):
    """fp32 work per hidden element of each copy: the gradient times its prob, and the product
    with the permuted row and its sum (none without probs)."""
    if len(args) < 4:
        return 0
    return 3 * args[2].size * args[0].shape[1]


def chunk_of(result, args, kwargs) -> dict:
    """The hidden chunk the kernel summed the probs gradient in (the golden's ``chunk``)."""
    t = result.tiling
    return {"chunk": t.hidden_size_align if t.hidden_size_loop_times > 1 else None}


MOE_TOKEN_UNPERMUTE_GRAD = OpCase(
    name="moe_token_unpermute_grad", aclnn="aclnnMoeTokenUnpermuteGrad",
    summary="permutedTokensGradOut[idx] = unpermutedTokensGrad[t] * probs[t, k]; probsGradOut = "
            "the row products' sums",
    shape_help="TOKENS x HIDDEN: the shape of unpermutedTokensGrad (permutedTokens has tokens x "
               "topk rows, fewer with drop)",
    default_shape=(4096, 7168), demo_shape=(256, 4096), quick_shape=(64, 512),
    dtypes=("bfloat16", "float16", "float32"), unit="vector",
    make=_unpermute_grad_make, flops=_unpermute_grad_flops, params=UNPERMUTE_PARAMS,
    golden_options=chunk_of, tiling_help="none (CANN derives every field from the shape)",
    sweep_example="--param topk=2,4,8",
    notes="With probs every kept permuted row is read and written once and the gradient read "
          "once per copy; the roofline is those bytes over the HBM bandwidth. Atlas A2 only.")
