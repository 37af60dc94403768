"""aclnnRmsNorm: yOut = x / sqrt(mean(x^2) + eps) x gamma over gamma's dims; rstdOut the
1 / sqrt(...) per row, fp32.

Kernels (``stats["kernels"]`` op_type, launch order): [Contiguous per strided input], RmsNorm.
"""

import numpy as np

from npusim.engine.sequence import OpRun
from npusim.ops.common import resolve_chip
from npusim.ops.common.contiguous import to_gm
from npusim.ops.norm.args import OP_FWD, check_rms_norm
from npusim.ops.norm.kernel import RmsNormKernel
from npusim.ops.norm.tiling import RmsNormTiling, rms_norm_tiling

__all__ = ["OP_FWD", "RmsNormTiling", "rms_norm"]


def rms_norm(x, gamma, *, epsilon=1e-6, chip="atlas-a2", tiling=None, mode="timed",
             numerics=True, trace=True, sanitize=True, jitter=None):
    """Run aclnnRmsNorm on ``chip``; ``outputs["yOut"]`` has x's shape and dtype,
    ``outputs["rstdOut"]`` x's leading dims and 1 for each of gamma's (fp32)."""
    chip = resolve_chip(chip)
    a = check_rms_norm(chip, x, gamma, epsilon)
    t = rms_norm_tiling(chip, OP_FWD, "forward", a.rows, a.cols, a.x.dtype, a.gamma.dtype,
                        tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    x_gm, g_gm = to_gm(run, "x", a.x), to_gm(run, "gamma", a.gamma)
    y_gm = run.gm.tensor("yOut", a.x.dtype, a.x.size)
    r_gm = run.gm.tensor("rstdOut", np.float32, a.rows)
    if a.rows:
        eps = float(np.float32(epsilon))          # the tiling carries epsilon as a float
        run.launch(RmsNormKernel, block_dim=t.block_dim, name="RmsNorm",
                   args=dict(x=x_gm, gamma=g_gm, y=y_gm, rstd=r_gm, epsilon=eps, tiling=t))
    return run.result({"yOut": (y_gm, a.x.shape), "rstdOut": (r_gm, a.rstd_shape)}, tiling=t)
