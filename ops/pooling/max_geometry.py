"""Host tiling and tables of the max-pool kernels (``max_pool.py``, ``max_pool_backward.py``).

The kernels work plane by plane (N x C planes split over the vector cores, the first cores one
more) and in *slabs* of rows. Forward: a slab is ``rows`` output rows; its input rows, from
(first output row) x sh - ph on, land in UB ``pitch`` elements apart (rows outside the input are
filled with -inf), so every slab reads its candidates at the same UB offsets: one Gather offset
table per kernel tap (kh, kw), built here once, with a -inf block for the columns in the padding.
Backward: a slab is ``rows`` input rows (a multiple of sh); the gradOutput and indices rows that
reach it land in UB ``pitch`` elements apart, and one Gather table per tap gives, for every input
position of the slab, the output position whose window has it at that tap (or a block of grad 0
and index -1).
"""

from dataclasses import dataclass

import numpy as np

from npusim.errors import TilingError
from npusim.ops.common import ceil_div, override, overrides_of, round_up

MAX_SLAB = 2048          # elements of one slab's results (output or input positions)
F32 = np.float32


@dataclass(frozen=True, kw_only=True)
class MaxPoolTiling:
    """Users may override ``rows`` and ``buffer_num``; the rest follows from the shape."""

    planes: int            # N x C
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
    rows: int              # rows per slab: output rows (forward) or input rows (backward)
    slab_rows: int         # rows the slab reads: input rows (forward), gradOutput rows (back)
    first_row: int         # backward: first gradOutput row of slab j is j x rows / sh + this
    pitch: int             # UB elements between the rows the slab reads
    block_dim: int         # vector cores used
    big_core_num: int      # the first cores, which take one plane more
    planes_per_core: int   # planes of the other cores
    buffer_num: int        # 1 single, 2 double buffering of the slab queues

    @property
    def taps(self) -> int:
        return self.kh * self.kw


def slab_count(t: MaxPoolTiling, backward: bool) -> int:
    return ceil_div(t.h if backward else t.oh, t.rows)


def results(t: MaxPoolTiling, backward: bool) -> int:
    """Positions one slab computes: rows x W (backward) or rows x OW (forward)."""
    return t.rows * (t.w if backward else t.ow)


