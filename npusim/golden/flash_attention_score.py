"""FlashAttentionScore's golden: the mix kernel's rounding order (``ops/attention/``), per task
(one query block of one head) and key block in increasing order.

S = Q K^T by the cube's Mmad order (16-deep steps summed exactly, rounded to fp32 and
accumulated: the convolution golden's ``group_gemm``); S * scale (fp32); -inf past the keys and
where the causal mask hides a key; the row max (exact); m = max(m, m_g), alpha = exp(m_old - m)
(fp32 sub, exp in float64 rounded once); P = exp(S - m); the row sum as the vector unit folds
it (the 64-wide chunks added in order, each 8-lane block by the halving tree, then the 8 block
sums by the halving tree); l = l * alpha + l_g; P rounded to q's dtype (nearest even); O_g = P V
by the Mmad order; acc = acc * alpha + O_g; out = acc / l rounded to q's dtype.

FlashAttentionScoreGrad's golden (``ops/attention/grad.py``): D = the row sum of dO * O (fp32,
as the forward's row sums); per block P = exp(S - max) / sum with the saved statistics, dP by the
Mmad order, dS = (dP - D) * P, P and dS rounded to q's dtype; dQ += dS K in block order (one
core, so one order), dK += dS^T Q and dV += P^T dO whose parts come from every core that sees the
key block: their value in task order and the bound of any order (``AtomicSum``); dQ and dK
times scale (fp32), all rounded to q's dtype.
"""

import numpy as np

from npusim.golden.atomic import AtomicSum, order_bound
from npusim.golden.convolution import group_gemm
from npusim.isa.vector_reduce import halving_sum
from npusim.ops.attention.tiling import FP32_PER_REPEAT

F32 = np.float32
K0 = 16
BITS = {"float16": 11, "bfloat16": 8}


def row_sum(e: np.ndarray) -> np.ndarray:
    """The rows of e (rows x a multiple of 64, fp32) summed as ``fa_vector.row_reduce`` does."""
    acc = e[:, :FP32_PER_REPEAT]
    for c0 in range(FP32_PER_REPEAT, e.shape[1], FP32_PER_REPEAT):
        acc = (acc + e[:, c0:c0 + FP32_PER_REPEAT]).astype(F32)
    blocks = halving_sum(acc.reshape(acc.shape[0], 8, 8))
    return halving_sum(blocks)


