"""aclnnFlashAttentionScore: results against the golden and PyTorch, argument rules, tiling,
modes, jitter and timing.

Tolerances. attentionOut: first set elementwise (the output dtype's rounding, fp16 2e-3, bf16
8e-3, with an absolute floor of 1% of the largest |ref|); the first run failed it by a factor
~10 on small outputs: P is rounded to bf16 before P V (as CANN does), an error relative to the
row's sum |p||v|, not to the element. Replaced, before any further run, by the FlashAttention
project's own standard for low-precision attention: the largest error against float64 at most
twice that of PyTorch's attention computed in the same dtype (CPU), plus the elementwise check
with the absolute floor at rtol x max|ref| (rms_norm's dx rule). softmaxMax and softmaxSum
(fp32, from bf16/fp16 products summed in fp32) within 1e-5 and 1e-4 relative."""

import numpy as np
import pytest
import torch

from npusim import golden, ops
from npusim.dtypes import bfloat16
from npusim.errors import ParamError, TilingError
from op_check import assert_bit_equal, assert_close

A2 = "atlas-a2"
RTOL = {"float16": 2e-3, "bfloat16": 8e-3}
DT = {"float16": np.float16, "bfloat16": bfloat16}
MASK = np.triu(np.ones((2048, 2048), np.uint8), 1)


def inputs(b, s1, s2, n, d, dtype="bfloat16", layout="BSND", seed=0):
    rng = np.random.default_rng(seed)
    shape = (lambda s: (b, s, n, d)) if layout == "BSND" else (lambda s: (b, n, s, d))
    return tuple(rng.standard_normal(shape(s)).astype(DT[dtype]) for s in (s1, s2, s2))


def torch_attention(q, k, v, scale, layout, shift=None):
    """float64 softmax(scale Q K^T, key c seen by query r when c <= r + shift) V; its max and
    sum of exp, per row."""
    q, k, v = (torch.from_numpy(np.asarray(x).astype(np.float64)) for x in (q, k, v))
    if layout == "BSND":
        q, k, v = (x.permute(0, 2, 1, 3) for x in (q, k, v))
    s = q @ k.transpose(-1, -2) * scale
    if shift is not None:
        seen = torch.ones(s.shape[-2:], dtype=torch.bool).tril(shift)
        s = s.masked_fill(~seen, float("-inf"))
    m = s.amax(-1)
    e = torch.exp(s - m[..., None])
    out = (e / e.sum(-1, keepdim=True)) @ v
    if layout == "BSND":
        out = out.permute(0, 2, 1, 3)
    return out.numpy(), m.numpy(), e.sum(-1).numpy()


def torch_low_precision(q, k, v, scale, layout, shift):
    """PyTorch's attention in q's own dtype (its math path on CPU), as float64."""
    dtype = torch.bfloat16 if q.dtype == bfloat16 else torch.float16
    q, k, v = (torch.from_numpy(np.asarray(x).astype(np.float32)).to(dtype) for x in (q, k, v))
    if layout == "BSND":
        q, k, v = (x.permute(0, 2, 1, 3) for x in (q, k, v))
    mask = None
    if shift is not None:
        mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril(shift)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    if layout == "BSND":
        out = out.permute(0, 2, 1, 3)
    return out.to(torch.float64).numpy()


