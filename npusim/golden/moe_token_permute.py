"""MoeTokenPermute's golden: the stable argsort of the flattened expert indices, its inverse
(sortedIndicesOut: the row of each slot's copy), and the token rows copied there (kernels.md
§5(a)). A copy moves bytes, so every dtype is exact."""

import numpy as np


def moe_token_permute(tokens: np.ndarray, indices: np.ndarray, *, num_out_tokens: int = 0,
                      padded_mode: bool = False) -> dict:
    """{"permuteTokensOut": (numOutTokens, hidden...), "sortedIndicesOut": int32 (n x topK)}."""
    tokens, flat = np.asarray(tokens), np.asarray(indices).reshape(-1)
    top_k = 1 if np.ndim(indices) == 1 else np.shape(indices)[1]
    total = flat.size
    rows = num_out_tokens + total if num_out_tokens <= 0 else num_out_tokens
    rows = max(min(rows, total), 0)
    first = np.argsort(flat, kind="stable")
    ranks = np.empty(total, np.int32)
    ranks[first] = np.arange(total, dtype=np.int32)
    out = tokens[first[:rows] // top_k]
    return {"permuteTokensOut": out, "sortedIndicesOut": ranks}
