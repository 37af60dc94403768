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
    if 0 in shape:       # the operator refuses it too (B, S, N and D at least 1)
        raise NpusimError(f"{what}: shape {'x'.join(map(str, shape))} has a zero dimension; "
                          "B, S, N and D are at least 1")
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


def _stats(q, k, v, kwargs) -> tuple:
    """softmaxMax, softmaxSum and attentionOut of the forward, in float64 per head (a host
    reference, only to give the backward consistent inputs; at sizes beyond a few million
    scores, timing-only runs get unit statistics and zeros instead)."""
    b, s, n, d = q.shape
    if b * n * s * s > 1 << 24:
        ones = np.ones((b, n, s, 8), np.float32)
        return 0 * ones, ones, np.zeros_like(q)
    qf, kf, vf = (x.astype(np.float64).transpose(0, 2, 1, 3) for x in (q, k, v))
    sc = qf @ kf.transpose(0, 1, 3, 2) * kwargs["scale_value"]
    if kwargs["sparse_mode"]:
        sc = np.where(np.triu(np.ones((s, s), bool), 1), -np.inf, sc)
    m = sc.max(-1)
    e = np.exp(sc - m[..., None])
    total = e.sum(-1)
    out = ((e / total[..., None]) @ vf).transpose(0, 2, 1, 3).astype(q.dtype)
    return _lanes(m), _lanes(total), out


def _lanes(x: np.ndarray) -> np.ndarray:
    """Each row's value in 8 fp32 lanes, as the forward stores its statistics."""
    return np.repeat(x.astype(np.float32)[..., None], 8, axis=-1)


def _grad_make(shape, dtype, params, rng):
    shape = _dims(shape, "flash_attention_score_grad")
    q, k, v, dy = (random_array(rng, shape, dtype) for _ in range(4))
    kwargs = attention_kwargs(shape, params)
    smax, ssum, out = _stats(q, k, v, kwargs)
    kwargs["atten_mask"] = causal_mask() if params["causal"] else None
    return (q, k, v, dy, smax, ssum, out), kwargs


def _grad_flops(args, kwargs):
    """Five GEMMs (S, dP, dV, dQ, dK) over the visible pairs."""
    return 10 * args[0].shape[3] * visible(args[0].shape, kwargs["sparse_mode"] != 0)


FLASH_ATTENTION_SCORE_GRAD = OpCase(
    name="flash_attention_score_grad", aclnn="aclnnFlashAttentionScoreGrad",
    summary="dqOut, dkOut, dvOut of flash attention, P recomputed from softmaxMax/Sum",
    shape_help="BxSxNxD: query, key, value, dy and attentionIn in BSND (the MoE layer's "
               "1x4096x128x128); D a multiple of 64",
    default_shape=(1, 2048, 8, 128), demo_shape=(1, 1024, 4, 128), quick_shape=(1, 256, 2, 64),
    dtypes=("bfloat16", "float16"), unit="cube", make=_grad_make, flops=_grad_flops,
    params=CAUSAL, golden_options=_golden_options, tiling_help=TILING_HELP,
    sweep_example="--tiling s2_base=64,128", atomic_outputs=("dkOut", "dvOut"),
    notes="Atlas A2 only: MemSet of three fp32 workspaces, one mix kernel (S and dP on the "
          "cube, P and dS on the vector cores, dV, dQ, dK atomically added), the post Muls + "
          "Cast. FLOPs count the five GEMMs over the visible (query, key) pairs.")
