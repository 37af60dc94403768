"""aclnnSwiGlu and aclnnSwiGluGrad: argument checks (args), the shared tiling, the vector kernels
and the operators (swi_glu)."""
