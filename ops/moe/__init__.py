"""The MoE operators: aclnnMoeTokenPermuteGrad (permute_grad_tiling, permute_grad_kernel,
token_permute_grad), aclnnMoeTokenPermute (permute_tiling, index_copy_kernel, token_permute; the
sorts are ops/common/sort.py), aclnnMoeTokenUnpermute (the PermuteGrad kernel and tiling,
unpermute_kernel with probs, token_unpermute), aclnnMoeTokenUnpermuteGrad
(unpermute_grad_tiling, unpermute_grad_kernel, unpermute_grad_probs, token_unpermute_grad) and
aclnnMoeGatingTopKSoftmax, the router (gating_kernel, gating)."""
