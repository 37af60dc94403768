"""The cases of aclnnFlashAttentionScore and aclnnFlashAttentionScoreGrad: inputs, flops and help.

``--shape BxSxNxD`` (BSND, query, key and value alike: self-attention); ``--param causal=true``
passes the compressed 2048 x 2048 causal mask with sparse_mode 2 (leftUpCausal), false no mask;
the scale is 1 / sqrt(D)."""

import numpy as np

from npusim.cases.common import OpCase, Param, parse_bool, random_array
from npusim.errors import NpusimError

MASK_SIZE = 2048


def _dims(shape, what: str) -> tuple:
    if len(shape) != 4:
        raise NpusimError(f"{what}: shape {'x'.join(map(str, shape))}: BxSxNxD (BSND), four "
                          "sizes")
    return shape


def causal_mask() -> np.ndarray:
    """The compressed causal mask of sparse modes 2 and 3: 1 above the diagonal."""
    return np.triu(np.ones((MASK_SIZE, MASK_SIZE), np.uint8), 1)


def attention_kwargs(shape, params) -> dict:
    b, s, n, d = shape
    return {"head_num": n, "scale_value": 1.0 / float(np.sqrt(d)), "input_layout": "BSND",
            "sparse_mode": 2 if params["causal"] else 0}


def visible(shape, causal: bool) -> int:
    """(query, key) pairs the attention computes: all S^2, or the causal triangle's."""
    b, s, n, _ = shape
    pairs = s * (s + 1) // 2 if causal else s * s
    return b * n * pairs


def _fwd_make(shape, dtype, params, rng):
    shape = _dims(shape, "flash_attention_score")
    q, k, v = (random_array(rng, shape, dtype) for _ in range(3))
    mask = causal_mask() if params["causal"] else None
    return (q, k, v, mask), attention_kwargs(shape, params)


def _fwd_flops(args, kwargs):
    return 4 * args[0].shape[3] * visible(args[0].shape, kwargs["sparse_mode"] != 0)


def _golden_options(result, args, kwargs) -> dict:
    return {"tiling": result.tiling}


CAUSAL = (Param(name="causal", parse=parse_bool, default="true",
                help="true: the compressed causal mask with sparse_mode 2; false: no mask"),)
TILING_HELP = ("s1_base (query rows a block, a multiple of 16 up to 128), s2_base (key columns "
               "a block, 64 or 128), block_dim (cube cores; each with its two vector cores)")

FLASH_ATTENTION_SCORE = OpCase(
    name="flash_attention_score", aclnn="aclnnFlashAttentionScore",
    summary="attentionOut = softmax(scale * Q K^T, causal) V per head; softmaxMax, softmaxSum",
    shape_help="BxSxNxD: query, key and value in BSND (self-attention; the MoE layer's "
               "1x4096x128x128)",
    default_shape=(1, 2048, 8, 128), demo_shape=(1, 1024, 4, 128), quick_shape=(1, 256, 2, 64),
    dtypes=("bfloat16", "float16"), unit="cube", make=_fwd_make, flops=_fwd_flops,
    params=CAUSAL, golden_options=_golden_options, tiling_help=TILING_HELP,
    sweep_example="--tiling s1_base=64,128 --tiling s2_base=64,128",
    notes="Atlas A2 only: one mix kernel, the cube's Q K^T and P V, the vector cores' online "
          "softmax, through a GM workspace; causal blocks above the diagonal skipped. FLOPs "
          "count the two GEMMs over the visible (query, key) pairs.")
