"""aclnnMoeTokenPermuteGrad: tiling (permute_grad_tiling), the kernel (permute_grad_kernel) and
the operator (token_permute_grad); aclnnMoeGatingTopKSoftmax, the router: its kernel and tiling
(gating_kernel) and the operator (gating)."""
