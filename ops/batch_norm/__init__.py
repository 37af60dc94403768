"""Batch norm in training: aclnnBatchNorm (BNTrainingReduce + BNTrainingUpdate on NC1HWC0, or
A2's BatchNormV3 on NCHW) and aclnnBatchNormBackward (BNTrainingUpdateGrad +
BNTrainingReduceGrad on NC1HWC0): args, tiling, the kernels (stats, apply, v3 on a shared base),
the operators (forward, backward), their NC1HWC0 entry points, and both as graph mode runs
them on activations already in NC1HWC0 (graph)."""
