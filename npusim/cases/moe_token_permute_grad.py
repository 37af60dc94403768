"""The case of aclnnMoeTokenPermuteGrad: routing as MoeTokenPermute makes it, inputs, flops
and help for the command."""

import numpy as np

from npusim.cases.common import MAX_ELEMENTS, OpCase, Param, random_array
from npusim.errors import NpusimError

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
