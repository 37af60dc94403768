"""aclnnCrossEntropyLossGrad: argument checks (args), tiling, the vector kernel (kernel) and the
operator (loss_grad)."""
