"""The tiling of FlashAttentionScore (and its grad) on Atlas A2: base blocks, tasks, causal skips.

CANN's A2 kernel (hicann/ops-transformer ``attention/flash_attention_score``, the S1S2 template
``flash_attention_score_s1s2_bn2gs1.h``) walks the score matrix of each (batch, head) in basic
blocks of ``s1_base`` query rows x ``s2_base`` key columns (128 x 128 here, the size its
``ProcessVec1`` templates name), a task being one query block of one head with all its key
blocks; the cube cores take the tasks, each cube core's two vector cores half the rows of its
block. As CANN's split does, each cube core takes a contiguous range of the tasks (in batch,
head, query block order) holding about 1 / block_dim of the key blocks to compute, so that a
causal mask's uneven tasks still load the cores evenly. Under a causal mask (sparse_mode 2,
leftUpCausal, or 3, rightDownCausal) a key block wholly above the diagonal is skipped, one
crossing it is masked.

``FlashAttentionTiling`` also fixes what the golden needs to follow the kernel's rounding: the
block sizes and the order of the key blocks (increasing).
"""

from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache

from npusim.errors import TilingError
from npusim.ops.common import ceil_div, override

FRAC = 16
FP32_PER_REPEAT = 64      # fp32 elements of one 256-byte vector repeat
MASK_SIZE = 2048          # the compressed causal mask of sparse modes 2 and 3 is 2048 x 2048


@dataclass(frozen=True, kw_only=True)
class FlashAttentionTiling:
    """Host tiling. b, n, s1, s2, d, the layout and the causal shift come from the arguments;
    users may override ``s1_base`` (query rows a block, a multiple of 16 up to 128),
    ``s2_base`` (key columns a block, 64 or 128) and ``block_dim`` (cube cores)."""

    b: int
    n: int
    s1: int
    s2: int
    d: int
    layout: str            # "BSND" or "BNSD"
    causal: bool           # sparse mode 2 or 3 with the compressed mask
    shift: int             # the diagonal's offset: key c is seen by query r when c <= r + shift
    s1_base: int = 128
    s2_base: int = 128
    block_dim: int = 0

    @property
    def s1_blocks(self) -> int:
        return ceil_div(self.s1, self.s1_base)

    @property
    def tasks(self) -> int:
        return self.b * self.n * self.s1_blocks

    def task(self, index: int) -> tuple:
        """(batch, head, first query row, rows) of task ``index``."""
        bn, i = divmod(index, self.s1_blocks)
        b, n = divmod(bn, self.n)
        r0 = i * self.s1_base
        return b, n, r0, min(self.s1_base, self.s1 - r0)

    def core_tasks(self, core: int) -> range:
        """The tasks of cube core ``core``: those whose work (key blocks) starts in its share
        [core, core + 1) x total / block_dim of the cumulative work."""
        starts = self._starts()
        total = starts[-1]
        lo = bisect_left(starts, -(-core * total // self.block_dim), 0, self.tasks)
        hi = bisect_left(starts, -(-(core + 1) * total // self.block_dim), 0, self.tasks)
        return range(lo, hi)

    def _starts(self) -> tuple:
        return work_starts(self)

    def key_blocks(self, r0: int, rows: int) -> list:
        """(first key, keys) of the key blocks query rows r0 .. r0 + rows - 1 see, in order."""
        last = self.s2 if not self.causal else min(self.s2, r0 + rows + self.shift)
        return [(c0, min(self.s2_base, last - c0)) for c0 in range(0, max(last, 0), self.s2_base)]

    def masked(self, r0: int, c0: int, cols: int) -> bool:
        """Whether the block at query row r0, key c0 crosses the causal diagonal."""
        return self.causal and c0 + cols - 1 > r0 + self.shift

    def row_stride(self) -> int:
        """Elements between consecutive sequence rows of one head in q, k, v and out."""
        return self.n * self.d if self.layout == "BSND" else self.d

    def offset(self, b: int, n: int, s: int, seq: int) -> int:
        """Element offset of row ``s`` of (batch b, head n) in a tensor of ``seq`` rows."""
        if self.layout == "BSND":
            return ((b * seq + s) * self.n + n) * self.d
        return ((b * self.n + n) * seq + s) * self.d


@lru_cache(maxsize=16)
def work_starts(t: FlashAttentionTiling) -> tuple:
    """Cumulative key blocks before each task of ``t``, and the total last."""
    cum = [0]
    for index in range(t.tasks):
        _, _, r0, rows = t.task(index)
        cum.append(cum[-1] + len(t.key_blocks(r0, rows)))
    return tuple(cum)


def mask_offset(t: FlashAttentionTiling, r0: int, c0: int) -> tuple:
    """(row, column) of the compressed 2048 x 2048 mask (1 where column > row) whose pattern is
    the block's at query row r0, key c0: masked where c0 + c > r0 + r + shift."""
    delta = c0 - r0 - t.shift
    return (0, delta) if delta >= 0 else (-delta, 0)


def flash_attention_tiling(op: str, chip, dims: tuple, layout: str, causal: bool, shift: int,
                           overrides=None) -> FlashAttentionTiling:
    b, n, s1, s2, d = dims
    t = FlashAttentionTiling(b=b, n=n, s1=s1, s2=s2, d=d, layout=layout, causal=causal,
                             shift=shift, block_dim=chip.ai_core_count)
    given = (t.b, t.n, t.s1, t.s2, t.d, t.layout, t.causal, t.shift)
    t = override(t, overrides, op)
    if (t.b, t.n, t.s1, t.s2, t.d, t.layout, t.causal, t.shift) != given:
        raise TilingError(f"{op}: b, n, s1, s2, d, layout, causal and shift come from the "
                          "arguments, not from the tiling")
    if not (FRAC <= t.s1_base <= 128 and t.s1_base % FRAC == 0):
        raise TilingError(f"{op}: s1_base = {t.s1_base}; a multiple of 16 from 16 to 128")
    if t.s2_base not in (64, 128):
        raise TilingError(f"{op}: s2_base = {t.s2_base}; 64 or 128 key columns a block")
    if not 1 <= t.block_dim <= chip.ai_core_count:
        raise TilingError(f"{op}: block_dim = {t.block_dim}; 1 to {chip.ai_core_count} cube "
                          f"cores on {chip.name}")
    return t
