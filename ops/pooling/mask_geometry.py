"""Host tiling of the mask max-pool kernels (``max_pool_mask.py``, ``max_pool_mask_backward.py``).

Both kernels work on NC1HWC0 (C0 = 16 fp16 lanes, one 32-byte block per position), plane by
plane (N x C1 planes split over the cores, the first cores one more, as CANN's TIK kernel splits
N x C1), and in *slabs* of ``rows`` output rows. A slab reaches ``in_rows`` padded input rows,
from (first output row) x sh on; in UB they lie ``pitch`` = W + 2 pw positions apart (padded
coordinates: the padding is part of the tile). The mask in GM has, per plane and kernel tap,
``mask_words`` uint16 words (aclnn's ((ceil(OH x OW / 16) + 1) x 16): one word per output
position, bit c = lane c, the rest of the block and one more block of 16 words not written).
"""

from dataclasses import dataclass

from npusim.errors import TilingError
from npusim.ops.common import ceil_div, override, overrides_of, round_up

C0 = 16
MAX_SLAB_POSITIONS = 4096    # output positions of one slab at most (assumed: a UB-sized cap)


@dataclass(frozen=True, kw_only=True)
class MaskPoolTiling:
    """Users may override ``rows`` and ``buffer_num``; the rest follows from the shape."""

    planes: int            # N x C1
    h: int
    w: int
    oh: int
    ow: int
    kh: int
    kw: int
    sh: int
    sw: int
    ph: int
    pw: int
    rows: int              # output rows per slab
    in_rows: int           # padded input rows a slab's tile holds
    pitch: int             # positions between the tile's rows (``pitch_of``)
    mask_words: int        # uint16 words per plane and tap in GM
    block_dim: int         # cores used
    big_core_num: int      # the first cores, which take one plane more
    planes_per_core: int   # planes of the other cores
    buffer_num: int        # 1 single, 2 double buffering of the slab queues

    @property
    def taps(self) -> int:
        return self.kh * self.kw

    @property
    def p8(self) -> int:
        """A slab's output positions, rounded up to 16 (its mask bits fill whole 32-byte
        blocks, which the DataCopyPad out reads)."""
        return round_up(self.rows * self.ow, 16)

    @property
    def mask_slot(self) -> int:
        """UB bytes of one tap's mask bits over a slab (32-byte aligned)."""
        return round_up(self.p8 * 2, 32)

    @property
    def row_slot(self) -> int:
        """UB bytes of one output row's mask words (backward: 32-byte aligned per row)."""
        return round_up(self.ow * 2, 32)

    @property
    def slabs(self) -> int:
        return ceil_div(self.oh, self.rows)


def pitch_of(pool) -> int:
    """Positions per padded tile row: W + 2 pw, or more where a ceil-mode window runs past."""
    return max(pool.hw[1] + 2 * pool.pad[1], (pool.out[1] - 1) * pool.stride[1] + pool.kernel[1])


def in_rows_of(pool, rows: int, backward: bool) -> int:
    """Padded input rows a slab of ``rows`` output rows needs; the backward's also hold the
    rows no window reaches below the last slab (written as zeros)."""
    kh, sh, ph = pool.kernel[0], pool.stride[0], pool.pad[0]
    need = (rows - 1) * sh + kh
    if not backward:
        return need
    last = (ceil_div(pool.out[0], rows) - 1) * rows * sh
    return max(need, rows * sh, ph + pool.hw[0] - last)


def ub_bytes(pool, rows: int, backward: bool, buffer_num: int) -> int:
    """UB the kernel asks for with slabs of ``rows`` (fp16 data, fp32 col2img)."""
    taps = pool.kernel[0] * pool.kernel[1]
    pitch = pitch_of(pool)
    tile = in_rows_of(pool, rows, backward) * pitch * C0
    p8 = round_up(rows * pool.out[1], 16) * C0
    if backward:   # grad, mask rows (x bn); sel, selF; col (fp32), out rows (fp16)
        rows_mask = taps * rows * round_up(pool.out[1] * 2, 32)
        ow = pool.out[1] * C0
        return (buffer_num * (p8 * 2 + rows_mask) + ow * 2 + ow * 4 + tile * 4
                + buffer_num * tile * 2 + 1024)
    # input tile (x bn); candidates; max, flags, taken, ones; eq bits; out, mask (x bn)
    slot = round_up(p8 // 8, 32)
    return (buffer_num * tile * 2 + taps * p8 * 2 + 4 * p8 * 2 + slot
            + buffer_num * (p8 * 2 + taps * slot) + 1024)


def _make(pool, rows: int, backward: bool, cores: int, buffer_num: int) -> MaskPoolTiling:
    planes = pool.planes
    return MaskPoolTiling(
        planes=planes, h=pool.hw[0], w=pool.hw[1], oh=pool.out[0], ow=pool.out[1],
        kh=pool.kernel[0], kw=pool.kernel[1], sh=pool.stride[0], sw=pool.stride[1],
        ph=pool.pad[0], pw=pool.pad[1], rows=rows, in_rows=in_rows_of(pool, rows, backward),
        pitch=pitch_of(pool),
        mask_words=(ceil_div(pool.out[0] * pool.out[1], C0) + 1) * C0,
        block_dim=cores, big_core_num=planes % cores, planes_per_core=planes // cores,
        buffer_num=buffer_num)


def mask_pool_tiling(chip, op: str, pool, backward: bool, overrides=None) -> MaskPoolTiling:
    """Slabs as tall as UB allows (double buffered), balanced over the plane's output rows."""
    overrides = overrides_of(overrides, op)
    for key in sorted(set(overrides) - {"rows", "buffer_num"}):
        raise TilingError(f"{op}: tiling {key} follows from the shape; override rows or "
                          "buffer_num")
    oh, ow = pool.out
    rows = max(1, min(oh, MAX_SLAB_POSITIONS // ow))
    while rows > 1 and ub_bytes(pool, rows, backward, 2) > chip.ub_bytes:
        rows -= 1
    if ub_bytes(pool, rows, backward, 2) > chip.ub_bytes:
        raise TilingError(f"{op}: one output row of {ow} positions does not fit "
                          f"{chip.name}'s UB ({chip.ub_bytes} bytes)")
    rows = ceil_div(oh, ceil_div(oh, rows))            # balance the slabs
    cores = max(1, min(chip.vector_core_count, pool.planes))
    t = _make(pool, rows, backward, cores, 2)
    if not overrides:
        return t
    t = override(t, overrides, op)
    if t.buffer_num not in (1, 2):
        raise TilingError(f"{op}: buffer_num = {t.buffer_num}: allowed 1 or 2")
    need = ub_bytes(pool, t.rows, backward, t.buffer_num) if t.rows > 0 else 0
    if not 0 < t.rows <= oh or need > chip.ub_bytes:
        raise TilingError(f"{op}: rows = {t.rows}: from 1 to {oh} output rows whose buffers fit "
                          f"{chip.name}'s UB ({chip.ub_bytes} bytes; asked {need})")
    return _make(pool, t.rows, backward, cores, t.buffer_num)
