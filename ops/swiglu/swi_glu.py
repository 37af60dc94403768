"""aclnnSwiGlu: out = swish(A) x B, A and B the halves of x along ``dim``; aclnnSwiGluGrad: the
grads of both halves from yGrad, in x's shape.

Kernels (``stats["kernels"]`` op_type, launch order): [Contiguous per strided input], SwiGlu or
SwiGluGrad.
"""

from npusim.engine.sequence import OpRun
from npusim.ops.common import resolve_chip
from npusim.ops.common.contiguous import to_gm
from npusim.ops.swiglu.args import OP_FWD, OP_GRAD, check_swi_glu
from npusim.ops.swiglu.grad_kernel import SwiGluGradKernel
from npusim.ops.swiglu.kernel import SwiGluKernel
from npusim.ops.swiglu.tiling import SwiGluTiling, swi_glu_tiling

__all__ = ["OP_FWD", "OP_GRAD", "SwiGluTiling", "swi_glu", "swi_glu_grad"]


def swi_glu(x, *, dim=-1, chip="atlas-a2", tiling=None, mode="timed", numerics=True,
            trace=True, sanitize=True, jitter=None):
    """Run aclnnSwiGlu on ``chip``; ``outputs["out"]`` has x's shape with ``dim`` halved."""
    chip = resolve_chip(chip)
    a = check_swi_glu(chip, x, dim)
    t = swi_glu_tiling(chip, OP_FWD, "forward", a.rows, a.half, a.x.dtype, tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    x_gm = to_gm(run, "x", a.x)
    out_gm = run.gm.tensor("out", a.x.dtype, a.x.size // 2)
    if a.x.size:
        run.launch(SwiGluKernel, block_dim=t.block_dim, name="SwiGlu",
                   args=dict(x=x_gm, out=out_gm, tiling=t))
    return run.result({"out": (out_gm, a.out_shape)}, tiling=t)


def swi_glu_grad(y_grad, x, *, dim=-1, chip="atlas-a2", tiling=None, mode="timed",
                 numerics=True, trace=True, sanitize=True, jitter=None):
    """Run aclnnSwiGluGrad on ``chip``; ``outputs["out"]`` has x's shape and dtype."""
    chip = resolve_chip(chip)
    a = check_swi_glu(chip, x, dim, y_grad, grad=True)
    t = swi_glu_tiling(chip, OP_GRAD, "grad", a.rows, a.half, a.x.dtype, tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    l_gm, x_gm = to_gm(run, "yGrad", a.y_grad), to_gm(run, "x", a.x)
    out_gm = run.gm.tensor("out", a.x.dtype, a.x.size)
    if a.x.size:
        run.launch(SwiGluGradKernel, block_dim=t.block_dim, name="SwiGluGrad",
                   args=dict(y_grad=l_gm, x=x_gm, out=out_gm, tiling=t))
    return run.result({"out": (out_gm, a.x.shape)}, tiling=t)
