"""aclnnMatmul, 2-D: out = self @ mat2, on the CATLASS-shaped kernel (ops/catlass/matmul.py).

The GEMM is the kernel of ``catlass_matmul`` (``BlockMmad`` with the preload policy, base
blocks dealt by the block swizzle, FixPipe out), reused, with its tiling dataclass
(``CatlassMatmulTiling``, the same overridable fields). What this operator adds:

- mat2 as it lies in memory: a C-contiguous K x N matrix is RowMajor B (ND -> NZ into L1 in zN,
  transposing loads to L0B); the transpose of a C-contiguous N x K matrix (``W.T``, the FC
  layer's forward) is ColumnMajor B and is read in place; any other view is made contiguous by
  the Contiguous kernel first. self is RowMajor A, a strided self through the Contiguous kernel
  (a transposed self, as in the FC weight gradient ``dY.T @ X``, costs one burst per element
  there; CANN's MatMulV3 reads it with a transpose flag instead: pessimistic, not modelled);
- any K (the last L0 step may be a partial fractal: zero-filled in L1 by the ND -> NZ copy);
- float32 with cube_math_type 2 (USE_FP16): Cast of both inputs to fp16, the fp16 GEMM, Cast of
  the fp16 result to fp32 **[inference: aclnn's USE_FP16 path as three kernels around MatMul]**;
- K = 0: out is zeros (the ZerosLike kernel); M or N = 0: an empty out, no kernel.

Kernels (``stats["kernels"]``): [Contiguous per strided input], [Cast(self), Cast(mat2)],
MatMul, [Cast(out)] | ZerosLike(out). The Atlas training series runs CANN's route there
instead (training.py: TransData, MatMulV2). Not modelled: MatMulV3's own tiling choice
(CATLASS's example tile shapes are used), bias, fp32 and HF32 cube modes. bf16 runs the same
kernel in bf16 (Atlas A2: bf16 operands, fp32 accumulation, FixPipe to bf16).
"""

import numpy as np

from npusim.dtypes import name_of
from npusim.engine.sequence import OpRun
from npusim.errors import TilingError
from npusim.ops.catlass.matmul import CatlassMatmulKernel, catlass_matmul_tiling
from npusim.ops.common import resolve_chip
from npusim.ops.common.contiguous import to_gm
from npusim.ops.common.fill_cast import launch_cast, launch_zeros
from npusim.ops.matmul.args import OP, check_matmul
from npusim.ops.matmul.training import matmul_training


def mat2_layout(b: np.ndarray) -> tuple[str, np.ndarray]:
    """("row", b) for a C-contiguous K x N mat2, ("column", b.T) for the transpose of a
    C-contiguous N x K one, else ("row", b) to be made contiguous first."""
    if not b.flags.c_contiguous and b.T.flags.c_contiguous:
        return "column", b.T
    return "row", b


def matmul_tiling(chip, m: int, n: int, k: int, layout: str, overrides=None):
    """The CATLASS example tiling for m x n x k, with the user's overrides; errors name
    aclnnMatmul."""
    try:
        return catlass_matmul_tiling(chip, m, n, k, layout, overrides)
    except TilingError as exc:
        raise TilingError(f"{OP} (the CATLASS-shaped kernel): {exc}") from None


def _inputs_fp16(run, a, b_stored, cast: bool):
    a_gm = to_gm(run, "self", a)
    b_gm = to_gm(run, "mat2", b_stored)
    if not cast:
        return a_gm, b_gm
    a16 = run.gm.tensor("self.fp16", "float16", a.size)
    b16 = run.gm.tensor("mat2.fp16", "float16", b_stored.size)
    launch_cast(run, a_gm, a16, a.size, "Cast(self)")
    launch_cast(run, b_gm, b16, b_stored.size, "Cast(mat2)")
    return a16, b16


def matmul(self_, mat2, *, cube_math_type=1, chip="atlas-a2", tiling=None, mode="timed",
           numerics=True, trace=True, sanitize=True, jitter=None):
    """Run aclnnMatmul on ``chip``: ``outputs["out"]`` is self @ mat2 (M x N, self's dtype)."""
    chip = resolve_chip(chip)
    a, b, _ = check_matmul(chip, self_, mat2, cube_math_type)
    (m, k), n = a.shape, b.shape[1]
    layout, b_stored = mat2_layout(b)
    training = chip.product == "atlas-training"   # MatMulV2 on coupled cores: training.py
    t = matmul_tiling(chip, m, n, k, layout, tiling) if m and n and k and not training else None
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    out = run.gm.tensor("out", a.dtype, m * n)
    if not (m and n and k):
        if m and n:
            launch_zeros(run, out, m * n, "ZerosLike(out)")
        return run.result({"out": (out, (m, n))})
    if training:
        t, workspace = matmul_training(run, a, b, out, tiling)
        return run.result({"out": (out, (m, n))}, tiling=t, workspace_bytes=workspace)
    cast = a.dtype == np.float32
    a16, b16 = _inputs_fp16(run, a, b_stored, cast)
    c16 = run.gm.tensor("out.fp16", "float16", m * n) if cast else out
    cube = "float32" if cast else name_of(a.dtype)
    run.launch(CatlassMatmulKernel, block_dim=t.block_dim, name="MatMul",
               args=dict(a=a16, b=b16, c=c16, tiling=t,
                         dtype="float16" if cube == "float32" else cube))
    if cast:
        launch_cast(run, c16, out, m * n, "Cast(out)")
    workspace = 2 * (a.size + b.size + m * n) if cast else 0
    return run.result({"out": (out, (m, n))}, tiling=t, workspace_bytes=workspace)
