"""MoeTokenUnpermute's golden: each token's surviving copies times their probs, summed in fp32
in k order as the kernel sums them (the first copy times its prob, or zero when it was skipped;
then each later surviving copy times its prob added with one fp32 rounding), cast to the tokens'
dtype with round to nearest even. A copy survives when its index is below the rows of
permutedTokens and its prob is not 0. Without probs topK is 1 and out is the gathered row."""

import numpy as np


def moe_token_unpermute(permuted_tokens: np.ndarray, sorted_indices: np.ndarray,
                        probs: np.ndarray | None = None, *, padded_mode: bool = False
                        ) -> np.ndarray:
    """unpermutedTokens (tokens, hidden) in permutedTokens' dtype."""
    x = np.asarray(permuted_tokens)
    top_k = 1 if probs is None else np.shape(probs)[1]
    index = np.asarray(sorted_indices).astype(np.int64).reshape(-1, top_k)
    weight = np.ones(index.shape, np.float32) if probs is None else \
        np.asarray(probs).astype(np.float32).reshape(index.shape)
    rows, hidden = x.shape
    keep = (index < rows) & (weight != 0)
    source = x.astype(np.float32) if rows else np.zeros((1, hidden), np.float32)
    picked = np.minimum(index, max(rows - 1, 0))

    def term(k):
        row = source[picked[:, k]]
        return row if probs is None else (row * weight[:, k:k + 1]).astype(np.float32)

    acc = np.where(keep[:, :1], term(0), np.float32(0)).astype(np.float32)
    for k in range(1, top_k):
        acc = np.where(keep[:, k:k + 1], (acc + term(k)).astype(np.float32), acc)
    return acc.astype(x.dtype)
