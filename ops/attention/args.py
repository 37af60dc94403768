"""aclnnFlashAttentionScore's (and its grad's) argument rules, from their aclnn documents
(hicann/ops-transformer ``attention/flash_attention_score/docs/aclnnFlashAttentionScore.md``,
``attention/flash_attention_score_grad/docs/aclnnFlashAttentionScoreGrad.md``).

Products: Atlas A2 training (and A3, not a chip here); the Atlas training series and the
inference series are not supported (161002). query, key, value: FLOAT16, BFLOAT16 or FLOAT32 of
one dtype, 4-D in the input layout; B equal, qD == kD >= vD, Nq a multiple of Nkv, N 1..256,
D 1..768, S >= 1; key and value alike but for D; keepProb in (0, 1]; sparseMode 0..6;
attenMask BOOL or UINT8. A None tensor is 161001, every other violation 161002.

What npusim models of these (else 161002 saying so): fp16 and bf16; the layouts BSND and BNSD;
Nq == Nkv (no GQA/MQA), vD == kD, D a multiple of 16 up to 128; keepProb 1 (no dropout); no
pse, padding mask or prefix; no attenMask (every key seen: sparseMode has no effect, as the
document says) or the compressed 2048 x 2048 causal mask with sparseMode 2 (leftUpCausal) or
3 (rightDownCausal, Sq <= Skv).
"""

import math
from dataclasses import dataclass

import numpy as np

from npusim.dtypes import name_of
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ParamError
from npusim.ops.attention.tiling import MASK_SIZE
from npusim.ops.common import as_array, check_modelled_product, require

OP = "aclnnFlashAttentionScore"
OP_GRAD = "aclnnFlashAttentionScoreGrad"
PRODUCTS = ("atlas-a2",)
DTYPES = ("float16", "bfloat16", "float32")
MODELLED_DTYPES = ("float16", "bfloat16")
LAYOUTS = ("BSH", "SBH", "BSND", "BNSD")
MODELLED_LAYOUTS = ("BSND", "BNSD")
MASK_DTYPES = ("bool", "uint8")


