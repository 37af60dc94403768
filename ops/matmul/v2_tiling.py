"""The tiling of the training series' MatMulV2 kernel (``v2_kernel.py``).

CANN's TBE MatMul takes its tiling from the cube tiling library (a knowledge bank of shapes and
a cost search), which is not public; this tiling is npusim's own, shaped like it: the output
fractals cut into ``block_m`` x ``block_n`` core regions (every core one region), each region
walked in base blocks of ``base_m`` x ``base_n`` (one L0C buffer each, two buffers), the k axis in
L1 tiles of ``l1_k`` and L0 steps of ``base_k``, every buffer double-buffered. The default
region split uses as many cores as it can while giving each core the fewest output fractals,
then the fewest fractal rows plus columns (the data it loads); the L0 k step as deep as L0A and
L0B allow (at most 256), the L1 k tile at most 512 **[assumed]**. On CANN's split-K route
(fp32 out) the cores that split leaves take parts of K (``k_parts``), each adding its fp32
partial into the zeroed output atomically **[assumed split]**.
"""

from dataclasses import dataclass

from npusim.errors import TilingError
from npusim.ops.common import ceil_div, override, round_up

FRAC = 16
NAME = "MatMulV2"
FORMATS = ("NZ", "ND")
SPLIT_MIN = 4      # the default split-K part at least this many fractals deep [assumed]
L1_K_MOST = 512    # the default L1 k tile at most: a long K in several tiles, so that the copy
                   # of the next overlaps the use of the current [assumed]


@dataclass(frozen=True, kw_only=True)
class MatmulV2Tiling:
    """Host tiling of the training series' MatMulV2. Users may override ``block_m``,
    ``block_n`` (cores along M and N fractals), ``base_m``, ``base_n`` (the L0C block),
    ``base_k`` (the L0 k step), ``l1_k`` (the L1 k tile) and, on the split-K route,
    ``k_parts`` (cores along K); m, n, k, the transposes, the formats and the output dtype come
    from the call."""

    m: int
    n: int
    k: int
    trans_a: bool
    trans_b: bool
    in_format: str            # "NZ" (after TransData) or "ND" (read in place, aligned shapes)
    out_dtype: str            # "float16" or "float32" (fp32 inputs, split K: fp16 in, fp32 out)
    out_format: str = "NZ"    # "NZ" or "ND" (as in_format, but NZ on the split-K route)
    split_k: bool = False     # CANN's split-K route: fp32 out, k_parts may exceed 1
    k_parts: int = 1          # cores along K, adding their fp32 partials atomically
    block_m: int = 1
    block_n: int = 1
    base_m: int = 128
    base_n: int = 256
    base_k: int = 64
    l1_k: int = 256

    @property
    def m1(self) -> int:
        return ceil_div(self.m, FRAC)

    @property
    def n1(self) -> int:
        return ceil_div(self.n, FRAC)

    @property
    def k16(self) -> int:
        return round_up(self.k, FRAC)

    @property
    def core_m1(self) -> int:
        """Fractal rows of one core's region."""
        return ceil_div(self.m1, self.block_m)

    @property
    def core_n1(self) -> int:
        return ceil_div(self.n1, self.block_n)

    @property
    def regions(self) -> int:
        return ceil_div(self.m1, self.core_m1) * ceil_div(self.n1, self.core_n1)

    @property
    def block_dim(self) -> int:
        return self.regions * self.k_parts

    @property
    def part_k(self) -> int:
        """The k of one part (whole fractals; the last part may be shorter or empty)."""
        return round_up(ceil_div(self.k, self.k_parts), FRAC)


