"""The operators the ``npusim`` command and the studies know: one module per operator, one
``OpCase`` each.

Each module (``silu_backward``, ``convolution_backward``, ...) says how to make seeded random
inputs of its operator's natural shape, how to call ``npusim.ops.<name>``, which golden in
``npusim.golden`` checks it, and the work it does for the roofline; ``common`` holds what they
share, ``run`` runs a case and measures it. Adding an operator to the command is one module
here and its ``OpCase`` in ``CASES``; a case whose ``npusim.ops`` function does not exist yet
is listed as not available rather than failing.

The golden only checks outputs after the run; it never produces them. Cycles come only from
the simulation.
"""

from npusim.cases.adaptive_avg_pool2d import ADAPTIVE_AVG_POOL2D, ADAPTIVE_AVG_POOL2D_BACKWARD
from npusim.cases.add import ADD
from npusim.cases.batch_norm import BATCH_NORM, BATCH_NORM_BACKWARD
from npusim.cases.catlass_matmul import CATLASS_MATMUL
from npusim.cases.common import OpCase, Param, parse_dtype, parse_shape
from npusim.cases.convolution import CONVOLUTION_FORWARD
from npusim.cases.convolution_backward import CONVOLUTION
from npusim.cases.cross_entropy_loss import CROSS_ENTROPY_LOSS
from npusim.cases.cross_entropy_loss_grad import CROSS_ENTROPY_LOSS_GRAD
from npusim.cases.embedding_dense_backward import EMBEDDING_DENSE_BACKWARD
from npusim.cases.flash_attention_score import (
    FLASH_ATTENTION_SCORE,
    FLASH_ATTENTION_SCORE_GRAD,
)
from npusim.cases.foreach import FOREACH_ADD_LIST_V2, FOREACH_MUL_SCALAR_V2
from npusim.cases.grouped_matmul import GROUPED_MATMUL
from npusim.cases.matmul import MATMUL
from npusim.cases.max_pool2d import MAX_POOL2D_WITH_INDICES, MAX_POOL2D_WITH_INDICES_BACKWARD
from npusim.cases.max_pool2d_mask import MAX_POOL2D_WITH_MASK, MAX_POOL2D_WITH_MASK_BACKWARD
from npusim.cases.moe_gating_top_k_softmax import MOE_GATING_TOP_K_SOFTMAX
from npusim.cases.moe_token_permute import (
    MOE_TOKEN_PERMUTE,
    MOE_TOKEN_UNPERMUTE,
    MOE_TOKEN_UNPERMUTE_GRAD,
)
from npusim.cases.moe_token_permute_grad import MOE_TOKEN_PERMUTE_GRAD
from npusim.cases.muls import MULS
from npusim.cases.nll_loss import LOG_SOFTMAX, LOG_SOFTMAX_BACKWARD, NLL_LOSS, NLL_LOSS_BACKWARD
from npusim.cases.relu import RELU
from npusim.cases.rms_norm import RMS_NORM, RMS_NORM_GRAD
from npusim.cases.silu_backward import SILU
from npusim.cases.softmax_backward import SOFTMAX_BACKWARD
from npusim.cases.swi_glu import SWI_GLU, SWI_GLU_GRAD
from npusim.cases.threshold_backward import THRESHOLD_BACKWARD
from npusim.errors import NpusimError

__all__ = ["CASES", "KERNEL_CASES", "OpCase", "Param", "available_names", "find_case",
           "lookup_case", "parse_dtype", "parse_shape"]

CASES = {case.name: case for case in (SILU, CONVOLUTION, MOE_TOKEN_PERMUTE_GRAD,
                                      EMBEDDING_DENSE_BACKWARD, CROSS_ENTROPY_LOSS_GRAD,
                                      RMS_NORM, RMS_NORM_GRAD, SWI_GLU, SWI_GLU_GRAD,
                                      # the ResNet-50 step's operators (issue 40)
                                      ADAPTIVE_AVG_POOL2D, ADAPTIVE_AVG_POOL2D_BACKWARD, ADD,
                                      MATMUL, RELU, THRESHOLD_BACKWARD, CROSS_ENTROPY_LOSS,
                                      FOREACH_ADD_LIST_V2, FOREACH_MUL_SCALAR_V2, MULS,
                                      CONVOLUTION_FORWARD, BATCH_NORM, BATCH_NORM_BACKWARD,
                                      MAX_POOL2D_WITH_INDICES,
                                      MAX_POOL2D_WITH_INDICES_BACKWARD,
                                      MAX_POOL2D_WITH_MASK, MAX_POOL2D_WITH_MASK_BACKWARD,
                                      LOG_SOFTMAX, NLL_LOSS, NLL_LOSS_BACKWARD,
                                      LOG_SOFTMAX_BACKWARD,
                                      # the MoE layer's operators (issue 41)
                                      GROUPED_MATMUL, MOE_GATING_TOP_K_SOFTMAX,
                                      MOE_TOKEN_PERMUTE, MOE_TOKEN_UNPERMUTE,
                                      MOE_TOKEN_UNPERMUTE_GRAD,
                                      # the MoE layer's attention core (issue 41)
                                      FLASH_ATTENTION_SCORE, FLASH_ATTENTION_SCORE_GRAD,
                                      SOFTMAX_BACKWARD)}
# Kernels that are not aclnn operators but run like one (the validation table's CATLASS rows):
# found by name, not listed among the operators.
KERNEL_CASES = {CATLASS_MATMUL.name: CATLASS_MATMUL}


def lookup_case(name) -> OpCase | None:
    """The registered case for ``name`` (silu_backward, SiluBackward or aclnnSiluBackward),
    available or not; None when there is none."""
    key = str(name).lower().replace("_", "").removeprefix("aclnn")
    cases = (*CASES.values(), *KERNEL_CASES.values())
    return next((c for c in cases if key == c.name.replace("_", "")), None)


def find_case(name: str) -> OpCase:
    """The case for ``name``, which ``npusim.ops`` must have; else a clear NpusimError."""
    case = lookup_case(name)
    if case is None:
        raise NpusimError(f"unknown op {name!r}; ops: {', '.join(available_names())}")
    if not case.available():
        raise NpusimError(f"{case.name} is not available yet in this npusim "
                          f"(npusim.ops has no {case.name}); ops: "
                          f"{', '.join(available_names())}")
    return case


def available_names() -> list:
    return [name for name, case in CASES.items() if case.available()]
