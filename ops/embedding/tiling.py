"""Host tiling of EmbeddingDenseBackward: which kernel runs (the variant) and how it is cut.

Variants (kernels.md §4):
- ``sorted`` (A2 default for D > 512): V2 over the globally sorted indices; runs of one index
  summed in UB, flushed with atomic adds (tiling keys 0/1).
- ``deterministic`` (A2, fp32 compute): V2 where each output row has a single writer (10/11).
- ``small_dim`` (A2 default for D <= 512 and numWeights <= 2**24): no global sort; each core
  sorts batches of its own rows in UB (100/101).
- ``v1`` (Atlas training, the only one there): an atomic-add DMA per grad row, or with scale the
  output rows split over cores and every core scanning every index. CANN also runs it on A2
  for huge shapes (gradRow beyond INT32_MAX); there a user may force it.

The Sort before the sorted variants orders up to ``sort_chunk`` keys in one UB; more are sorted
in chunks and merged (``ops/common/sort.py``).

The scale pass (keys x1) follows the main kernel on A2. Users may override ``variant``,
``block_dim``, ``dim_chunk``, ``batch_rows`` and ``flush_rows``; every field they did not set is
derived from those they did, then the result is validated.
"""

from dataclasses import dataclass, replace

from npusim.errors import TilingError
from npusim.ops.common import ceil_div, override, overrides_of, round_up
from npusim.ops.common.sort import merge_window, sort_capacity

OP = "aclnnEmbeddingDenseBackward"
A2_VARIANTS = ("sorted", "deterministic", "small_dim", "v1")
TRAINING_VARIANTS = ("v1",)
FLUSH_ROWS = 10               # LIMIT_COUNT_NUM of embedding_dense_grad_v2.h
V2_UB_RESERVE = 20480 + 96    # bytes the V2 tiling keeps out of the D chunk (kernels.md §4(c))
V2_UNITS = 3                  # fp32 UB units per D element: grad row + two accumulators
SMALL_DIM_MAX = 512           # small-dim mode: D <= 512 ...
SMALL_DIM_WEIGHTS = 1 << 24   # ... and numWeights <= 2**24
SMALL_UB_RESERVE = 20480      # maxRowInUb = ((UB - 20480)/4 - D - 256) / (10 + align8(D))
V1_UB_RESERVE = 16384         # V1: UB minus 16 KB for the batch of rows
V1_CHUNK_ROWS = 128           # V1 splits rows over cores in multiples of 128
FIELDS_SET_BY_USER = ("variant", "block_dim", "dim_chunk", "batch_rows", "flush_rows",
                      "sort_chunk", "merge_window")


@dataclass(frozen=True, kw_only=True)
class EmbeddingDenseBackwardTiling:
    """Tiling of one EmbeddingDenseBackward call."""

    variant: str           # sorted, deterministic, small_dim (Atlas A2) or v1 (Atlas training)
    rows: int              # grad rows (the merged leading dims) = number of indices
    dim: int               # embedding dim D
    num_weights: int       # rows of out
    block_dim: int         # cores of the main kernel
    rows_per_core: int     # rows of each core (v1: a multiple of 128; the last core takes
    #                        what is left; small_dim: rows // block_dim, the last core takes
    #                        the rest); the first big_core_num cores take one more
    big_core_num: int      # cores taking rows_per_core + 1 rows (sorted, deterministic)
    dim_chunk: int         # D elements per pass (formerEmbeddingDim); D is walked in chunks
    batch_rows: int        # rows per UB batch (v1, small_dim); 1 for the V2 sorted kernels
    flush_rows: int        # rows a UB accumulator sums before a flush (LIMIT_COUNT_NUM)
    scale: bool            # scaleGradByFreq: the scale pass (A2) or v1's scale kernel runs
    scale_block_dim: int   # cores of the A2 scale pass (rows of out split over them)
    sort_rows: int         # keys the Sort sorts, rounded up to 32 (0: no global sort)
    sort_chunk: int        # keys one UB sorts; more are sorted in chunks, then merged
    merge_window: int      # keys of each run a merge step holds in UB

    @property
    def tiling_key(self) -> int:
        """CANN's key: scale + 10 x deterministic + 100 x small-dim (0 for v1)."""
        return (int(self.scale) + 10 * (self.variant == "deterministic")
                + 100 * (self.variant == "small_dim")) if self.variant != "v1" else 0

    def core_rows(self, core: int) -> tuple[int, int]:
        """(first row, row count) of ``core``."""
        if self.variant == "small_dim":   # Tiling4SmallDim: tailCopyRow on the last core
            start = core * self.rows_per_core
            last = core == self.block_dim - 1
            count = self.rows - start if last else self.rows_per_core
            return min(start, self.rows), max(0, min(count, self.rows - start))
        big = min(core, self.big_core_num)
        start = core * self.rows_per_core + big
        count = self.rows_per_core + (core < self.big_core_num)
        return min(start, self.rows), max(0, min(count, self.rows - start))


