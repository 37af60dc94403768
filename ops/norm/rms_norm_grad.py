"""aclnnRmsNormGrad: dxOut = (dy x gamma - x x rstd x mean(dy x gamma x x x rstd)) x rstd and
dgammaOut = the sum over rows of dy x x x rstd (fp32).

Kernels (``stats["kernels"]`` op_type, launch order): [Contiguous per strided input],
RmsNormGrad (or, for an empty x, MemSet of dgammaOut). The workspace holds one fp32 dgamma row
per core (CANN's deterministic path).
"""

import numpy as np

from npusim.engine.sequence import OpRun
from npusim.ops.common import resolve_chip, round_up
from npusim.ops.common.contiguous import to_gm
from npusim.ops.common.memset import launch_memset
from npusim.ops.norm.args import OP_GRAD, check_rms_norm_grad
from npusim.ops.norm.grad_kernel import RmsNormGradKernel
from npusim.ops.norm.tiling import rms_norm_tiling

__all__ = ["OP_GRAD", "rms_norm_grad"]


def rms_norm_grad(dy, x, rstd, gamma, *, chip="atlas-a2", tiling=None, mode="timed",
                  numerics=True, trace=True, sanitize=True, jitter=None):
    """Run aclnnRmsNormGrad on ``chip``; ``outputs["dxOut"]`` has x's shape and dtype,
    ``outputs["dgammaOut"]`` gamma's shape in fp32."""
    chip = resolve_chip(chip)
    a, dy, rstd = check_rms_norm_grad(chip, dy, x, rstd, gamma)
    t = rms_norm_tiling(chip, OP_GRAD, "grad", a.rows, a.cols, a.x.dtype, a.gamma.dtype, tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    dy_gm, x_gm = to_gm(run, "dy", dy), to_gm(run, "x", a.x)
    r_gm, g_gm = to_gm(run, "rstd", rstd.reshape(-1)), to_gm(run, "gamma", a.gamma)
    dx_gm = run.gm.tensor("dxOut", a.x.dtype, a.x.size)
    dg_gm = run.gm.tensor("dgammaOut", np.float32, a.cols)
    ws = round_up(t.block_dim * a.cols * 4, 32) if a.rows else 0
    if a.rows:
        ws_gm = run.gm.tensor("workspace", np.float32, ws // 4)
        run.launch(RmsNormGradKernel, block_dim=t.block_dim, name="RmsNormGrad",
                   args=dict(dy=dy_gm, x=x_gm, rstd=r_gm, gamma=g_gm, dx=dx_gm, dgamma=dg_gm,
                             workspace=ws_gm, tiling=t))
    else:
        launch_memset(run, dg_gm, a.cols)
    return run.result({"dxOut": (dx_gm, a.x.shape), "dgammaOut": (dg_gm, a.gamma.shape)},
                      tiling=t, workspace_bytes=ws)
