"""The mask pool pair's graph form: MaxPoolWithArgmaxV1 and MaxPoolGradWithArgmaxV1 on
activations already in NC1HWC0, as a framework's graph mode runs them on the training series
(no Cast, no TransData of the activations or their gradients in or out).

``max_pool2d_with_mask_5hd`` and ``max_pool2d_with_mask_backward_5hd`` take the aclnn
operators' arguments, check them as those do, place the activations in GM already in NC1HWC0
(``ops/common/five_hd.py``: data as the previous layer left it, not a kernel) and launch the one
TBE kernel. ``out`` and ``gradInput`` are (N, C1, H, W, 16); the mask is aclnn's. fp16 only: the
kernels take fp16, and a graph-mode step keeps its activations in it (an fp32 activation would
need the aclnn path's Casts, which is what the aclnn operator runs).
"""

import math

import numpy as np

from npusim.engine.sequence import OpRun
from npusim.ops.common import resolve_chip
from npusim.ops.common.contiguous import to_gm
from npusim.ops.common.five_hd import to_5hd
from npusim.ops.pooling.mask_args import (
    C0,
    OP_MASK,
    OP_MASK_GRAD,
    check_max_pool_mask,
    check_max_pool_mask_backward,
    mask_shape,
    planes_5hd,
)
from npusim.ops.pooling.mask_geometry import mask_pool_tiling
from npusim.ops.pooling.max_args import invalid
from npusim.ops.pooling.max_pool_mask import F16, MaxPoolWithArgmaxV1Kernel, nchw_of
from npusim.ops.pooling.max_pool_mask_backward import MaxPoolGradWithArgmaxV1Kernel


def _placed(run: OpRun, name: str, arr, nchw: tuple):
    five = to_5hd(arr.reshape(nchw), C0)
    return run.gm.tensor(name, five.dtype, five.size, five)


def _fp16_4d(op: str, x, pool) -> tuple:
    if x.dtype != F16:
        raise invalid(op, f"self dtype {x.dtype}: the graph form takes FLOAT16 (the kernel's "
                          "dtype); FLOAT runs the aclnn operator's Casts")
    if len(pool.lead) != 2:
        raise invalid(op, f"self has {len(pool.lead) + 2} dimensions: the graph form takes an "
                          "N x C x H x W activation")
    n, c, c1 = nchw_of(pool)
    return n, c, c1


def max_pool2d_with_mask_5hd(self_, kernel_size, stride, padding, dilation=(1, 1),
                             ceil_mode=False, *, chip="atlas-training", tiling=None,
                             mode="timed", numerics=True, trace=True, sanitize=True,
                             jitter=None):
    """MaxPoolWithArgmaxV1 on ``self_`` placed in NC1HWC0; ``out`` in NC1HWC0, ``indices``
    the INT8 mask of aclnn's shape."""
    chip = resolve_chip(chip)
    x, pool = check_max_pool_mask(chip, self_, kernel_size, stride, padding, dilation,
                                  ceil_mode)
    n, c, c1 = _fp16_4d(OP_MASK, x, pool)
    (h, w), (oh, ow) = pool.hw, pool.out
    t = mask_pool_tiling(chip, OP_MASK, planes_5hd(pool), False, tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    x5 = _placed(run, "self.5hd", x, (n, c, h, w))
    y5 = run.gm.tensor("out.5hd", F16, n * c1 * oh * ow * C0)
    shape = mask_shape(pool)
    m = run.gm.tensor("indices", np.int8, math.prod(shape))
    run.launch(MaxPoolWithArgmaxV1Kernel, block_dim=t.block_dim, name="MaxPoolWithArgmaxV1",
               impl="tbe", args=dict(x=x5, out=y5, mask=m.reinterpret_cast(np.uint16), tiling=t))
    return run.result({"out": (y5, (n, c1, oh, ow, C0)), "indices": (m, shape)}, tiling=t)


def max_pool2d_with_mask_backward_5hd(grad_output, self_, indices, kernel_size, stride,
                                      padding, dilation=(1, 1), ceil_mode=False, *,
                                      chip="atlas-training", tiling=None, mode="timed",
                                      numerics=True, trace=True, sanitize=True, jitter=None):
    """MaxPoolGradWithArgmaxV1 on ``grad_output`` placed in NC1HWC0; ``gradInput`` in
    NC1HWC0."""
    chip = resolve_chip(chip)
    dy, x, m, pool = check_max_pool_mask_backward(chip, grad_output, self_, indices,
                                                  kernel_size, stride, padding, dilation,
                                                  ceil_mode)
    n, c, c1 = _fp16_4d(OP_MASK_GRAD, x, pool)
    (h, w), (oh, ow) = pool.hw, pool.out
    t = mask_pool_tiling(chip, OP_MASK_GRAD, planes_5hd(pool), True, tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    dy5 = _placed(run, "gradOutput.5hd", dy, (n, c, oh, ow))
    m_gm = to_gm(run, "indices", m)
    dx5 = run.gm.tensor("gradInput.5hd", F16, n * c1 * h * w * C0)
    run.launch(MaxPoolGradWithArgmaxV1Kernel, block_dim=t.block_dim,
               name="MaxPoolGradWithArgmaxV1", impl="tbe",
               args=dict(grad=dy5, mask=m_gm.reinterpret_cast(np.uint16), dx=dx5, tiling=t))
    return run.result({"gradInput": (dx5, (n, c1, h, w, C0))}, tiling=t)
