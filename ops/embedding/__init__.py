"""aclnnEmbeddingDenseBackward: argument checks (args), tiling, the v1 and v2 kernels, the
small-dim and scale kernels, the index sort (sort_indices, sort_merge) and the operator
(dense_backward)."""
