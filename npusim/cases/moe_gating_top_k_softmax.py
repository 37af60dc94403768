"""The case of aclnnMoeGatingTopKSoftmax, the MoE router: softmax over the experts, top k.

``--shape ROWSxE`` (or BxSxE): the router's logits, one row per token; ``--param k=8``."""

from npusim.cases.common import OpCase, Param, random_array
from npusim.errors import NpusimError

GATING_OPS = 6    # max, sub, exp, sum, div per element, and the sort's compares (about one)


def _k(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 1024:
        raise ValueError("1 to 1024 (and at most the experts)")
    return value


def _make(shape, dtype, params, rng):
    if len(shape) not in (2, 3):
        raise NpusimError(f"moe_gating_top_k_softmax: shape {'x'.join(map(str, shape))}: "
                          "ROWSxE or BxSxE")
    return (random_array(rng, shape, dtype),), {"k": params["k"]}


def _flops(args, kwargs):
    return GATING_OPS * args[0].size


MOE_GATING_TOP_K_SOFTMAX = OpCase(
    name="moe_gating_top_k_softmax", aclnn="aclnnMoeGatingTopKSoftmax",
    summary="the MoE router: yOut, expertIdxOut = topK(softmax(x, -1), k); rowIdxOut",
    shape_help="ROWSxE (or BxSxE): one row of expert logits per token (DeepSeek-V3-like: "
               "4096x256, k 8)",
    default_shape=(4096, 256), demo_shape=(1024, 256), quick_shape=(64, 64),
    dtypes=("bfloat16", "float16", "float32"), unit="vector", make=_make, flops=_flops,
    params=(Param(name="k", parse=_k, default="8", help="the experts each token goes to"),),
    tiling_help="block_dim (vector cores; ceil(rows / block_dim) rows a core), row_factor "
                "(rows of outputs a batch)",
    notes="Atlas A2 only. finishedOptional is not modelled.")