def _geometry(pool, rows: int, backward: bool, item: int) -> dict:
    kh, sh, ph = pool.kernel[0], pool.stride[0], pool.pad[0]
    if backward:
        first = (ph - kh + 1) // sh
        slab_rows = (rows - 1 + ph) // sh - first + 1
        pitch = round_up(pool.out[1], 8)
    else:
        first, slab_rows = 0, (rows - 1) * sh + kh
        pitch = round_up(pool.hw[1], 32 // item)
    return dict(slab_rows=slab_rows, first_row=first, pitch=pitch)


def ub_bytes(pool, rows: int, backward: bool, item: int, buffer_num: int) -> int:
    """UB the kernel asks for with slabs of ``rows``."""
    g = _geometry(pool, rows, backward, item)
    n = round_up(rows * (pool.hw[1] if backward else pool.out[1]), 8)
    taps = pool.kernel[0] * pool.kernel[1]
    tile = g["slab_rows"] * g["pitch"] + 32 // item
    if backward:   # grad, indices tiles; idx fp32, positions, pos_k, c_k; tables; G; out
        return (2 * buffer_num * tile * 4 + 4 * tile * 4 + taps * n * 4 + n * 4
                + buffer_num * n * 4 + tile // 8 + 1024)
    # input tile; tables; rel, hs, ws; cand(f32), cur, idx, ci, t; out, idx out
    return (buffer_num * tile * item + taps * n * 4 + 3 * n * 4 + 5 * n * 4
            + buffer_num * n * (item + 4) + n // 8 + 1024)


def max_pool_tiling(chip, op: str, pool, dtype, backward: bool, overrides=None):
    overrides = overrides_of(overrides, op)
    item = np.dtype(dtype).itemsize
    sh = pool.stride[0]
    unit = sh if backward else 1
    total = pool.hw[0] if backward else pool.out[0]
    width = pool.hw[1] if backward else pool.out[1]
    rows = max(unit, min(round_up(total, unit), MAX_SLAB // width // unit * unit))
    while rows > unit and ub_bytes(pool, rows, backward, item, 2) > chip.ub_bytes:
        rows -= unit
    slabs = ceil_div(total, rows)
    rows = round_up(ceil_div(total, slabs), unit)      # balance the slabs
    cores = max(1, min(chip.vector_core_count, pool.planes))
    t = MaxPoolTiling(planes=pool.planes, h=pool.hw[0], w=pool.hw[1], oh=pool.out[0],
                      ow=pool.out[1], kh=pool.kernel[0], kw=pool.kernel[1], sh=sh,
                      sw=pool.stride[1], ph=pool.pad[0], pw=pool.pad[1], rows=rows,
                      **_geometry(pool, rows, backward, item), block_dim=cores,
                      big_core_num=pool.planes % cores, planes_per_core=pool.planes // cores,
                      buffer_num=2)
    if ub_bytes(pool, rows, backward, item, 2) > chip.ub_bytes:
        raise TilingError(f"{op}: a slab of {rows} rows of {width} does not fit "
                          f"{chip.name}'s UB ({chip.ub_bytes} bytes)")
    if not overrides:
        return t
    for key in sorted(set(overrides) - {"rows", "buffer_num"}):
        raise TilingError(f"{op}: tiling {key} follows from the shape; override rows or "
                          "buffer_num")
    t = override(t, overrides, op)
    if t.buffer_num not in (1, 2):
        raise TilingError(f"{op}: buffer_num = {t.buffer_num}: allowed 1 or 2")
    need = ub_bytes(pool, t.rows, backward, item, t.buffer_num) if t.rows > 0 else 0
    if t.rows <= 0 or t.rows % unit or need > chip.ub_bytes:
        raise TilingError(f"{op}: rows = {t.rows}: a positive multiple of {unit} whose "
                          f"buffers fit {chip.name}'s UB ({chip.ub_bytes} bytes; asked {need})")
    return override(t, _geometry(pool, t.rows, backward, item), op)


def forward_tables(t: MaxPoolTiling, item: int) -> tuple:
    """(offsets uint32 [taps, n8], floats fp32 [3, n8]): per tap the byte offset of each
    output's candidate in the slab tile (the -inf block for padding columns); rel = the index of
    tap (0, 0) relative to the slab, hs = its row relative to the slab, ws = max(its column, 0)."""
    n = results(t, False)
    n8 = round_up(n, 8)
    r, ow = np.divmod(np.arange(n), t.ow)
    neg = t.slab_rows * t.pitch * item
    offs = np.zeros((t.taps, n8), np.uint32)
    for a in range(t.kh):
        for b in range(t.kw):
            iw = ow * t.sw - t.pw + b
            ok = (iw >= 0) & (iw < t.w)
            offs[a * t.kw + b, :n] = np.where(ok, ((r * t.sh + a) * t.pitch + iw) * item, neg)
    floats = np.zeros((3, n8), F32)
    floats[0, :n] = (r * t.sh - t.ph) * t.w + ow * t.sw - t.pw
    floats[1, :n] = r * t.sh - t.ph
    floats[2, :n] = np.maximum(ow * t.sw - t.pw, 0)
    return offs.reshape(-1), floats.reshape(-1)


def backward_tables(t: MaxPoolTiling) -> tuple:
    """(offsets uint32 [taps, n8], positions fp32): per tap, for every input position of the
    slab, the byte offset in the gradOutput tile of the output whose window has it at that tap,
    else the block of grad 0 and index -1; positions = per gradOutput tile element the index
    of its window's tap (0, 0) relative to the slab's first gradOutput row (orow x sh x W +
    ocol x sw; the tap and the slab add a constant)."""
    n = results(t, True)
    n8 = round_up(n, 8)
    r, iw = np.divmod(np.arange(n), t.w)
    dead = t.slab_rows * t.pitch * 4
    offs = np.zeros((t.taps, n8), np.uint32)
    for a in range(t.kh):
        for b in range(t.kw):
            hr, wr = r + t.ph - a, iw + t.pw - b
            orow, ocol = hr // t.sh - t.first_row, wr // t.sw
            ok = ((hr % t.sh == 0) & (wr % t.sw == 0) & (orow >= 0) & (orow < t.slab_rows)
                  & (ocol >= 0) & (ocol < t.ow))
            offs[a * t.kw + b, :n] = np.where(ok, (orow * t.pitch + ocol) * 4, dead)
    tile = t.slab_rows * t.pitch + 8
    orow, ocol = np.divmod(np.arange(tile), t.pitch)
    positions = (orow * t.sh * t.w + ocol * t.sw).astype(F32)
    return offs.reshape(-1), positions
