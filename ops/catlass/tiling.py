"""The tiling of ``catlass_matmul``: CATLASS's tile shapes, its block swizzle, its k order.

CATLASS (hicann/catlass) cuts C into base blocks of ``l1_m x l1_n`` and hands them to the cube
cores in the order of ``GemmIdentityBlockSwizzle<offset, direction>``
(``include/catlass/gemm/block/block_swizzle.hpp``): direction 0 walks stripes of ``offset``
block rows, column by column, every other stripe right to left; direction 1 does the same with
stripes of ``offset`` block columns. Core ``i`` takes tasks ``i, i + cores, ...``. With
``shuffle_k`` (``MmadAtlasA2Preload<.., true>``) core ``i`` starts its k loop at L1 tile
``i mod k_tiles``, so that cores reading the same rows of A or B read different k at a time.
"""

from dataclasses import dataclass
from typing import NamedTuple

from npusim.errors import TilingError
from npusim.ops.common import ceil_div

FRAC = 16
LAYOUTS_B = ("column", "zn")   # B ColumnMajor (N x K in GM) or zN (fractal columns of 16)
# the kernel also takes RowMajor B (K x N in GM), for ``npusim.ops.matmul`` (ops/matmul/)
KERNEL_LAYOUTS_B = (*LAYOUTS_B, "row")


@dataclass(frozen=True, kw_only=True)
class CatlassMatmulTiling:
    """Host tiling of ``catlass_matmul``. Users may override the tile fields, the swizzle,
    ``shuffle_k`` and ``block_dim``; CATLASS's example defaults are 128x256x256 with L0 k 64,
    swizzle <3, 0> (<3, 1> when n > m) and every cube core."""

    m: int
    n: int
    k: int
    layout_b: str
    l1_m: int = 128
    l1_n: int = 256
    l1_k: int = 256
    l0_k: int = 64
    swizzle_offset: int = 3
    swizzle_direction: int = 0
    shuffle_k: bool = True
    block_dim: int = 0          # cube cores launched (0: every cube core of the chip)

    @property
    def loops_m(self) -> int:
        return ceil_div(self.m, self.l1_m)

    @property
    def loops_n(self) -> int:
        return ceil_div(self.n, self.l1_n)

    @property
    def tasks(self) -> int:
        return self.loops_m * self.loops_n

    @property
    def k_tiles(self) -> int:
        return ceil_div(self.k, self.l1_k)


def check_tiling(t: CatlassMatmulTiling, chip) -> None:
    """TilingError unless the tiles are whole fractals and fit L1, L0A, L0B and L0C."""
    for name in ("l1_m", "l1_n", "l1_k", "l0_k"):
        value = getattr(t, name)
        if not isinstance(value, int) or value <= 0 or value % FRAC:
            raise TilingError(f"catlass_matmul: {name} = {value!r}; a positive multiple of 16")
    if t.l1_k % t.l0_k:
        raise TilingError(f"catlass_matmul: l1_k = {t.l1_k} is not a multiple of l0_k = {t.l0_k}")
    if t.swizzle_direction not in (0, 1) or not 1 <= t.swizzle_offset <= 64:
        raise TilingError(f"catlass_matmul: swizzle <{t.swizzle_offset}, "
                          f"{t.swizzle_direction}>; offset 1-64, direction 0 or 1")
    if not 1 <= t.block_dim <= chip.ai_core_count:
        raise TilingError(f"catlass_matmul: block_dim = {t.block_dim}; 1-{chip.ai_core_count} "
                          f"cube cores on {chip.name}")
    needs = (("L1", 2 * 2 * t.l1_k * (t.l1_m + t.l1_n), chip.l1_bytes),
             ("L0A", 2 * 2 * t.l1_m * t.l0_k, chip.l0a_bytes),
             ("L0B", 2 * 2 * t.l1_n * t.l0_k, chip.l0b_bytes),
             ("L0C", 4 * t.l1_m * t.l1_n, chip.l0c_bytes))
    for buffer, need, size in needs:
        if need > size:
            raise TilingError(f"catlass_matmul: tile {t.l1_m}x{t.l1_n}x{t.l1_k} (L0 k "
                              f"{t.l0_k}) needs {need} bytes of {buffer}, which has {size}")


def block_coord(t: CatlassMatmulTiling, task: int) -> tuple:
    """(block row, block column) of ``task``: GemmIdentityBlockSwizzle::GetBlockCoord."""
    rows, cols, off = t.loops_m, t.loops_n, t.swizzle_offset
    if t.swizzle_direction == 0:
        stripe, inner = divmod(task, off * cols)
        height = rows - off * stripe if stripe == ceil_div(rows, off) - 1 else off
        m_idx, n_idx = stripe * off + inner % height, inner // height
        return m_idx, cols - n_idx - 1 if stripe % 2 else n_idx
    stripe, inner = divmod(task, off * rows)
    width = cols - off * stripe if stripe == ceil_div(cols, off) - 1 else off
    m_idx, n_idx = inner // width, stripe * off + inner % width
    return (rows - m_idx - 1 if stripe % 2 else m_idx), n_idx


def block_shape(t: CatlassMatmulTiling, m_idx: int, n_idx: int) -> tuple:
    """(rows, columns) of C in block (m_idx, n_idx): the last row and column may be short."""
    return min(t.l1_m, t.m - m_idx * t.l1_m), min(t.l1_n, t.n - n_idx * t.l1_n)


class Block(NamedTuple):
    """A base block of C: its place in the grid of blocks and its rows and columns."""

    m_idx: int
    n_idx: int
    rows: int
    cols: int


def block_of(t: CatlassMatmulTiling, task: int) -> Block:
    m_idx, n_idx = block_coord(t, task)
    return Block(m_idx, n_idx, *block_shape(t, m_idx, n_idx))


def k_order(t: CatlassMatmulTiling, core: int) -> list:
    """The L1 k tiles in the order ``core`` walks them."""
    start = core if t.shuffle_k else 0
    return [(start + i) % t.k_tiles for i in range(t.k_tiles)]


def zn_offset(k: int, n: int, k_rows: int) -> int:
    """Element offset of B[k, n] in a zN matrix of ``k_rows`` (rounded to 16) rows: columns of
    16 n, each ``k_rows`` rows of 16 elements."""
    return (n // FRAC) * k_rows * FRAC + k * FRAC + n % FRAC
