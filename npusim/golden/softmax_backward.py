"""SoftmaxBackward's golden: the SoftmaxGrad kernel's fp32 chain (``ops/softmax/backward.py``):
dy and y widened to fp32, t = dy * y, s = the row sum of t as the vector unit folds it (zeros past
the row, 64-wide chunks added, 8-lane blocks and the 8 block sums by the halving tree), out =
t - y * s, rounded to the dtype (nearest even)."""

import numpy as np

from npusim.golden.flash_attention_score import row_sum

F32 = np.float32
LANES = 64


def softmax_backward(grad_output, output, dim=-1, **_options) -> dict:
    dy, y = np.asarray(grad_output), np.asarray(output)
    if not dy.size:
        return {"gradInput": np.zeros(dy.shape, dy.dtype)}
    cols = dy.shape[-1] if dy.ndim else 1
    width = -(-cols // LANES) * LANES
    dyf = np.zeros((dy.size // cols, width), F32)
    yf = np.zeros_like(dyf)
    dyf[:, :cols] = dy.reshape(-1, cols).astype(F32)
    yf[:, :cols] = y.reshape(-1, cols).astype(F32)
    t = (dyf * yf).astype(F32)
    s = row_sum(t)
    out = (t - (yf * s[:, None]).astype(F32)).astype(F32)[:, :cols]
    return {"gradInput": out.astype(dy.dtype).reshape(dy.shape)}
