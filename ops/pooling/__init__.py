"""Pooling: aclnnAdaptiveAvgPool2d for output size (1, 1), as ResNet-50's global average pool
runs it (ReduceMean over H and W; args, tiling, kernel, operator in adaptive_avg.py)."""
