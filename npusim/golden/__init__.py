"""Numpy references of the operators, for checking results (tests, ``npusim run``).

A golden rounds in the kernel's order, so a correct kernel matches it bit for bit. Goldens never
produce an operator's outputs: those come only from the simulated instructions.
"""

from npusim.golden.catlass_matmul import catlass_matmul
from npusim.golden.convolution import convolution_backward
from npusim.golden.cross_entropy_loss_grad import cross_entropy_loss_grad
from npusim.golden.elementwise import add, relu, threshold_backward
from npusim.golden.embedding_dense_backward import embedding_dense_backward
from npusim.golden.matmul import matmul
from npusim.golden.moe_token_permute import moe_token_permute
from npusim.golden.moe_token_permute_grad import moe_token_permute_grad
from npusim.golden.moe_token_unpermute import moe_token_unpermute
from npusim.golden.moe_token_unpermute_grad import moe_token_unpermute_grad
from npusim.golden.pooling import adaptive_avg_pool2d, adaptive_avg_pool2d_backward
from npusim.golden.rms_norm import rms_norm, rms_norm_grad
from npusim.golden.silu import silu_backward
from npusim.golden.swi_glu import swi_glu, swi_glu_grad

__all__ = [
    "adaptive_avg_pool2d",
    "adaptive_avg_pool2d_backward",
    "add",
    "catlass_matmul",
    "convolution_backward",
    "cross_entropy_loss_grad",
    "embedding_dense_backward",
    "matmul",
    "moe_token_permute",
    "moe_token_permute_grad",
    "moe_token_unpermute",
    "moe_token_unpermute_grad",
    "relu",
    "rms_norm",
    "rms_norm_grad",
    "silu_backward",
    "swi_glu",
    "swi_glu_grad",
    "threshold_backward",
]
