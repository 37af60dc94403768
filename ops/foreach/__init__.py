"""The foreach operators torch_npu runs for ``torch.optim.SGD`` on Atlas A2: aclnnForeachAddListV2
and aclnnForeachMulScalarV2 (argument checks in args, the host tiling in tiling, the kernel in
kernel, the operators in operators)."""
