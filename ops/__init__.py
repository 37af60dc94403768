"""The aclnn operators npusim models, each a host tiling plus Ascend C-style kernels, one package
per family (``convolution/``, ``embedding/``, ``cross_entropy/``, ``moe/``, ``silu/``,
``transdata/``, ``elementwise/``, ``matmul/``, ``pooling/``, ``norm/``, ``swiglu/``; ``common/``
shared), and ``catlass_matmul`` (``catlass/``), a GEMM shaped like CATLASS's that the validation
table and ``matmul`` run. ``npusim.ops.<name>`` is the operator; its modules are reached by their
path."""

from npusim.ops.catlass.matmul import catlass_matmul
from npusim.ops.convolution.backward import convolution_backward
from npusim.ops.cross_entropy.loss_grad import cross_entropy_loss_grad
from npusim.ops.elementwise.operators import add, relu, threshold_backward
from npusim.ops.embedding.dense_backward import embedding_dense_backward
from npusim.ops.matmul.operator import matmul
from npusim.ops.moe.token_permute import moe_token_permute
from npusim.ops.moe.token_permute_grad import moe_token_permute_grad
from npusim.ops.moe.token_unpermute import moe_token_unpermute
from npusim.ops.moe.token_unpermute_grad import moe_token_unpermute_grad
from npusim.ops.norm.rms_norm import rms_norm
from npusim.ops.norm.rms_norm_grad import rms_norm_grad
from npusim.ops.pooling.adaptive_avg import adaptive_avg_pool2d
from npusim.ops.pooling.adaptive_avg_backward import adaptive_avg_pool2d_backward
from npusim.ops.silu.backward import silu_backward
from npusim.ops.swiglu.swi_glu import swi_glu, swi_glu_grad

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
