"""aclnnGroupedMatmul (single x, weight and y; groupListType 0) on Atlas A2: the MoE experts'
GEMMs, forward and backward, on the CATLASS-shaped kernel (``grouped_kernel.py``).

- groupType 0 (forward, and the input gradient): x [M, K] holds the tokens sorted by expert,
  weight [E, K, N], group_list[e] the tokens of experts 0..e -> y [M, N], y[rows of e] =
  x[rows of e] @ weight[e]. The input gradient dX = dY W^T per expert is the same call with
  ``weight = W.transpose(0, 2, 1)`` (a transposed weight: read in place, ColumnMajor B).
- groupType 2 (the weight gradient): x [M, K] transposed (``X.T`` of the tokens [K, M]),
  weight [K, N] (dY of the tokens), group_list over K -> y [E, M, N], y[e] = x[:, tokens of
  e] @ weight[tokens of e] (dW_e = X_e^T dY_e).

A strided x or weight that is neither contiguous nor transposed goes through the Contiguous
kernel first. Rows of y past group_list's last value (groupType 0), and the y[e] of an expert
with no tokens (groupType 2), are not written (CANN: not updated; npusim's GM starts zeroed).
An empty y runs no kernel. Kernels (``stats["kernels"]``): [Contiguous per strided input],
GroupedMatmul.
"""

from npusim.engine.sequence import OpRun
from npusim.ops.common import resolve_chip
from npusim.ops.common.contiguous import to_gm
from npusim.ops.matmul.grouped_args import OP, check_grouped_matmul
from npusim.ops.matmul.grouped_kernel import GroupedMatmulKernel
from npusim.ops.matmul.grouped_tiling import grouped_matmul_tiling


def _stored(x, weight, group_type: int, layout_b: str):
    """x and the weight as they lie in GM, and (m, k, n, groups, y shape)."""
    if group_type == 0:
        (m, k), (e, _, n) = x.shape, weight.shape
        w = weight.transpose(0, 2, 1) if layout_b == "column" else weight
        return x, w, (m, k, n, e, (m, n))
    (m, k), n, e = x.shape, weight.shape[1], None
    return x.T, weight, (m, k, n, e, None)


def grouped_matmul(x, weight, group_list, *, group_type=0, chip="atlas-a2", tiling=None,
                   mode="timed", numerics=True, trace=True, sanitize=True, jitter=None):
    """Run aclnnGroupedMatmul on ``chip``: ``outputs["y"]`` is [M, N] (group_type 0) or
    [E, M, N] (group_type 2), x's dtype."""
    chip = resolve_chip(chip)
    x, weight, group_list, dtype, gt, layout_b = check_grouped_matmul(chip, x, weight,
                                                                     group_list, group_type)
    x_stored, w_stored, (m, k, n, e, y_shape) = _stored(x, weight, gt, layout_b)
    e = e or group_list.size
    y_shape = y_shape or (e, m, n)
    t = grouped_matmul_tiling(chip, overrides=tiling, group_type=gt, groups=e, m=m, k=k, n=n,
                              dtype=dtype, layout_a="row" if gt == 0 else "column",
                              layout_b=layout_b)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    count = y_shape[0] * y_shape[1] * (y_shape[2] if len(y_shape) == 3 else 1)
    y = run.gm.tensor("y", dtype, count)
    if count == 0 or k == 0:
        return run.result({"y": (y, y_shape)}, tiling=t)
    x_gm, w_gm = to_gm(run, "x", x_stored), to_gm(run, "weight", w_stored)
    gl_gm = run.gm.tensor("group_list", "int64", group_list.size, group_list)
    run.launch(GroupedMatmulKernel, block_dim=t.block_dim, name="GroupedMatmul",
               args=dict(x=x_gm, weight=w_gm, group_list=gl_gm, y=y, tiling=t))
    return run.result({"y": (y, y_shape)}, tiling=t)


__all__ = ["OP", "grouped_matmul"]
