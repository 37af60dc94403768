"""aclnnConvolutionBackward: argument checks (args), the problem's geometry, the tiling, the
route CANN takes (route), the cube kernels for dX and dW (cube_base, cube, cube_dw, chunks,
relay), the mixed AIC/AIV dW kernel (dw_mixed), the vector kernels (vector) and the operator
that launches them in CANN's order (backward). aclnnConvolution, the forward: its argument checks
(forward_args) and the operator (forward), whose Conv2D is the dx cube kernel. Both as graph
mode runs them, on activations already in NC1HWC0 (graph).

``npusim.ops.convolution_backward`` and ``npusim.ops.convolution`` are the operators; the
modules are reached by their full path (``from npusim.ops.convolution.tiling import
conv_tiling``)."""
