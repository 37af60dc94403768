"""The case of aclnnGroupedMatmul (single tensors, groupListType 0): the MoE experts' GEMMs.

``--shape MxK`` is x's shape: tokens x hidden for group_type 0, hidden x tokens (x = X^T, made
as the transpose of a tokens x hidden array) for group_type 2. Parameters: ``experts`` (E),
``n`` (N), ``groups`` (how the tokens fall to the experts: uniform, random (seeded multinomial),
empty (every third expert gets none)), ``group_type`` (0 or 2), ``weight`` (row: [E, K, N] as
stored; transposed: the transpose of an [E, N, K] array, the input gradient's W^T).

An expert layer (two GEMMs, w1: hidden -> 2 x ffn for gate and up, w2: ffn -> hidden; T tokens
routed, top-k copies each) lists, per micro-batch, six calls:
forward ``T·k x hidden`` n=2·ffn and ``T·k x ffn`` n=hidden; the input gradients ``T·k x
hidden`` n=ffn weight=transposed and ``T·k x 2·ffn`` n=hidden weight=transposed; the weight
gradients ``ffn x T·k`` n=hidden group_type=2 and ``hidden x T·k`` n=2·ffn group_type=2.
"""

import numpy as np

from npusim.cases.common import OpCase, Param, random_array
from npusim.errors import NpusimError

GROUPS = ("uniform", "random", "empty")
WEIGHTS = ("row", "transposed")


def _choice(allowed):
    def parse(text: str) -> str:
        if text not in allowed:
            raise ValueError(f"allowed: {', '.join(allowed)}")
        return text
    return parse


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError("a positive integer")
    return value


def _group_type(text: str) -> int:
    value = int(text)
    if value not in (0, 2):
        raise ValueError("0 (groups of M) or 2 (groups of K)")
    return value


def group_sizes(total: int, experts: int, kind: str, rng) -> np.ndarray:
    """Tokens per expert: ``total`` split evenly, by a seeded multinomial, or evenly over the
    experts not every third."""
    if kind == "random":
        return rng.multinomial(total, np.full(experts, 1 / experts))
    live = np.arange(experts) % 3 != 1 if kind == "empty" and experts > 1 else \
        np.ones(experts, bool)
    sizes = np.zeros(experts, np.int64)
    count = int(live.sum())
    sizes[live] = total // count + (np.arange(count) < total % count)
    return sizes


def _make(shape, dtype, params, rng):
    if len(shape) != 2:
        raise NpusimError(f"grouped_matmul: shape {'x'.join(map(str, shape))}: MxK, two sizes "
                          f"(x's shape); got {len(shape)}")
    m, k = shape
    e, n, gt = params["experts"], params["n"], params["group_type"]
    ends = np.cumsum(group_sizes(m if gt == 0 else k, e, params["groups"], rng)).astype(
        np.int64)
    if gt == 2:
        x = random_array(rng, (k, m), dtype).T
        return (x, random_array(rng, (k, n), dtype), ends), {"group_type": 2}
    x = random_array(rng, (m, k), dtype)
    if params["weight"] == "transposed":
        w = random_array(rng, (e, n, k), dtype).transpose(0, 2, 1)
    else:
        w = random_array(rng, (e, k, n), dtype)
    return (x, w, ends), {"group_type": 0}


def _flops(args, kwargs):
    x, weight, ends = args
    routed = int(ends[-1]) if len(ends) else 0
    if kwargs.get("group_type", 0) == 2:
        return 2 * x.shape[0] * weight.shape[1] * routed
    return 2 * routed * x.shape[1] * weight.shape[2]


def _golden_options(result, args, kwargs) -> dict:
    return {"tiling": result.tiling}


GROUPED_MATMUL = OpCase(
    name="grouped_matmul", aclnn="aclnnGroupedMatmul",
    summary="the experts' GEMMs: y[rows of e] = x[rows of e] @ weight[e] (or dW_e = X_e^T dY_e)",
    shape_help="MxK: x's shape (tokens x hidden; hidden x tokens with group_type 2)",
    default_shape=(1024, 2048), demo_shape=(512, 512), quick_shape=(64, 128),
    dtypes=("bfloat16", "float16"), unit="cube", make=_make, flops=_flops,
    params=(Param(name="experts", parse=_positive, default="8", help="E, the experts"),
            Param(name="n", parse=_positive, default="2048", help="N, the output width"),
            Param(name="groups", parse=_choice(GROUPS), default="uniform",
                  help="tokens per expert: uniform, random (multinomial), empty (every third "
                       "expert none)"),
            Param(name="group_type", parse=_group_type, default="0",
                  help="0: groups of M (forward, input gradient); 2: groups of K (the weight "
                       "gradient: x = X^T, weight = dY)"),
            Param(name="weight", parse=_choice(WEIGHTS), default="row",
                  help="group_type 0: row ([E, K, N]) or transposed (W^T of an [E, N, K] "
                       "array: the input gradient)")),
    golden_options=_golden_options,
    tiling_help="l1_m, l1_n (the base block), l1_k (the L1 k tile), l0_k (the L0 k step), "
                "shuffle_k (true/false), block_dim (cube cores)",
    sweep_example="--tiling l1_n=128,256",
    notes="Atlas A2 only (the CATLASS-shaped kernel's FixPipe). Groups dealt to the cube cores "
          "as CANN's GroupedMatmul kernel does; each base block is CATLASS's BlockMmad.")