def check(q, k, v, mask=None, *, sparse_mode=0, layout="BSND", scale=0.125, mode="timed",
          **options):
    n = q.shape[2] if layout == "BSND" else q.shape[1]
    r = ops.flash_attention_score(q, k, v, mask, head_num=n, scale_value=scale,
                                  input_layout=layout, sparse_mode=sparse_mode, mode=mode,
                                  **options)
    want = golden.flash_attention_score(q, k, v, mask, tiling=r.tiling, scale_value=scale)
    for key, value in want.items():
        assert_bit_equal(r.outputs[key], value, key)
    s1, s2 = r.tiling.s1, r.tiling.s2
    shift = None if mask is None else (s2 - s1 if sparse_mode == 3 else 0)
    out, m, lsum = torch_attention(q, k, v, scale, layout, shift)
    name = "bfloat16" if q.dtype == bfloat16 else "float16"
    got = r.outputs["attentionOut"].astype(np.float64)
    low = torch_low_precision(q, k, v, scale, layout, shift)
    assert np.abs(got - out).max() <= 2 * np.abs(low - out).max() + 1e-6, "attentionOut"
    assert_close(got, out, RTOL[name], RTOL[name] * float(np.abs(out).max()), "attentionOut")
    assert_close(r.outputs["softmaxMax"][..., 0], m, 1e-5, None, "softmaxMax")
    assert_close(r.outputs["softmaxSum"][..., 0], lsum, 1e-4, None, "softmaxSum")
    assert (r.outputs["softmaxMax"] == r.outputs["softmaxMax"][..., :1]).all()
    return r


# --- results ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_causal_self_attention(dtype):
    """The MoE layer's call, small: BSND, causal (sparse mode 2), two query and key blocks."""
    check(*inputs(1, 256, 256, 2, 128, dtype), MASK, sparse_mode=2)


def test_no_mask_bnsd_odd_sequences():
    """No mask, BNSD, sequences that are not a multiple of the block, two batches."""
    check(*inputs(2, 77, 200, 3, 64, "float16", "BNSD"), layout="BNSD")


def test_right_down_causal_and_short_last_block():
    """rightDownCausal with Sq < Skv; the last key block one column wide; one head."""
    check(*inputs(1, 100, 257, 1, 32), MASK, sparse_mode=3, scale=0.3)


def test_one_row_and_small_head_dim():
    """One query, five keys, D = 16: the second vector core has no rows."""
    check(*inputs(1, 1, 5, 1, 16, "float16"))


def test_functional_mode_and_jitter_give_the_same_bits():
    args = inputs(1, 200, 200, 2, 64)
    timed = check(*args, MASK, sparse_mode=2)
    for options in ({"mode": "functional"}, {"jitter": (3, 40)}):
        other = ops.flash_attention_score(*args, MASK, head_num=2, scale_value=0.125,
                                          sparse_mode=2, **options)
        for key, value in timed.outputs.items():
            assert_bit_equal(other.outputs[key], value, key)


def test_tiling_overrides_change_the_blocks_not_the_answer():
    args = inputs(1, 200, 200, 2, 64)
    r = check(*args, MASK, sparse_mode=2, tiling={"s1_base": 64, "s2_base": 64,
                                                    "block_dim": 3})
    assert (r.tiling.s1_base, r.tiling.s2_base, r.tiling.block_dim) == (64, 64, 3)


# --- timing ----------------------------------------------------------------------------------

def test_causal_skips_blocks_above_the_diagonal():
    """Causal attention does about half the work of full attention at S = 2048 (the tasks'
    uneven work balanced over the cores)."""
    args = inputs(1, 2048, 2048, 8, 128)
    full = ops.flash_attention_score(*args, head_num=8, scale_value=0.1, numerics=False,
                                     sanitize=False)
    causal = ops.flash_attention_score(*args, MASK, head_num=8, scale_value=0.1,
                                       sparse_mode=2, numerics=False, sanitize=False)
    assert 0.4 < causal.cycles / full.cycles < 0.75


# --- argument rules --------------------------------------------------------------------------

def call(q, k, v, mask=None, **kw):
    options = {"head_num": q.shape[2], "scale_value": 0.1, **kw}
    return ops.flash_attention_score(q, k, v, mask, **options)


def test_none_tensor_is_161001():
    q, k, v = inputs(1, 16, 16, 1, 16)
    with pytest.raises(ParamError) as err:
        call(q, None, v)
    assert err.value.code == 161001


