"""aclnnEmbeddingDenseBackward: argument checks (args), tiling, the v1 and v2 kernels, the
small-dim and scale kernels, and the operator (dense_backward);
the index sort is ops/common/sort.py."""
