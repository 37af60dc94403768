"""Numpy references of the operators, for checking results (tests, ``npusim run``).

A golden rounds in the kernel's order, so a correct kernel matches it bit for bit. Goldens never
produce an operator's outputs: those come only from the simulated instructions.
"""

from npusim.golden.batch_norm import batch_norm, batch_norm_backward
from npusim.golden.catlass_matmul import catlass_matmul
from npusim.golden.convolution import convolution, convolution_backward
from npusim.golden.cross_entropy_loss import cross_entropy_loss
from npusim.golden.cross_entropy_loss_grad import cross_entropy_loss_grad
from npusim.golden.elementwise import add, muls, relu, threshold_backward
from npusim.golden.embedding_dense_backward import embedding_dense_backward
from npusim.golden.flash_attention_score import (
    flash_attention_score,
    flash_attention_score_grad,
)
from npusim.golden.foreach import foreach_add_list_v2, foreach_mul_scalar_v2
from npusim.golden.grouped_matmul import grouped_matmul
from npusim.golden.matmul import matmul
from npusim.golden.moe_gating_top_k_softmax import moe_gating_top_k_softmax
from npusim.golden.moe_token_permute import moe_token_permute
from npusim.golden.moe_token_permute_grad import moe_token_permute_grad
from npusim.golden.moe_token_unpermute import moe_token_unpermute
from npusim.golden.moe_token_unpermute_grad import moe_token_unpermute_grad
from npusim.golden.nll_loss import log_softmax, log_softmax_backward, nll_loss, nll_loss_backward
from npusim.golden.pooling import (
    adaptive_avg_pool2d,
    adaptive_avg_pool2d_backward,
    max_pool2d_with_indices,
    max_pool2d_with_indices_backward,
)
from npusim.golden.pooling_mask import max_pool2d_with_mask, max_pool2d_with_mask_backward
from npusim.golden.rms_norm import rms_norm, rms_norm_grad
from npusim.golden.silu import silu_backward
from npusim.golden.softmax_backward import softmax_backward
from npusim.golden.swi_glu import swi_glu, swi_glu_grad

__all__ = [
    "adaptive_avg_pool2d",
    "adaptive_avg_pool2d_backward",
    "add",
    "batch_norm",
    "batch_norm_backward",
    "catlass_matmul",
    "convolution",
    "convolution_backward",
    "cross_entropy_loss",
    "cross_entropy_loss_grad",
    "embedding_dense_backward",
    "flash_attention_score",
    "flash_attention_score_grad",
    "foreach_add_list_v2",
    "foreach_mul_scalar_v2",
    "grouped_matmul",
    "log_softmax",
    "log_softmax_backward",
    "matmul",
    "moe_gating_top_k_softmax",
    "max_pool2d_with_indices",
    "max_pool2d_with_indices_backward",
    "max_pool2d_with_mask",
    "max_pool2d_with_mask_backward",
    "moe_token_permute_grad",
    "muls",
    "nll_loss",
    "nll_loss_backward",
    "moe_token_permute",
    "moe_token_permute_grad",
    "moe_token_unpermute",
    "moe_token_unpermute_grad",
    "relu",
    "rms_norm",
    "rms_norm_grad",
    "silu_backward",
    "softmax_backward",
    "swi_glu",
    "swi_glu_grad",
    "threshold_backward",
]