def max_v2_chunk(chip) -> int:
    """maxFormerNum = ((UB - 20576) / (16 * 4 * 3)) * 16 fp32 elements."""
    return (chip.ub_bytes - V2_UB_RESERVE) // (16 * 4 * V2_UNITS) * 16


def small_dim_rows(chip, dim: int) -> int:
    """maxRowInUb of the small-dim tiling (fp32 compute)."""
    align8 = round_up(dim, 8)
    return ((chip.ub_bytes - SMALL_UB_RESERVE) // 4 - dim - 256) // (10 + align8)


def v1_batch_rows(chip, chunk: int, index_bytes: int) -> int:
    return (chip.ub_bytes - V1_UB_RESERVE) // (round_up(chunk * 4, 32) + index_bytes)


def default_variant(chip, rows: int, dim: int, num_weights: int) -> str:
    """The kernel CANN picks (aclnn_embedding_dense_backward.cpp, kernels.md §4(b))."""
    if not chip.separated:
        return "v1"
    if dim <= SMALL_DIM_MAX and num_weights <= SMALL_DIM_WEIGHTS:
        return "small_dim"
    return "sorted"


def embedding_tiling(chip, *, rows: int, dim: int, num_weights: int, scale: bool,
                     index_bytes: int = 4, overrides: dict | None = None):
    """The tiling for ``rows`` x ``dim`` grads into ``num_weights`` rows on ``chip``."""
    overrides = dict(overrides_of(overrides, OP))
    base = EmbeddingDenseBackwardTiling(
        variant=default_variant(chip, rows, dim, num_weights), rows=rows, dim=dim,
        num_weights=num_weights, block_dim=1, rows_per_core=0, big_core_num=0, dim_chunk=dim,
        batch_rows=1, flush_rows=FLUSH_ROWS, scale=scale, scale_block_dim=1, sort_rows=0,
        sort_chunk=0, merge_window=0)
    for key in overrides:
        if key not in FIELDS_SET_BY_USER and key in base.__dataclass_fields__:
            raise TilingError(f"{OP}: tiling {key} is derived from the shape; override one of "
                              f"{', '.join(FIELDS_SET_BY_USER)}")
    t = override(base, overrides, OP)
    _check_variant(chip, t, dim)
    _check_set_fields(chip, t, overrides)
    t = _derive(chip, t, overrides, index_bytes)
    _validate(chip, t, overrides, index_bytes)
    return t


def _check_variant(chip, t, dim) -> None:
    allowed = A2_VARIANTS if chip.separated else TRAINING_VARIANTS
    if t.variant not in allowed:
        raise TilingError(f"{OP}: tiling variant = {t.variant!r} is not a kernel of "
                          f"{chip.name}; allowed: {', '.join(allowed)}")
    if t.variant == "small_dim" and dim > SMALL_DIM_MAX:
        raise TilingError(f"{OP}: tiling variant = 'small_dim' needs an embedding dim of at "
                          f"most {SMALL_DIM_MAX}; this one is {dim}")
    if t.variant == "small_dim" and t.num_weights > SMALL_DIM_WEIGHTS:
        raise TilingError(f"{OP}: tiling variant = 'small_dim' sorts indices as fp32, exact "
                          f"only for numWeights <= {SMALL_DIM_WEIGHTS}; this one is "
                          f"{t.num_weights}")


def _check_set_fields(chip, t, overrides: dict) -> None:
    """The fields the user set, before anything is derived from them."""
    cores = chip.vector_core_count
    if "block_dim" in overrides and not 1 <= t.block_dim <= cores:
        raise TilingError(f"{OP}: tiling block_dim = {t.block_dim}: {chip.name} has {cores} "
                          f"vector cores; allowed 1 to {cores}")
    for key in ("dim_chunk", "batch_rows", "flush_rows"):
        if key in overrides and getattr(t, key) < 1:
            raise TilingError(f"{OP}: tiling {key} = {getattr(t, key)}: must be at least 1")


def _derive(chip, t, overrides: dict, index_bytes: int):
    cores = chip.vector_core_count
    if t.variant == "v1":
        return _derive_v1(chip, t, overrides, index_bytes)
    chunk = t.dim_chunk if "dim_chunk" in overrides else \
        max(1, min(t.dim, max_v2_chunk(chip)))   # dim 0: no kernel runs; 1 keeps it valid
    block_dim = t.block_dim if "block_dim" in overrides else max(1, min(cores, t.rows))
    if t.variant == "small_dim":   # formerCopyRow = rows // cores; the last core the rest
        per, rest = divmod(t.rows, block_dim)
        batch = t.batch_rows if "batch_rows" in overrides else \
            max(1, min(small_dim_rows(chip, t.dim), per + rest))
        return replace(t, dim_chunk=chunk, block_dim=block_dim, rows_per_core=per,
                       big_core_num=0, batch_rows=batch,
                       scale_block_dim=min(cores, t.num_weights))
    per, big = divmod(t.rows, block_dim)
    sort_chunk = t.sort_chunk if "sort_chunk" in overrides else sort_capacity(chip)
    window = t.merge_window if "merge_window" in overrides else merge_window(chip)
    return replace(t, dim_chunk=chunk, block_dim=block_dim, rows_per_core=per, big_core_num=big,
                   batch_rows=1, scale_block_dim=min(cores, t.num_weights),
                   sort_rows=round_up(max(t.rows, 1), 32), sort_chunk=sort_chunk,
                   merge_window=window)


def _derive_v1(chip, t, overrides: dict, index_bytes: int):
    cores = chip.vector_core_count
    fit = (chip.ub_bytes - V1_UB_RESERVE - index_bytes) // 4 // 8 * 8
    chunk = t.dim_chunk if "dim_chunk" in overrides else max(1, min(t.dim, fit))
    if t.scale:   # output rows split over the cores; each core scans every index
        block_dim = t.block_dim if "block_dim" in overrides else max(1, min(cores,
                                                                            t.num_weights))
        per = ceil_div(t.num_weights, block_dim)
        if "block_dim" not in overrides:
            block_dim = ceil_div(t.num_weights, per)
    else:
        want = t.block_dim if "block_dim" in overrides else cores
        per = round_up(ceil_div(max(t.rows, 1), want), V1_CHUNK_ROWS)
        block_dim = want if "block_dim" in overrides else max(1, ceil_div(t.rows, per))
    batch = t.batch_rows if "batch_rows" in overrides else \
        max(1, min(v1_batch_rows(chip, max(chunk, 1), index_bytes), V1_CHUNK_ROWS))
    return replace(t, dim_chunk=chunk, block_dim=block_dim, rows_per_core=per, big_core_num=0,
                   batch_rows=batch)


def _validate(chip, t, overrides: dict, index_bytes: int) -> None:
    cores = chip.vector_core_count
    if not 1 <= t.block_dim <= cores:
        raise TilingError(f"{OP}: tiling block_dim = {t.block_dim}: {chip.name} has {cores} "
                          f"vector cores; allowed 1 to {cores}")
    if t.flush_rows < 1:
        raise TilingError(f"{OP}: tiling flush_rows = {t.flush_rows}: must be at least 1")
    if t.variant == "v1":
        _validate_v1(chip, t, index_bytes)
    else:
        limit = max_v2_chunk(chip)
        if not 1 <= t.dim_chunk <= limit or t.dim_chunk > max(t.dim, 1):
            raise TilingError(f"{OP}: tiling dim_chunk = {t.dim_chunk}: allowed 1 to "
                              f"{min(limit, max(t.dim, 1))} (the embedding dim {t.dim}, and "
                              f"{limit} fp32 elements fit UB on {chip.name})")
    if t.variant == "small_dim":
        fit = small_dim_rows(chip, t.dim)
        if not 1 <= t.batch_rows <= fit:
            raise TilingError(f"{OP}: tiling batch_rows = {t.batch_rows}: with embedding dim "
                              f"{t.dim} at most {fit} rows fit UB on {chip.name}")
    if t.variant in ("sorted", "deterministic"):
        _validate_sort(chip, t)


def _validate_sort(chip, t) -> None:
    most = sort_capacity(chip)
    if not 32 <= t.sort_chunk <= most or t.sort_chunk % 32:
        raise TilingError(f"{OP}: tiling sort_chunk = {t.sort_chunk}: a multiple of 32 from 32 "
                          f"to {most} (keys one UB sorts on {chip.name})")
    most = merge_window(chip)
    if not 8 <= t.merge_window <= most or t.merge_window % 8:
        raise TilingError(f"{OP}: tiling merge_window = {t.merge_window}: a multiple of 8 from "
                          f"8 to {most} (keys of each run a merge step holds in UB on "
                          f"{chip.name})")


def _validate_v1(chip, t, index_bytes: int) -> None:
    fit = (chip.ub_bytes - V1_UB_RESERVE - index_bytes) // 4 // 8 * 8
    if not 1 <= t.dim_chunk <= min(max(t.dim, 1), fit):
        raise TilingError(f"{OP}: tiling dim_chunk = {t.dim_chunk}: allowed 1 to "
                          f"{min(max(t.dim, 1), fit)} (the embedding dim {t.dim}; {fit} fp32 "
                          f"elements fit UB on {chip.name})")
    most = v1_batch_rows(chip, t.dim_chunk, index_bytes)
    if not 1 <= t.batch_rows <= most:
        raise TilingError(f"{OP}: tiling batch_rows = {t.batch_rows}: with dim_chunk "
                          f"{t.dim_chunk} at most {most} rows fit UB on {chip.name}")
