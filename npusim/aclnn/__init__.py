"""The aclnn two-phase interface and the bits of the ACL runtime a ported host program uses.

``aclnnXxxGetWorkspaceSize(inputs..., outputs...)`` checks the arguments and returns
``(status, workspace_size, executor)``; ``aclnnXxx(workspace, workspace_size, executor, stream)``
runs the operator's kernels on the simulated chip and writes into the output tensors. Bad
arguments give a status (161001 null pointer, 161002 invalid parameter, as in the seeds), never an
exception; ``aclGetRecentErrMsg()`` says why. Device memory is modelled by numpy arrays: an
``aclTensor`` wraps one (a view keeps its strides, so non-contiguous tensors stay so).

The chip is chosen with ``aclrtSetDevice(0, chip="atlas-training")`` (default ``atlas-a2``); the
last run's ``Result`` (cycles, trace, stats) is on the executor and on the stream.
"""

from npusim.aclnn.batch_norm import (
    aclnnBatchNorm,
    aclnnBatchNormBackward,
    aclnnBatchNormBackwardGetWorkspaceSize,
    aclnnBatchNormGetWorkspaceSize,
)
from npusim.aclnn.convolution import (
    aclnnConvolution,
    aclnnConvolutionBackward,
    aclnnConvolutionBackwardGetWorkspaceSize,
    aclnnConvolutionGetWorkspaceSize,
)
from npusim.aclnn.cross_entropy_loss_grad import (
    aclnnCrossEntropyLossGrad,
    aclnnCrossEntropyLossGradGetWorkspaceSize,
)
from npusim.aclnn.elementwise import (
    aclnnAdd,
    aclnnAddGetWorkspaceSize,
    aclnnRelu,
    aclnnReluGetWorkspaceSize,
    aclnnThresholdBackward,
    aclnnThresholdBackwardGetWorkspaceSize,
)
from npusim.aclnn.embedding_dense_backward import (
    aclnnEmbeddingDenseBackward,
    aclnnEmbeddingDenseBackwardGetWorkspaceSize,
)
from npusim.aclnn.matmul import aclnnMatmul, aclnnMatmulGetWorkspaceSize
from npusim.aclnn.max_pool2d import (
    aclnnMaxPool2dWithIndices,
    aclnnMaxPool2dWithIndicesBackward,
    aclnnMaxPool2dWithIndicesBackwardGetWorkspaceSize,
    aclnnMaxPool2dWithIndicesGetWorkspaceSize,
)
from npusim.aclnn.max_pool2d_mask import (
    aclnnMaxPool2dWithMask,
    aclnnMaxPool2dWithMaskBackward,
    aclnnMaxPool2dWithMaskBackwardGetWorkspaceSize,
    aclnnMaxPool2dWithMaskGetWorkspaceSize,
)
from npusim.aclnn.moe_token_permute import (
    aclnnMoeTokenPermute,
    aclnnMoeTokenPermuteGetWorkspaceSize,
    aclnnMoeTokenUnpermute,
    aclnnMoeTokenUnpermuteGetWorkspaceSize,
    aclnnMoeTokenUnpermuteGrad,
    aclnnMoeTokenUnpermuteGradGetWorkspaceSize,
)
from npusim.aclnn.moe_token_permute_grad import (
    aclnnMoeTokenPermuteGrad,
    aclnnMoeTokenPermuteGradGetWorkspaceSize,
)
from npusim.aclnn.nll_loss import (
    aclnnLogSoftmax,
    aclnnLogSoftmaxBackward,
    aclnnLogSoftmaxBackwardGetWorkspaceSize,
    aclnnLogSoftmaxGetWorkspaceSize,
    aclnnNLLLoss,
    aclnnNLLLossBackward,
    aclnnNLLLossBackwardGetWorkspaceSize,
    aclnnNLLLossGetWorkspaceSize,
)
from npusim.aclnn.pooling import (
    aclnnAdaptiveAvgPool2d,
    aclnnAdaptiveAvgPool2dBackward,
    aclnnAdaptiveAvgPool2dBackwardGetWorkspaceSize,
    aclnnAdaptiveAvgPool2dGetWorkspaceSize,
)
from npusim.aclnn.runtime import *  # noqa: F403 - the ACL runtime names a ported program uses
from npusim.aclnn.runtime import __all__ as _runtime_names
from npusim.aclnn.silu import aclnnSiluBackward, aclnnSiluBackwardGetWorkspaceSize

__all__ = [
    *_runtime_names,
    "aclnnAdaptiveAvgPool2d",
    "aclnnAdaptiveAvgPool2dBackward",
    "aclnnAdaptiveAvgPool2dBackwardGetWorkspaceSize",
    "aclnnAdaptiveAvgPool2dGetWorkspaceSize",
    "aclnnAdd",
    "aclnnAddGetWorkspaceSize",
    "aclnnConvolution",
    "aclnnBatchNorm",
    "aclnnBatchNormBackward",
    "aclnnBatchNormBackwardGetWorkspaceSize",
    "aclnnBatchNormGetWorkspaceSize",
    "aclnnConvolutionBackward",
    "aclnnConvolutionBackwardGetWorkspaceSize",
    "aclnnConvolutionGetWorkspaceSize",
    "aclnnCrossEntropyLossGrad",
    "aclnnCrossEntropyLossGradGetWorkspaceSize",
    "aclnnEmbeddingDenseBackward",
    "aclnnEmbeddingDenseBackwardGetWorkspaceSize",
    "aclnnLogSoftmax",
    "aclnnLogSoftmaxBackward",
    "aclnnLogSoftmaxBackwardGetWorkspaceSize",
    "aclnnLogSoftmaxGetWorkspaceSize",
    "aclnnMatmul",
    "aclnnMatmulGetWorkspaceSize",
    "aclnnMaxPool2dWithIndices",
    "aclnnMaxPool2dWithIndicesBackward",
    "aclnnMaxPool2dWithIndicesBackwardGetWorkspaceSize",
    "aclnnMaxPool2dWithIndicesGetWorkspaceSize",
    "aclnnMaxPool2dWithMask",
    "aclnnMaxPool2dWithMaskBackward",
    "aclnnMaxPool2dWithMaskBackwardGetWorkspaceSize",
    "aclnnMaxPool2dWithMaskGetWorkspaceSize",
    "aclnnMoeTokenPermute",
    "aclnnMoeTokenPermuteGetWorkspaceSize",
    "aclnnMoeTokenPermuteGrad",
    "aclnnMoeTokenPermuteGradGetWorkspaceSize",
    "aclnnMoeTokenUnpermute",
    "aclnnMoeTokenUnpermuteGetWorkspaceSize",
    "aclnnMoeTokenUnpermuteGrad",
    "aclnnMoeTokenUnpermuteGradGetWorkspaceSize",
    "aclnnNLLLoss",
    "aclnnNLLLossBackward",
    "aclnnNLLLossBackwardGetWorkspaceSize",
    "aclnnNLLLossGetWorkspaceSize",
    "aclnnRelu",
    "aclnnReluGetWorkspaceSize",
    "aclnnSiluBackward",
    "aclnnSiluBackwardGetWorkspaceSize",
    "aclnnThresholdBackward",
    "aclnnThresholdBackwardGetWorkspaceSize",
]
