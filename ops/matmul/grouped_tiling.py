"""The tiling of ``grouped_matmul``: CANN's GroupedMatmul base blocks and how they are dealt to
the cube cores (hicann/ops-transformer ``gmm/grouped_matmul``).

Base blocks (``op_host/op_tiling/grouped_matmul_tiling.cpp``, non-quantised fp16/bf16 on
Atlas A2): baseN 256 (``BEST_BASEN``), baseK = (L0B / 2) / (baseN x 2 B) = 64, baseM = min(
(L0A / 2) / (baseK x 2 B), L0C / (baseN x 4 B)) = 128, or the total M rounded up to 16 when
that is smaller. These are the CATLASS example's 128 x 256 base block with L0 k 64, which the
kernel (``ops/catlass/matmul.py``'s ``BlockMmad``) runs with its L1 k tile of 256.

Dealing (``op_kernel/grouped_matmul_kernel.h``, ``GMMProcess::Process``): the groups in order;
group g has ``ceil(m_g / baseM) x ceil(n / baseN)`` blocks, numbered on from where the previous
group stopped (``count = curCount % coreNum``), and core i takes the blocks whose running number
is i modulo the cores. Inside a group, block number r is (r // dimN, r % dimN) when the group has
at most 5 block rows (``thresholdDimM``, Atlas A2), else the diagonal walk of
``MNBlockIdxCompute`` over bands of 8 x 8 blocks (``thresholdBlockNum``), so that the cores
working at one time read different rows of x and columns of the weight. A group of 0 rows (or
0 k for groupType 2) has no blocks.

Not modelled: CANN's Matmul API L1 depths (stepKa 8, stepKb 4: A 512 deep, B 256 deep; the
kernel keeps CATLASS's 256 for both), the ``singleN`` widening (only for quantised and fp32
inputs), the full-K load (``FullLoadK``: N = 7168 only), the fixed-axis (``定轴``) and
pre-tiling templates.
"""

import math
from dataclasses import dataclass

from npusim.errors import TilingError
from npusim.ops.catlass.tiling import CatlassMatmulTiling, check_tiling
from npusim.ops.common import ceil_div, override, round_up

OP = "aclnnGroupedMatmul"
THRESHOLD_DIM_M = 5      # grouped_matmul_kernel.h: thresholdDimM (not __CCE_AICORE__ 200)
THRESHOLD_BLOCKS = 8     # grouped_matmul_kernel.h: thresholdBlockNum
BASE_M = 128             # grouped_matmul_tiling.cpp: min(L0A / 2 / (64 x 2), L0C / (256 x 4))


@dataclass(frozen=True, kw_only=True)
class GroupedMatmulTiling:
    """Host tiling of ``grouped_matmul``. Fixed by the arguments: ``group_type`` (0: groups
    of rows, 2: groups of k), ``groups``, ``m``, ``k``, ``n`` (k is each group's for type 0,
    the total for type 2), ``dtype``, ``layout_a`` (row: x as stored; column: x transposed, type
    2) and ``layout_b`` (row: weight [K, N] per group; column: weight transposed, stored
    [N, K]). Users may override the base block ``l1_m`` x ``l1_n``, the L1 k tile ``l1_k``, the
    L0 k step ``l0_k``, ``shuffle_k`` (CATLASS's per-core k rotation; CANN's walk starts at 0)
    and ``block_dim`` (cube cores)."""

    group_type: int
    groups: int
    m: int
    k: int
    n: int
    dtype: str
    layout_a: str
    layout_b: str
    l1_m: int = BASE_M
    l1_n: int = 256
    l1_k: int = 256
    l0_k: int = 64
    shuffle_k: bool = False
    block_dim: int = 0

    def block(self) -> CatlassMatmulTiling:
        """The CATLASS tiling the kernel's buffers and Mmad steps use (m, n, k: the whole)."""
        return CatlassMatmulTiling(m=self.m, n=self.n, k=self.k, layout_b=self.layout_b,
                                   l1_m=self.l1_m, l1_n=self.l1_n, l1_k=self.l1_k,
                                   l0_k=self.l0_k, shuffle_k=self.shuffle_k,
                                   block_dim=self.block_dim)


FIXED = ("group_type", "groups", "m", "k", "n", "dtype", "layout_a", "layout_b")


def grouped_matmul_tiling(chip, *, overrides=None, **fixed) -> GroupedMatmulTiling:
    """CANN's base block for these sizes, every cube core, then the user's overrides, checked."""
    base_m = min(BASE_M, round_up(max(fixed["m"], 1), 16))
    t = GroupedMatmulTiling(**fixed, l1_m=base_m, block_dim=chip.ai_core_count)
    given = tuple(getattr(t, f) for f in FIXED)
    t = override(t, overrides, OP)
    if tuple(getattr(t, f) for f in FIXED) != given:
        raise TilingError(f"{OP}: {', '.join(FIXED)} come from the arguments, not from the "
                          "tiling")
    try:
        check_tiling(t.block(), chip)
    except TilingError as exc:
        raise TilingError(f"{OP} (the CATLASS-shaped kernel): {exc}") from None
    return t


def block_coord(rel: int, dim_m: int, dim_n: int) -> tuple[int, int]:
    """(block row, block column) of a group's block number ``rel``: MNBlockIdxCompute."""
    if dim_m <= THRESHOLD_DIM_M:
        return rel // dim_n, rel % dim_n
    band = THRESHOLD_BLOCKS * dim_n                      # thresholdM_dimN
    rows = dim_m % THRESHOLD_BLOCKS if rel >= dim_m * dim_n // band * band \
        else THRESHOLD_BLOCKS                            # curThresholdM
    square = rows * THRESHOLD_BLOCKS                     # curThresholdM_thresholdN
    in_band = rel % band
    cols = dim_n % THRESHOLD_BLOCKS if in_band >= rows * dim_n // square * square \
        else THRESHOLD_BLOCKS                            # curThresholdN
    local = in_band % square
    m_idx = local % rows + rel // band * THRESHOLD_BLOCKS
    n_idx = (local + local // math.lcm(rows, cols)) % cols + in_band // square * THRESHOLD_BLOCKS
    return m_idx, n_idx


def group_blocks(t: GroupedMatmulTiling, rows: int, cols: int) -> tuple[int, int]:
    """(block rows, block columns) of a group whose C is rows x cols."""
    return ceil_div(rows, t.l1_m), ceil_div(cols, t.l1_n)
