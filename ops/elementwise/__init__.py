"""Elementwise operators on one template kernel with SiluGrad's schedule: aclnnRelu,
aclnnThresholdBackward and aclnnAdd (template.py, the per-tile computes, args, operators)."""
