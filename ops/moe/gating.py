"""aclnnMoeGatingTopKSoftmax: the MoE router's softmax over the experts and its top k (Atlas A2).

Document (hiascend aclnnMoeGatingTopKSoftmax; hicann/ops-transformer
``moe/moe_gating_top_k_softmax/README.md``): softmaxOut = softmax(x, -1); yOut, expertIdxOut =
topK(softmaxOut, k); rowIdxOut[i, j] = j x rows + i (arange(rows x k).reshape(k, rows).T).
x 2-D or 3-D, FLOAT16, BFLOAT16 or FLOAT32, ND; finishedOptional BOOL of x's shape without the
last axis; 0 <= k <= E (the last axis) and k <= 1024; yOut x's dtype, expertIdxOut and rowIdxOut
INT32, shape x's with the last axis k. Products: Atlas A2 (and A3); not the Atlas training
series. A missing tensor is 161001, every other violation 161002.

What npusim models (the rest is refused, 161002, saying so): Atlas A2, finishedOptional None,
k >= 1. Kernel: ``gating_kernel.py``; a strided x goes through the Contiguous kernel first.
"""

import numbers

import numpy as np

from npusim.dtypes import name_of
from npusim.engine.sequence import OpRun
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ParamError
from npusim.ops.common import as_array, check_modelled_product, require, resolve_chip
from npusim.ops.common.contiguous import to_gm
from npusim.ops.moe.gating_kernel import OP, MoeGatingTopKSoftmaxKernel, gating_tiling

DTYPES = ("float16", "bfloat16", "float32")
MAX_K = 1024


def _bad(text: str) -> ParamError:
    return ParamError(f"{OP}: {text}", code=ACLNN_ERR_PARAM_INVALID)


def check_gating(chip, x, finished, k):
    """(x, k) or the first rule the arguments break."""
    require(OP, x=x)
    check_modelled_product(OP, chip, ("atlas-a2",))
    x = as_array(OP, "x", x)
    if name_of(x.dtype) not in DTYPES:
        raise _bad(f"x dtype {name_of(x.dtype)} is not supported; allowed: {', '.join(DTYPES)}")
    if x.ndim not in (2, 3):
        raise _bad(f"x shape {tuple(x.shape)}: 2-D or 3-D")
    if isinstance(k, bool | np.bool_) or not isinstance(k, numbers.Integral):
        raise _bad(f"k = {k!r}; an integer is required")
    k = int(k)
    if not 0 <= k <= min(x.shape[-1], MAX_K):
        raise _bad(f"k = {k}; allowed 0 <= k <= the experts ({x.shape[-1]}) and k <= {MAX_K}")
    if finished is not None:
        fin = as_array(OP, "finished", finished)
        if fin.dtype != np.bool_ or fin.shape != x.shape[:-1]:
            raise _bad(f"finished {name_of(fin.dtype)} {tuple(fin.shape)}: bool of shape "
                       f"{tuple(x.shape[:-1])}")
        raise _bad("finished is not modelled (npusim runs the kernel without it)")
    if k == 0:
        raise _bad("k = 0 is not modelled (empty outputs)")
    return x, k


def moe_gating_top_k_softmax(x, finished=None, *, k, chip="atlas-a2", tiling=None,
                             mode="timed", numerics=True, trace=True, sanitize=True,
                             jitter=None):
    """Run aclnnMoeGatingTopKSoftmax on ``chip``: outputs yOut, expertIdxOut, rowIdxOut."""
    chip = resolve_chip(chip)
    x, k = check_gating(chip, x, finished, k)
    cols = x.shape[-1]
    rows = x.size // cols if cols else 0
    shape = (*x.shape[:-1], k)
    t = gating_tiling(chip, rows, cols, k, name_of(x.dtype), x.dtype.itemsize, tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    y = run.gm.tensor("yOut", x.dtype, rows * k)
    e = run.gm.tensor("expertIdxOut", "int32", rows * k)
    r = run.gm.tensor("rowIdxOut", "int32", rows * k)
    outputs = {"yOut": (y, shape), "expertIdxOut": (e, shape), "rowIdxOut": (r, shape)}
    if rows == 0:
        return run.result(outputs, tiling=t)
    x_gm = to_gm(run, "x", x)
    run.launch(MoeGatingTopKSoftmaxKernel, block_dim=t.cores_used, name="MoeGatingTopKSoftmax",
               args=dict(x=x_gm, y=y, expert_idx=e, row_idx=r, tiling=t))
    return run.result(outputs, tiling=t)