def core_split(m1: int, n1: int, cores: int) -> tuple[int, int]:
    """(block_m, block_n): the fewest output fractals a core, then the fewest rows + columns."""
    best = None
    for bm in range(1, min(m1, cores) + 1):
        bn = min(n1, cores // bm)
        sm, sn = ceil_div(m1, bm), ceil_div(n1, bn)
        key = (sm * sn, sm + sn, bm)
        if best is None or key < best[0]:
            best = (key, bm, bn)
    return best[1], best[2]


def default_tiling(chip, m, n, k, trans_a, trans_b, in_format, out_dtype,
                   split_k=False) -> MatmulV2Tiling:
    m1, n1 = ceil_div(m, FRAC), ceil_div(n, FRAC)
    bm, bn = core_split(m1, n1, chip.ai_core_count)
    parts = 1
    if split_k:   # the cores the M x N split leaves, along K, each part at least 4 fractals
        parts = max(1, min(chip.ai_core_count // (bm * bn), ceil_div(k, FRAC * SPLIT_MIN)))
    part = round_up(ceil_div(k, parts), FRAC)
    base_m = min(ceil_div(m1, bm) * FRAC, 128)
    base_n = min(ceil_div(n1, bn) * FRAC, 256)
    fit = min(chip.l0a_bytes // (4 * base_m), chip.l0b_bytes // (4 * base_n)) // FRAC * FRAC
    base_k = max(FRAC, min(part, fit, 256))
    l1_fit = chip.l1_bytes // (4 * (base_m + base_n)) // base_k * base_k
    l1_k = max(base_k, min(round_up(part, base_k), l1_fit, L1_K_MOST))
    return MatmulV2Tiling(m=m, n=n, k=k, trans_a=trans_a, trans_b=trans_b, in_format=in_format,
                          out_dtype="float32" if split_k else out_dtype,
                          out_format="NZ" if split_k else in_format, split_k=split_k,
                          k_parts=parts,
                          block_m=bm, block_n=bn, base_m=base_m, base_n=base_n, base_k=base_k,
                          l1_k=l1_k)


FIXED = ("m", "n", "k", "trans_a", "trans_b", "in_format", "out_dtype", "out_format", "split_k")


def matmul_v2_tiling(chip, m, n, k, trans_a, trans_b, in_format, out_dtype, split_k=False,
                     overrides=None):
    """The default tiling with the user's overrides, checked."""
    t = default_tiling(chip, m, n, k, trans_a, trans_b, in_format, out_dtype, split_k)
    given = tuple(getattr(t, f) for f in FIXED)
    t = override(t, overrides, f"aclnnMatmul ({NAME})")
    if tuple(getattr(t, f) for f in FIXED) != given:
        raise TilingError(f"aclnnMatmul ({NAME}): {', '.join(FIXED)} come from the matrices, "
                          "not from the tiling")
    check_tiling(t, chip)
    return t


def check_tiling(t: MatmulV2Tiling, chip) -> None:
    """TilingError unless the tiles are whole fractals, the split fits the cores and the
    buffers fit L1, L0A, L0B, L0C and UB."""
    what = f"aclnnMatmul ({NAME})"
    for name in ("base_m", "base_n", "base_k", "l1_k"):
        value = getattr(t, name)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0 or value % FRAC:
            raise TilingError(f"{what}: {name} = {value!r}; a positive multiple of 16")
    if t.l1_k % t.base_k:
        raise TilingError(f"{what}: l1_k = {t.l1_k} is not a multiple of base_k = {t.base_k}")
    for name, most in (("block_m", t.m1), ("block_n", t.n1),
                       ("k_parts", ceil_div(t.k, FRAC) if t.split_k else 1)):
        value = getattr(t, name)
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= most:
            raise TilingError(f"{what}: {name} = {value!r}; 1-{most} (the fractals along it; "
                              "k_parts above 1 on the split-K route only)")
    if t.block_dim > chip.ai_core_count:
        raise TilingError(f"{what}: block_m x block_n x k_parts = {t.block_m} x {t.block_n} x "
                          f"{t.k_parts} cores; {chip.name} has {chip.ai_core_count}")
    out_item = 4 if t.out_dtype == "float32" else 2
    ub = t.base_m * t.base_n * (4 + (out_item if out_item != 4 else 0))
    needs = (("L1", 2 * 2 * t.l1_k * (t.base_m + t.base_n), chip.l1_bytes),
             ("L0A", 2 * 2 * t.base_m * t.base_k, chip.l0a_bytes),
             ("L0B", 2 * 2 * t.base_n * t.base_k, chip.l0b_bytes),
             ("L0C", 2 * 4 * t.base_m * t.base_n, chip.l0c_bytes),
             ("UB", ub, chip.ub_bytes))
    for buffer, need, size in needs:
        if need > size:
            raise TilingError(f"{what}: base {t.base_m}x{t.base_n}x{t.base_k} (L1 k "
                              f"{t.l1_k}) needs {need} bytes of {buffer}, which has {size}")
