"""aclnnCrossEntropyLoss (the forward: loss_args, loss_tiling, loss_kernel, loss) and
aclnnCrossEntropyLossGrad (args, tiling, kernel, loss_grad)."""
