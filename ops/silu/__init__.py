"""aclnnSiluBackward: the SiluGrad kernel, its tiling and the operator (backward)."""