@dataclass(frozen=True)
class AttentionArgs:
    """The checked arguments: the arrays (C-contiguous), their sizes, the mask's meaning."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    mask: np.ndarray | None     # the compressed causal mask as uint8, or None
    dims: tuple                 # (B, N, S1, S2, D)
    layout: str
    causal: bool
    shift: int                  # key c is seen by query r when c <= r + shift
    scale: float


def invalid(op: str, message: str) -> ParamError:
    return ParamError(f"{op}: {message}", code=ACLNN_ERR_PARAM_INVALID)


def _bnsd(op: str, name: str, arr: np.ndarray, layout: str) -> tuple:
    """(B, N, S, D) of a tensor in ``layout``."""
    if layout not in LAYOUTS:
        raise invalid(op, f"input_layout {layout!r}; allowed: {', '.join(LAYOUTS)}")
    if layout not in MODELLED_LAYOUTS:
        raise invalid(op, f"input_layout {layout!r} is not modelled by npusim; modelled: "
                          f"{', '.join(MODELLED_LAYOUTS)}")
    if arr.ndim != 4:
        raise invalid(op, f"{name} has {arr.ndim} dims {tuple(arr.shape)}; {layout} is 4-D")
    b, x, y, d = arr.shape
    return (b, y, x, d) if layout == "BSND" else (b, x, y, d)


def check_tensors(op: str, chip, query, key, value, layout: str, head_num) -> tuple:
    """The three arrays (contiguous) and (B, N, S1, S2, D)."""
    require(op, query=query, key=key, value=value)
    check_modelled_product(op, chip, PRODUCTS)
    q, k, v = (as_array(op, n, a) for n, a in (("query", query), ("key", key), ("value", value)))
    for name, arr in (("query", q), ("key", k), ("value", v)):
        got = name_of(arr.dtype)
        if got not in DTYPES:
            raise invalid(op, f"{name} dtype {got} is not supported; allowed: "
                              f"{', '.join(DTYPES)}")
    if len({q.dtype, k.dtype, v.dtype}) > 1:
        raise invalid(op, f"query, key and value must have one dtype; given {q.dtype}, "
                          f"{k.dtype}, {v.dtype}")
    if name_of(q.dtype) not in MODELLED_DTYPES:
        raise invalid(op, f"dtype {name_of(q.dtype)} is not modelled by npusim (its fp32 cube "
                          f"path); modelled: {', '.join(MODELLED_DTYPES)}")
    (b, n, s1, d), (bk, nk, s2, dk), (bv, nv, sv, dv) = (
        _bnsd(op, name, arr, layout) for name, arr in (("query", q), ("key", k), ("value", v)))
    _check_dims(op, (b, n, s1, d), (bk, nk, s2, dk), (bv, nv, sv, dv), head_num)
    return tuple(np.ascontiguousarray(a) for a in (q, k, v)), (b, n, s1, s2, d)


def _check_dims(op, qd, kd, vd, head_num) -> None:
    (b, n, s1, d), (bk, nk, s2, dk), (bv, nv, sv, dv) = qd, kd, vd
    if not (isinstance(head_num, int | np.integer) and not isinstance(head_num, bool)):
        raise invalid(op, f"head_num = {head_num!r}; an integer is required")
    if head_num != n:
        raise invalid(op, f"head_num = {head_num} but query has N = {n}")
    if (bk, nk, s2) != (bv, nv, sv):
        raise invalid(op, f"key and value must be alike but for D; key (B, N, S) = "
                          f"{(bk, nk, s2)}, value {(bv, nv, sv)}")
    if b != bk or not 1 <= b:
        raise invalid(op, f"B must be equal and >= 1; query {b}, key {bk}")
    if not 1 <= n <= 256 or n % max(nk, 1):
        raise invalid(op, f"Nq = {n}, Nkv = {nk}; Nq in 1..256 and a multiple of Nkv")
    if d != dk or dk < dv or not 1 <= d <= 768:
        raise invalid(op, f"D: query {d}, key {dk}, value {dv}; qD == kD >= vD, 1..768")
    if min(s1, s2) < 1:
        raise invalid(op, f"S: query {s1}, key {s2}; at least 1")
    if nk != n or dv != d or d % 16 or d > 128:
        raise invalid(op, f"Nq = {n}, Nkv = {nk}, kD = {d}, vD = {dv}: npusim models Nq == "
                          "Nkv (no GQA) and vD == kD, a multiple of 16 up to 128")


def check_mask(op: str, atten_mask, sparse_mode, s1: int, s2: int) -> tuple:
    """(mask as uint8 or None, causal, shift)."""
    if not isinstance(sparse_mode, int | np.integer) or isinstance(sparse_mode, bool) \
            or not 0 <= sparse_mode <= 6:
        raise invalid(op, f"sparse_mode = {sparse_mode!r}; allowed 0 to 6")
    if atten_mask is None:
        return None, False, 0
    mask = as_array(op, "atten_mask", atten_mask)
    if name_of(mask.dtype) not in MASK_DTYPES:
        raise invalid(op, f"atten_mask dtype {name_of(mask.dtype)}; allowed: "
                          f"{', '.join(MASK_DTYPES)}")
    if sparse_mode not in (2, 3):
        raise invalid(op, f"sparse_mode = {sparse_mode} with an atten_mask is not modelled by "
                          "npusim; modelled: 2 (leftUpCausal), 3 (rightDownCausal), or no mask")
    if tuple(mask.shape) != (MASK_SIZE, MASK_SIZE):
        raise invalid(op, f"atten_mask shape {tuple(mask.shape)}; sparse_mode {sparse_mode} "
                          f"takes the compressed ({MASK_SIZE}, {MASK_SIZE}) mask")
    if sparse_mode == 3 and s1 > s2:
        raise invalid(op, f"sparse_mode 3 with Sq = {s1} > Skv = {s2} has rows with no key "
                          "(CANN's invalid-row handling): not modelled by npusim")
    return np.ascontiguousarray(mask).view(np.uint8), True, (s2 - s1 if sparse_mode == 3 else 0)


def check_scalars(op: str, scale_value, keep_prob) -> float:
    for name, value in (("scale_value", scale_value), ("keep_prob", keep_prob)):
        if isinstance(value, bool) or not isinstance(value, int | float | np.number) \
                or not math.isfinite(value):
            raise invalid(op, f"{name} = {value!r}; a finite number is required")
    if not 0 < keep_prob <= 1:
        raise invalid(op, f"keep_prob = {keep_prob}; allowed (0, 1]")
    if keep_prob != 1:
        raise invalid(op, f"keep_prob = {keep_prob}: dropout is not modelled by npusim; "
                          "keep_prob 1 only")
    return float(scale_value)


def check_attention(chip, query, key, value, atten_mask, head_num, scale_value, keep_prob,
                    input_layout, sparse_mode, op=OP) -> AttentionArgs:
    (q, k, v), dims = check_tensors(op, chip, query, key, value, input_layout, head_num)
    scale = check_scalars(op, scale_value, keep_prob)
    mask, causal, shift = check_mask(op, atten_mask, sparse_mode, dims[2], dims[3])
    return AttentionArgs(q, k, v, mask, dims, input_layout, causal, shift, scale)


def check_stats(op: str, a: AttentionArgs, dy, attention_in, softmax_max, softmax_sum) -> tuple:
    """dy and attentionIn as query; softmaxMax and softmaxSum [B, N, S1, 8] FLOAT; D a
    multiple of 64 (the grad's row sums of dO * O in whole 64-lane repeats)."""
    require(op, dy=dy, softmax_max=softmax_max, softmax_sum=softmax_sum,
            attention_in=attention_in)
    b, n, s1, _, d = a.dims
    arrays = []
    for name, value in (("dy", dy), ("attention_in", attention_in)):
        arr = as_array(op, name, value)
        if arr.shape != a.q.shape or arr.dtype != a.q.dtype:
            raise invalid(op, f"{name} {name_of(arr.dtype)} {tuple(arr.shape)} must match query "
                              f"{name_of(a.q.dtype)} {tuple(a.q.shape)}")
        arrays.append(np.ascontiguousarray(arr))
    for name, value in (("softmax_max", softmax_max), ("softmax_sum", softmax_sum)):
        arr = as_array(op, name, value)
        if arr.shape != (b, n, s1, 8) or name_of(arr.dtype) != "float32":
            raise invalid(op, f"{name} {name_of(arr.dtype)} {tuple(arr.shape)}; FLOAT "
                              f"{(b, n, s1, 8)} (the forward's, 8 lanes a row)")
        arrays.append(np.ascontiguousarray(arr))
    if d % 64:
        raise invalid(op, f"D = {d}: npusim models the grad for D a multiple of 64")
    return tuple(arrays)
