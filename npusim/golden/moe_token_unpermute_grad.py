"""MoeTokenUnpermuteGrad's golden, rounded in the kernel's order.

permutedTokensGradOut[idx] = fp32(grad[t]) x fp32(probs[t, k]) cast with round to nearest even
(without probs: the grad row itself); rows no kept index names are zero. probsGradOut[t, k]:
per hidden chunk, the fp32 products permuted[idx] x grad[t] summed as the kernel's ReduceSumFunc
does (pairwise Adds of the upper half onto the lower, one Add down to 4096 / 512 / 64, then
32-byte block sums and a last sum, each a pairwise halving tree, the order npusim's vector
reductions document), the chunks' sums added in fp32, cast with round to nearest even; 0 for a
dropped copy."""

import numpy as np


def _halving(a: np.ndarray) -> np.ndarray:
    """The pairwise halving tree over the last axis (zero-padded to a power of two)."""
    size = 1 << max(a.shape[-1] - 1, 0).bit_length()
    a = np.concatenate([a, np.zeros((*a.shape[:-1], size - a.shape[-1]), a.dtype)], axis=-1)
    while size > 1:
        size //= 2
        a = a[..., :size] + a[..., size:]
    return a[..., 0]


def _binary_add(a: np.ndarray, length: int, threshold: int, offset: int) -> np.ndarray:
    def half_of(n):
        """AlignUp(CeilDiv(n, 2), 8)."""
        return ((n + 1) // 2 + 7) // 8 * 8
    total, half = length, half_of(length)
    a = a.copy()
    while total > threshold:
        a[:, :total - half] += a[:, half:total]
        total, half = half, half_of(half)
    if total > offset:
        a[:, :total - offset] += a[:, offset:total]
    return a


def reduce_sum(rows: np.ndarray) -> np.ndarray:
    """ReduceSumFunc over the last axis of fp32 ``rows``."""
    length = rows.shape[1]
    for size in (4096, 512, 64):
        if length >= size:
            a = _binary_add(rows, length, 2 * size, size)[:, :size]
            while size > 8:
                a = _halving(a.reshape(a.shape[0], -1, 8))
                size //= 8
            return _halving(a)
    return _halving(rows)


def moe_token_unpermute_grad(permuted_tokens, unpermuted_tokens_grad, sorted_indices,
                             probs=None, *, padded_mode=False, chunk: int | None = None) -> dict:
    """{"permutedTokensGradOut", "probsGradOut"}; ``chunk``: the kernel's hidden chunk length
    (the tiling's hidden_size_align when the row is cut; None: the whole row)."""
    x, grad = np.asarray(permuted_tokens), np.asarray(unpermuted_tokens_grad)
    rows, hidden = x.shape
    top_k = 1 if probs is None else np.shape(probs)[1]
    index = np.asarray(sorted_indices).astype(np.int64).reshape(-1, top_k)
    keep = index < rows
    out = np.zeros(x.shape, x.dtype)
    g32 = grad.astype(np.float32)
    if probs is None:
        out[index[keep]] = grad[keep[:, 0]]
        return {"permutedTokensGradOut": out, "probsGradOut": None}
    p32 = np.asarray(probs).astype(np.float32)
    scaled = (g32[:, None, :] * p32[:, :, None]).astype(np.float32)
    out[index[keep]] = scaled[keep].astype(x.dtype)
    picked = x.astype(np.float32)[np.minimum(index, rows - 1)]
    picked[~keep] = 0
    prod = (picked * g32[:, None, :]).astype(np.float32).reshape(-1, hidden)
    step = chunk or hidden
    acc = np.zeros(prod.shape[0], np.float32)
    for start in range(0, hidden, step):
        acc = (acc + reduce_sum(prod[:, start:start + step])).astype(np.float32)
    return {"permutedTokensGradOut": out,
            "probsGradOut": acc.reshape(index.shape).astype(np.asarray(probs).dtype)}