@pytest.mark.parametrize("kw, words", [
    ({"chip": "atlas-training"}, "not supported"),
    ({"input_layout": "TND"}, "input_layout"),
    ({"input_layout": "BSH"}, "not modelled"),
    ({"head_num": 2}, "head_num"),
    ({"keep_prob": 0.0}, "keep_prob"),
    ({"keep_prob": 0.9}, "dropout"),
    ({"scale_value": float("nan")}, "scale_value"),
    ({"sparse_mode": 7}, "sparse_mode"),
])
def test_bad_arguments_are_161002(kw, words):
    q, k, v = inputs(1, 16, 16, 1, 16)
    with pytest.raises(ParamError, match=words) as err:
        call(q, k, v, **kw)
    assert err.value.code == 161002


@pytest.mark.parametrize("case, words", [
    ("fp32", "not modelled"), ("mixed", "one dtype"), ("int", "not supported"),
    ("3d", "4-D"), ("kv", "alike"), ("d", "qD == kD"), ("gqa", "no GQA"),
    ("d24", "multiple of 16"), ("batch", "B must be equal"),
])
def test_bad_tensors_are_161002(case, words):
    q, k, v = inputs(1, 16, 16, 2, 32)
    q, k, v = {
        "fp32": lambda: (q.astype(np.float32), k.astype(np.float32), v.astype(np.float32)),
        "mixed": lambda: (q, k.astype(np.float16), v),
        "int": lambda: (q.astype(np.int32), k.astype(np.int32), v.astype(np.int32)),
        "3d": lambda: (q[0], k[0], v[0]),
        "kv": lambda: (q, k, v[:, :8]),
        "d": lambda: (q, k[..., :16], v[..., :16]),
        "gqa": lambda: (q, k[:, :, :1], v[:, :, :1]),
        "d24": lambda: (q[..., :24], k[..., :24], v[..., :24]),
        "batch": lambda: (q, np.concatenate([k, k]), np.concatenate([v, v])),
    }[case]()
    with pytest.raises(ParamError, match=words) as err:
        ops.flash_attention_score(q, k, v, head_num=q.shape[2] if q.ndim == 4 else 1)
    assert err.value.code == 161002


@pytest.mark.parametrize("mask, mode, words", [
    (MASK.astype(np.float16), 2, "atten_mask dtype"),
    (MASK, 0, "not modelled"),
    (MASK[:16, :16], 2, "compressed"),
])
def test_bad_masks_are_161002(mask, mode, words):
    q, k, v = inputs(1, 16, 16, 1, 16)
    with pytest.raises(ParamError, match=words):
        call(q, k, v, mask, sparse_mode=mode)


def test_right_down_causal_with_more_queries_than_keys_is_refused():
    q, k, v = inputs(1, 32, 16, 1, 16)
    with pytest.raises(ParamError, match="no key"):
        call(q, k, v, MASK, sparse_mode=3)


@pytest.mark.parametrize("tiling, words", [
    ({"s1_base": 24}, "s1_base"), ({"s2_base": 256}, "s2_base"), ({"block_dim": 0}, "block_dim"),
    ({"d": 64}, "from the arguments"), ({"nope": 1}, "unknown tiling field"),
])
def test_bad_tiling_is_a_tiling_error(tiling, words):
    q, k, v = inputs(1, 16, 16, 1, 16)
    with pytest.raises(TilingError, match=words):
        call(q, k, v, tiling=tiling)


def test_torch_sdpa_agrees_with_the_reference():
    """The float64 reference is torch's own scaled_dot_product_attention, causal."""
    q, k, v = inputs(1, 40, 40, 2, 16)
    out, _, _ = torch_attention(q, k, v, 0.25, "BSND", 0)
    qt, kt, vt = (torch.from_numpy(np.asarray(x).astype(np.float64)).permute(0, 2, 1, 3)
                  for x in (q, k, v))
    sdpa = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=True,
                                                            scale=0.25)
    assert np.allclose(sdpa.permute(0, 2, 1, 3).numpy(), out, rtol=1e-12, atol=1e-12)
