"""aclnnRmsNorm and aclnnRmsNormGrad: argument checks (args), tilings, vector kernels and the
operators (rms_norm, rms_norm_grad)."""