def exp32(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.exp(x.astype(np.float64)).astype(F32)


def heads(x: np.ndarray, layout: str) -> np.ndarray:
    """x as [B, N, S, D] float64."""
    x = np.asarray(x)
    return (x.transpose(0, 2, 1, 3) if layout == "BSND" else x).astype(np.float64)


def scores(q, k, t, r0, rows, c0, cols, scale, bits):
    """The block's scaled, masked scores, rows x W (W = cols rounded up to 64), fp32."""
    w = -(-cols // FP32_PER_REPEAT) * FP32_PER_REPEAT
    s = np.full((rows, w), -np.inf, F32)
    mm = group_gemm(q, k.T, K0, np.zeros((rows, cols), F32), bits)
    s[:, :cols] = (mm * F32(scale)).astype(F32)
    if t.causal:
        r = np.arange(r0, r0 + rows)[:, None]
        c = np.arange(c0, c0 + w)[None, :]
        s[c > r + t.shift] = -np.inf
    return s


def task(q, k, v, t, r0, rows, scale, dtype):
    """(out rows, max, sum) of one query block of one head: the kernel's online softmax."""
    bits = BITS[np.dtype(dtype).name]
    m = np.full(rows, -np.inf, F32)
    lsum = np.zeros(rows, F32)
    acc = np.zeros((rows, t.d), F32)
    for c0, cols in t.key_blocks(r0, rows):
        s = scores(q[r0:r0 + rows], k[c0:c0 + cols], t, r0, rows, c0, cols, scale, bits)
        new = np.maximum(m, s.max(axis=1))
        with np.errstate(all="ignore"):
            alpha = exp32((m - new).astype(F32))
        m = new
        e = exp32((s - m[:, None]).astype(F32))
        lsum = ((lsum * alpha).astype(F32) + row_sum(e)).astype(F32)
        p = e[:, :cols].astype(dtype).astype(np.float64)
        o = group_gemm(p, v[c0:c0 + cols], K0, np.zeros((rows, t.d), F32), bits)
        acc = ((acc * alpha[:, None]).astype(F32) + o).astype(F32)
    return (acc / lsum[:, None]).astype(F32).astype(dtype), m, lsum


def flash_attention_score(query, key, value, atten_mask=None, *, tiling, scale_value=1.0,
                          **_options) -> dict:
    t, dtype = tiling, np.asarray(query).dtype
    q, k, v = (heads(x, t.layout) for x in (query, key, value))
    out = np.zeros((t.b, t.n, t.s1, t.d), dtype)
    smax = np.zeros((t.b, t.n, t.s1), F32)
    ssum = np.zeros((t.b, t.n, t.s1), F32)
    for index in range(t.tasks):
        b, n, r0, rows = t.task(index)
        y, m, lsum = task(q[b, n], k[b, n], v[b, n], t, r0, rows, scale_value, dtype)
        out[b, n, r0:r0 + rows], smax[b, n, r0:r0 + rows], ssum[b, n, r0:r0 + rows] = y, m, lsum
    if t.layout == "BSND":
        out = out.transpose(0, 2, 1, 3)
    return {"attentionOut": np.ascontiguousarray(out),
            "softmaxMax": np.repeat(smax[..., None], 8, axis=-1),
            "softmaxSum": np.repeat(ssum[..., None], 8, axis=-1)}


def grad_task(x, t, r0, rows, scale, dtype, acc):
    """Add one task's dQ (in place, block order) and dK, dV parts (with their magnitudes)."""
    q, k, v, dy, o, smax, ssum = x
    bits = BITS[np.dtype(dtype).name]
    rs = slice(r0, r0 + rows)
    drow = row_sum((dy[rs].astype(F32) * o[rs].astype(F32)).astype(F32))
    for c0, cols in t.key_blocks(r0, rows):
        ks = slice(c0, c0 + cols)
        s = scores(q[rs], k[ks], t, r0, rows, c0, cols, scale, bits)
        p = exp32((s - smax[rs, None]).astype(F32))
        p = (p / ssum[rs, None]).astype(F32)
        dp = np.zeros_like(p)
        dp[:, :cols] = group_gemm(dy[rs], v[ks].T, K0, np.zeros((rows, cols), F32), bits)
        ds = (((dp - drow[:, None]).astype(F32)) * p).astype(F32)
        p16 = p[:, :cols].astype(dtype).astype(np.float64)
        ds16 = ds[:, :cols].astype(dtype).astype(np.float64)
        zeros = np.zeros((cols, t.d), F32)
        part = group_gemm(ds16, k[ks], K0, np.zeros((rows, t.d), F32), bits)
        acc["dq"][rs] = (acc["dq"][rs] + part).astype(F32)
        for name, part, mag in (("dv", group_gemm(p16.T, dy[rs], K0, zeros.copy(), bits),
                                 np.abs(p16.T) @ np.abs(dy[rs])),
                                ("dk", group_gemm(ds16.T, q[rs], K0, zeros.copy(), bits),
                                 np.abs(ds16.T) @ np.abs(q[rs]))):
            acc[name][ks] = (acc[name][ks] + part).astype(F32)
            acc[f"{name}_abs"][ks] += mag


def flash_attention_score_grad(query, key, value, dy, softmax_max, softmax_sum, attention_in,
                               *, tiling, scale_value=1.0, **_options) -> dict:
    """dqOut bit for bit; dkOut and dvOut as ``AtomicSum``s (their parts land in any order)."""
    t, dtype = tiling, np.asarray(query).dtype
    x = [heads(a, t.layout) for a in (query, key, value, dy, attention_in)]
    stats = [np.asarray(a)[..., 0] for a in (softmax_max, softmax_sum)]
    acc = {name: np.zeros((t.b, t.n, seq, t.d), F32) for name, seq in
           (("dq", t.s1), ("dk", t.s2), ("dv", t.s2))}
    acc.update({f"{name}_abs": np.zeros((t.b, t.n, t.s2, t.d)) for name in ("dk", "dv")})
    for index in range(t.tasks):
        b, n, r0, rows = t.task(index)
        one = {name: value[b, n] for name, value in acc.items()}
        grad_task([a[b, n] for a in x] + [s[b, n] for s in stats], t, r0, rows,
                  scale_value, dtype, one)
    scale = F32(scale_value)
    out = {"dqOut": (acc["dq"] * scale).astype(F32).astype(dtype)}
    for name, factor in (("dk", scale), ("dv", F32(1))):
        value = (acc[name] * factor).astype(F32).astype(dtype)
        out[f"{name}Out"] = (value, acc[f"{name}_abs"] * float(factor))
    parts = t.s1_blocks
    result = {}
    for name, item in out.items():
        if t.layout == "BSND":
            item = (item.transpose(0, 2, 1, 3) if not isinstance(item, tuple) else
                    tuple(a.transpose(0, 2, 1, 3) for a in item))
        if isinstance(item, tuple):
            value = np.ascontiguousarray(item[0])
            item = AtomicSum(value, order_bound(item[1], parts, value))
        result[name] = item
    return result
