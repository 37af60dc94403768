"""MoeTokenPermuteGrad's golden: each token's surviving copies summed in fp32 in k order, as the
kernel sums them (the first copy, or zero when it was dropped, then each later surviving copy
added with one fp32 rounding), cast to the input dtype with round to nearest even."""

import numpy as np


def moe_token_permute_grad(permuted_output_grad: np.ndarray, sorted_indices: np.ndarray, *,
                           num_topk: int, padded_mode: bool = False) -> np.ndarray:
    """out (tokens, hidden) in permutedOutputGrad's dtype, rounded in the kernel's order."""
    grad = np.asarray(permuted_output_grad)
    index = np.asarray(sorted_indices).astype(np.int64).reshape(-1, num_topk)
    rows, hidden = grad.shape
    keep = index < rows
    source = grad.astype(np.float32)
    if rows == 0:
        source = np.zeros((1, hidden), np.float32)
    picked = np.minimum(index, max(rows - 1, 0))
    acc = np.where(keep[:, :1], source[picked[:, 0]], np.float32(0)).astype(np.float32)
    for k in range(1, num_topk):
        added = (acc + source[picked[:, k]]).astype(np.float32)
        acc = np.where(keep[:, k:k + 1], added, acc)
    return acc.astype(grad.dtype)
