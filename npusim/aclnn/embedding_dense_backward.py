"""aclnnEmbeddingDenseBackwardGetWorkspaceSize and aclnnEmbeddingDenseBackward.

numWeights, paddingIdx and scaleGradByFreq are Python ints/bools (uint64_t and bool in C; a
paddingIdx that is negative means no padding). out must be (numWeights, grad's last dim) in
grad's dtype.
"""

import numpy as np

from npusim.aclnn.runtime import array_of, current_chip, execute, two_phase
from npusim.ops.common import resolve_chip
from npusim.ops.embedding.args import OP, check_embedding_dense_backward
from npusim.ops.embedding.dense_backward import SYSTEM_WORKSPACE_BYTES, embedding_dense_backward


def aclnnEmbeddingDenseBackwardGetWorkspaceSize(  # noqa: N802
        grad, indices, numWeights, paddingIdx, scaleGradByFreq, out):  # noqa: N803
    """Check the arguments as the seed says; (status, workspace_size, executor)."""

    def prepare():
        chip = resolve_chip(current_chip())
        g, idx, o = array_of(grad), array_of(indices), array_of(out)
        spec = check_embedding_dense_backward(chip, g, idx, numWeights, paddingIdx,
                                              scaleGradByFreq, o, has_output=True)

        def run():
            result = embedding_dense_backward(g, idx, num_weights=spec.num_weights,
                                              padding_idx=spec.padding_idx,
                                              scale_grad_by_freq=spec.scale, chip=chip)
            np.copyto(o, result.outputs["out"])
            return result

        workspace = (SYSTEM_WORKSPACE_BYTES + (spec.num_weights * 4 if spec.scale else 0)
                     if chip.separated else 0)
        return workspace, run

    return two_phase(OP, prepare)


def aclnnEmbeddingDenseBackward(workspace, workspaceSize, executor, stream):  # noqa: N802, N803
    """Run the prepared EmbeddingDenseBackward; writes out; returns the status."""
    return execute(OP, workspace, workspaceSize, executor, stream)
