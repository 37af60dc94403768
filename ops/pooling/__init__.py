"""Pooling: aclnnAdaptiveAvgPool2d for output size (1, 1), as ResNet-50's global average pool
runs it (ReduceMean over H and W; args, tiling, kernel, operator in adaptive_avg.py), and, on A2,
aclnnMaxPool2dWithIndices and its backward (MaxPool3DWithArgmaxV2 and MaxPool3DGradWithArgmax:
rules in max_args.py, tiling and Gather tables in max_geometry.py, kernels and operators in
max_pool.py and max_pool_backward.py)."""
