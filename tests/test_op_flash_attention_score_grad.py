"""aclnnFlashAttentionScoreGrad: results against the golden and PyTorch's autograd, argument
rules, modes and jitter.

Tolerances, set before the first run (the forward's lesson: P and dS are rounded to bf16/fp16
before their GEMMs, so the error is relative to the rows' magnitudes): each of dQ, dK, dV against
float64 autograd of softmax(scale Q K^T, masked) V within twice the error of PyTorch's own
attention backward computed in the same dtype (CPU), plus 1e-3 x max|ref| (two bf16 rounding
steps more than PyTorch's math path: dS and the fp32 -> bf16 cast of each part), and
elementwise within rtol (fp16 2e-3, bf16 8e-3) with the absolute floor at 4 x rtol x max|ref|.
dK and dV are summed by atomic adds: checked within the golden's summation-order bound."""

import numpy as np
import pytest
import torch
from test_op_flash_attention_score import MASK, inputs

from npusim import golden, ops
from npusim.dtypes import bfloat16
from npusim.errors import ParamError
from op_check import assert_bit_equal, assert_close

RTOL = {"float16": 2e-3, "bfloat16": 8e-3}
NAMES = ("dqOut", "dkOut", "dvOut")


def forward(q, k, v, mask, **kw):
    r = ops.flash_attention_score(q, k, v, mask, **kw)
    return r.outputs["softmaxMax"], r.outputs["softmaxSum"], r.outputs["attentionOut"]


def torch_grads(q, k, v, dy, scale, layout, shift, dtype):
    """Autograd of softmax(scale Q K^T, key c seen when c <= r + shift) V in ``dtype``."""
    ts = [torch.from_numpy(np.asarray(x).astype(np.float64)).to(dtype) for x in (q, k, v, dy)]
    if layout == "BSND":
        ts = [x.permute(0, 2, 1, 3) for x in ts]
    q_, k_, v_ = (x.detach().requires_grad_(True) for x in ts[:3])
    s = (q_ @ k_.transpose(-1, -2)) * scale
    if shift is not None:
        seen = torch.ones(s.shape[-2:], dtype=torch.bool).tril(shift)
        s = s.masked_fill(~seen, float("-inf"))
    out = torch.softmax(s.float() if dtype != torch.float64 else s, -1).to(dtype) @ v_
    grads = torch.autograd.grad(out, (q_, k_, v_), ts[3])
    if layout == "BSND":
        grads = [g.permute(0, 2, 1, 3) for g in grads]
    return [g.to(torch.float64).numpy() for g in grads]


def check(q, k, v, dy, mask=None, *, sparse_mode=0, layout="BSND", scale=0.125, mode="timed",
          **options):
    n = q.shape[2] if layout == "BSND" else q.shape[1]
    kw = dict(head_num=n, scale_value=scale, input_layout=layout, sparse_mode=sparse_mode)
    smax, ssum, out = forward(q, k, v, mask, **kw)
    r = ops.flash_attention_score_grad(q, k, v, dy, smax, ssum, out, atten_mask=mask,
                                       mode=mode, **kw, **options)
    want = golden.flash_attention_score_grad(q, k, v, dy, smax, ssum, out, tiling=r.tiling,
                                             scale_value=scale)
    assert_bit_equal(r.outputs["dqOut"], want["dqOut"], "dqOut")
    for key in ("dkOut", "dvOut"):
        assert want[key].within(r.outputs[key]).all(), key
    t = r.tiling
    shift = None if mask is None else (t.s2 - t.s1 if sparse_mode == 3 else 0)
    name = "bfloat16" if q.dtype == bfloat16 else "float16"
    ref = torch_grads(q, k, v, dy, scale, layout, shift, torch.float64)
    low = torch_grads(q, k, v, dy, scale, layout, shift,
                      torch.bfloat16 if name == "bfloat16" else torch.float16)
    for key, want64, pt in zip(NAMES, ref, low, strict=True):
        got = r.outputs[key].astype(np.float64)
        top = float(np.abs(want64).max())
        assert np.abs(got - want64).max() <= 2 * np.abs(pt - want64).max() + 1e-3 * top, key
        assert_close(got, want64, RTOL[name], 4 * RTOL[name] * top, key)
    return r


def grad_inputs(b, s1, s2, n, d, dtype="bfloat16", layout="BSND", seed=0):
    q, k, v = inputs(b, s1, s2, n, d, dtype, layout, seed)
    dy = inputs(b, s1, s1, n, d, dtype, layout, seed + 1)[0]
    return q, k, v, dy


# --- results ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_causal_self_attention(dtype):
    check(*grad_inputs(1, 256, 256, 2, 128, dtype), MASK, sparse_mode=2)


def test_no_mask_bnsd_odd_sequences():
    check(*grad_inputs(2, 77, 200, 2, 64, "float16", "BNSD"), layout="BNSD")


def test_right_down_causal_one_head_one_row():
    check(*grad_inputs(1, 100, 257, 1, 64), MASK, sparse_mode=3, scale=0.3)
    check(*grad_inputs(1, 1, 5, 1, 64, "float16"))


def test_functional_mode_and_jitter_agree():
    args = grad_inputs(1, 200, 200, 2, 64)
    timed = check(*args, MASK, sparse_mode=2, tiling={"block_dim": 2})
    kw = dict(head_num=2, scale_value=0.125, sparse_mode=2)
    stats = forward(*args[:3], MASK, **kw)
    for options in ({"mode": "functional"}, {"jitter": (5, 40)}):
        other = ops.flash_attention_score_grad(*args, *stats, atten_mask=MASK,
                                               tiling={"block_dim": 2}, **kw, **options)
        assert_bit_equal(other.outputs["dqOut"], timed.outputs["dqOut"], "dqOut")


def test_kernels_are_cann_s_pre_main_post():
    args = grad_inputs(1, 64, 64, 1, 64)
    r = check(*args)
    names = [k["name"] for k in r.stats["kernels"]]
    assert names[:3] == ["MemSet(ws.dq)", "MemSet(ws.dk)", "MemSet(ws.dv)"]
    assert names[3] == "FlashAttentionScoreGrad"
    assert all(n.startswith("FlashAttentionScoreGradPost") for n in names[4:])


# --- argument rules --------------------------------------------------------------------------

def test_missing_statistics_is_161001():
    q, k, v, dy = grad_inputs(1, 16, 16, 1, 64)
    with pytest.raises(ParamError) as err:
        ops.flash_attention_score_grad(q, k, v, dy, None, None, q, head_num=1)
    assert err.value.code == 161001


@pytest.mark.parametrize("case, words", [
    ("dy", "dy"), ("o", "attention_in"), ("stats", "softmax_max"), ("d", "multiple of 64"),
    ("chip", "not supported"),
])
def test_bad_arguments_are_161002(case, words):
    q, k, v, dy = grad_inputs(1, 16, 16, 1, 64)
    st = np.zeros((1, 1, 16, 8), np.float32)
    args, kw = [q, k, v, dy, st, st, q], {"head_num": 1}
    if case == "dy":
        args[3] = dy[:, :8]
    elif case == "o":
        args[6] = q.astype(np.float16)
    elif case == "stats":
        args[4] = st[..., :1]
    elif case == "d":
        args = [x[..., :32] for x in args[:4]] + [st, st, q[..., :32]]
    else:
        kw["chip"] = "atlas-training"
    with pytest.raises(ParamError, match=words) as err:
        ops.flash_attention_score_grad(*args, **kw)
    assert err.value.code == 161002
