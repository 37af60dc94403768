"""The case of aclnnMoeTokenPermute: tokens and a router's top-k expert choices, inputs and help
for the command. The default shape is the MoE layer's (4096 tokens x 7168, top-8 of 256)."""

import numpy as np

from npusim.cases.common import MAX_ELEMENTS, OpCase, Param, random_array
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


def _make(shape, dtype, params, rng):
    if len(shape) != 2:
        raise NpusimError(f"moe_token_permute: --shape is TOKENS x HIDDEN, got {len(shape)} "
                          "dimensions")
    tokens, hidden = shape
    k = min(max(params["topk"], 1), MAX_TOPK)
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
