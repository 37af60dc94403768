"""The aclnn operators npusim models, each a host tiling plus Ascend C-style kernels, one package
per family (``convolution/``, ``embedding/``, ``cross_entropy/``, ``moe/``, ``silu/``,
``transdata/``, ``elementwise/``, ``matmul/``, ``pooling/``, ``norm/``, ``swiglu/``,
``batch_norm/``, ``foreach/``, ``attention/``, ``softmax/``; ``common/`` shared), and
``catlass_matmul`` (``catlass/``), a GEMM shaped like CATLASS's that the validation table and
``matmul`` run. ``npusim.ops.<name>`` is the operator; its modules are reached by their path."""

from npusim.ops.attention.forward import flash_attention_score
from npusim.ops.attention.grad import flash_attention_score_grad
from npusim.ops.batch_norm.backward import batch_norm_backward
from npusim.ops.batch_norm.forward import batch_norm
from npusim.ops.catlass.matmul import catlass_matmul
from npusim.ops.convolution.backward import convolution_backward
from npusim.ops.convolution.forward import convolution
from npusim.ops.cross_entropy.log_softmax import log_softmax, log_softmax_backward
from npusim.ops.cross_entropy.loss import cross_entropy_loss
from npusim.ops.cross_entropy.loss_grad import cross_entropy_loss_grad
from npusim.ops.cross_entropy.nll_loss import nll_loss, nll_loss_backward
from npusim.ops.elementwise.operators import add, muls, relu, threshold_backward
from npusim.ops.embedding.dense_backward import embedding_dense_backward
from npusim.ops.foreach.operators import foreach_add_list_v2, foreach_mul_scalar_v2
from npusim.ops.matmul.grouped import grouped_matmul
from npusim.ops.matmul.operator import matmul
from npusim.ops.moe.gating import moe_gating_top_k_softmax
from npusim.ops.moe.token_permute import moe_token_permute
from npusim.ops.moe.token_permute_grad import moe_token_permute_grad
from npusim.ops.moe.token_unpermute import moe_token_unpermute
from npusim.ops.moe.token_unpermute_grad import moe_token_unpermute_grad
from npusim.ops.norm.rms_norm import rms_norm
from npusim.ops.norm.rms_norm_grad import rms_norm_grad
from npusim.ops.pooling.adaptive_avg import adaptive_avg_pool2d
from npusim.ops.pooling.adaptive_avg_backward import adaptive_avg_pool2d_backward
from npusim.ops.pooling.max_pool import max_pool2d_with_indices
from npusim.ops.pooling.max_pool_backward import max_pool2d_with_indices_backward
from npusim.ops.pooling.max_pool_mask import max_pool2d_with_mask
from npusim.ops.pooling.max_pool_mask_backward import max_pool2d_with_mask_backward
from npusim.ops.silu.backward import silu_backward
from npusim.ops.softmax.backward import softmax_backward
from npusim.ops.swiglu.swi_glu import swi_glu, swi_glu_grad

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
    "max_pool2d_with_indices",
    "max_pool2d_with_indices_backward",
    "max_pool2d_with_mask",
    "max_pool2d_with_mask_backward",
    "moe_gating_top_k_softmax",
    "moe_token_permute",
    "moe_token_permute_grad",
    "moe_token_unpermute",
    "moe_token_unpermute_grad",
    "muls",
    "nll_loss",
    "nll_loss_backward",
    "relu",
    "rms_norm",
    "rms_norm_grad",
    "silu_backward",
    "softmax_backward",
    "swi_glu",
    "swi_glu_grad",
    "threshold_backward",
]
