"""aclnnMatmul (2-D) on the Atlas training series, as CANN runs it there (hicann/ops-nn
``matmul/common/op_host/op_api/matmul_util.cpp``, the 910's ``NpuArch::DAV_1001`` branches):

1. each operand as it lies in memory: the transpose of a C-contiguous matrix (``W.T`` in the FC
   forward, ``dY.T`` in its weight gradient) is read in place with a transpose flag
   (``IsTransposeLastTwoDims``, ``ContiguousAndCast``); any other non-contiguous view goes
   through the Contiguous kernel;
2. float32 operands are cast to float16 (``SetMmSupportDType``: the training series' cube has
   no fp32, ``IsInputSupportFp32`` is false), and the MatMul then writes fp32 (fp16 in, fp32
   out: ``MatMulNzFp162Fp32``), so no Cast of the result;
3. the formats (``SetMmSupportFormat``, ``IsFormatSupportNd``): a float16 call whose M, K and N
   are all multiples of 16 runs MatMulV2 on ND in and out; any other runs TransData ND ->
   FRACTAL_NZ of both operands, MatMulV2 on NZ, TransData FRACTAL_NZ -> ND of the result;
4. MatMulV2 (``v2_kernel.py``) on the coupled cores, its result out of L0C through UB.

5. the split-K route (``IsSplitk``: K >= 8 max(M, N), see ``split_k``): MatMulV2 writes fp32
   in FRACTAL_NZ (the 910 forces NZ), its K cut across cores that add atomically into the output
   zeroed by MemSet; TransData to ND in fp32, then Cast to float16.

Kernels (``stats["kernels"]``): [Contiguous per strided input], [Cast(self), Cast(mat2)],
[TransData(self), TransData(mat2)], [MemSet], MatMulV2, [TransData(out)], [Cast(out)]. Not
modelled: bias, TBE's own tiling.
"""

import numpy as np

from npusim.ops.common.contiguous import to_gm
from npusim.ops.common.fill_cast import launch_cast
from npusim.ops.common.memset import launch_memset
from npusim.ops.matmul.args import MKN_MAX, MN_MULTI, SPLIT_K
from npusim.ops.matmul.transdata_nz import launch_nd_to_nz, launch_nz_to_nd, nz_size
from npusim.ops.matmul.v2_kernel import MatmulV2Kernel
from npusim.ops.matmul.v2_tiling import FRAC, matmul_v2_tiling


def stored(arr: np.ndarray) -> tuple[bool, np.ndarray]:
    """(True, arr.T) when ``arr`` is the transpose of a C-contiguous matrix (aclnn's
    ``IsTransposeLastTwoDims``: unit strides on the row axis), else (False, arr)."""
    if not arr.flags.c_contiguous and arr.T.flags.c_contiguous and arr.shape != (1, 1):
        return True, arr.T
    return False, arr


def nd_route(a: np.ndarray, b: np.ndarray) -> bool:
    """``IsFormatSupportNd`` on the training series: float16 and M, K, N multiples of 16."""
    return a.dtype == np.float16 and not (a.shape[0] % FRAC or a.shape[1] % FRAC
                                          or b.shape[1] % FRAC)


def _operand(run, name: str, arr: np.ndarray):
    """The operand in GM as the MatMul reads it: (transposed?, fp16 GM tensor, stored shape)."""
    trans, st = stored(arr)
    gm = to_gm(run, name, st)
    if st.dtype != np.float16:
        half = run.gm.tensor(f"{name}.fp16", "float16", st.size)
        launch_cast(run, gm, half, st.size, f"Cast({name})")
        gm = half
    return trans, gm, st.shape


def matmul_training(run, a: np.ndarray, b: np.ndarray, out, tiling=None):
    """Launch aclnnMatmul's kernels for out (M x N GM, a's dtype) = a @ b; (the tiling, the
    workspace bytes: the fp16 copies and the NZ tensors)."""
    (m, k), n = a.shape, b.shape[1]
    ta, a_gm, a_shape = _operand(run, "self", a)
    tb, b_gm, b_shape = _operand(run, "mat2", b)
    fmt = "ND" if nd_route(a, b) else "NZ"
    out_dtype = "float32" if a.dtype == np.float32 else "float16"
    t = matmul_v2_tiling(run.chip, m, n, k, ta, tb, fmt, out_dtype, split_k(m, k, n), tiling)
    if fmt == "NZ":
        a_gm = launch_nd_to_nz(run, a_gm, *a_shape, "self")
        b_gm = launch_nd_to_nz(run, b_gm, *b_shape, "mat2")
    c = out
    if t.out_format == "NZ":
        c = run.gm.tensor("out.nz", t.out_dtype, nz_size(m, n))
    if t.k_parts > 1:
        launch_memset(run, c, nz_size(m, n))
    run.launch(MatmulV2Kernel, block_dim=t.block_dim, name="MatMulV2",
               args=dict(a=a_gm, b=b_gm, c=c, tiling=t))
    if t.out_format == "NZ":
        nd = out
        if t.out_dtype != out_dtype:    # split K: fp32 out, then Cast
            nd = run.gm.tensor("out.fp32", t.out_dtype, m * n)
        launch_nz_to_nd(run, c, nd, m, n, "out")
        if nd is not out:
            launch_cast(run, nd, out, m * n, "Cast(out)")
    return t, workspace_bytes(a, b)


def split_k(m: int, k: int, n: int) -> bool:
    """``IsSplitk`` on the training series (after the operands are fp16): K >= 8 max(M, N),
    and, unless every size is a multiple of 16 (ND in and out), M N K < 8e9 with M and N
    within 50x of each other (``GetNzSplitKFlag``)."""
    if k < SPLIT_K * max(m, n):
        return False
    if not (m % FRAC or k % FRAC or n % FRAC):
        return True
    return m * n * k < MKN_MAX and max(m, n) < MN_MULTI * min(m, n)


def workspace_bytes(a: np.ndarray, b: np.ndarray) -> int:
    """The GM the route needs beside its inputs and out: the fp16 copies of fp32 operands, the
    NZ operands and the NZ result."""
    (m, k), n = a.shape, b.shape[1]
    size = 2 * (a.size + b.size) if a.dtype != np.float16 else 0
    split = split_k(m, k, n)
    if split and a.dtype == np.float16:   # fp32 NZ out, fp32 ND before the Cast
        size += 4 * m * n
    if not nd_route(a, b):
        size += 2 * (nz_size(m, k) + nz_size(k, n))
    if split or not nd_route(a, b):
        size += (4 if a.dtype == np.float32 or split else 2) * nz_size(m, n)
    return size
