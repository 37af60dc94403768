"""TransData's plans: a conversion cut into pieces (``Piece``, ``TransPlan``), each a strided
block of the source that becomes a strided block of the destination, with the Gather offset
tables that permute it; one plan maker per conversion the convolution needs (NCHW -> NC1HWC0,
the weight to FRACTAL_Z for dx, ND -> NCHW, NC1HWC0 -> NCHW, dw's workspace back to the
weight). The kernel that runs a plan is ``kernel.py``."""

from dataclasses import dataclass, field

import numpy as np

from npusim.ops.common import ceil_div, round_up
from npusim.ops.transdata.taps import dw_out_by_taps, weight_dx_by_taps

C0_B16 = 16       # 16-bit elements per 32-byte block: TransDataTo5HD's 16 x 16 transpose


@dataclass(frozen=True)
class Piece:
    """One block of a conversion: source geometry, destination geometry, its table."""

    src: int            # element offset of the first source row
    rows: int           # source rows
    row_len: int        # elements per source row
    row_stride: int     # elements between source rows
    dst: int            # element offset of the first destination run
    outer: int          # destination outer repeats
    outer_stride: int   # elements between outer repeats
    count: int          # runs per outer repeat
    count_stride: int   # elements between runs
    length: int         # elements per run
    table: int          # index of the offset table
    src_outer: int = 1          # source repeats of ``rows`` rows (one DataCopyPad each)
    src_outer_stride: int = 0   # elements between source repeats


@dataclass
class TransPlan:
    """A conversion cut into pieces with their Gather offset tables (uint32 byte offsets)."""

    name: str
    src_dtype: object
    dst_dtype: object
    in_elems: int                     # UB elements of one in tile (without the zero block)
    out_elems: int                    # UB elements of one out tile
    pieces: list = field(default_factory=list)
    tables: list = field(default_factory=list)
    keys: dict = field(default_factory=dict)
    vnchwconv: str = ""               # "to_5hd" / "from_nd": pieces move by TransDataTo5HD
    atomic: bool = False              # copies out add into GM (SetAtomicAdd)
    lanes: list | None = None         # per core its pieces, in order (None: round robin)
    serial: bool = False              # one UB buffer: a piece comes in after the last is out

    def table(self, key, build) -> int:
        """The index of the table for ``key``; ``build()`` makes it the first time."""
        if key not in self.keys:
            self.keys[key] = len(self.tables)
            self.tables.append(np.asarray(build(), np.uint32))
        return self.keys[key]

    def add(self, *geometry, table: int, src_outer: int = 1, src_outer_stride: int = 0) -> None:
        """Append a Piece; its table is padded (offset 0) to the elements the Gather writes."""
        piece = Piece(*geometry, table, src_outer, src_outer_stride)
        need = piece.outer * piece.count * self.out_pitch(piece.length)
        have = self.tables[table]
        if have.size < need:
            self.tables[table] = np.concatenate([have, np.zeros(need - have.size, np.uint32)])
        self.pieces.append(piece)

    @property
    def in_item(self) -> int:
        return np.dtype(self.src_dtype).itemsize

    @property
    def out_item(self) -> int:
        return np.dtype(self.dst_dtype).itemsize

    def in_pitch(self, row_len: int) -> int:
        return round_up(row_len, 32 // self.in_item)

    def out_pitch(self, length: int) -> int:
        return round_up(length, 32 // min(self.in_item, self.out_item))

    def offsets(self, rows: int, row_len: int, src_rc) -> np.ndarray:
        """Byte offsets into the in tile for (row, col) arrays; -1 entries read the zero block."""
        r, c = src_rc
        pitch = self.in_pitch(row_len)
        zero = rows * pitch * self.in_item
        return np.where(r >= 0, (r * pitch + c) * self.in_item, zero)


def ub_split(chip, src_dtype, dst_dtype) -> tuple[int, int]:
    """(in tile elements, out tile elements) that fit UB with double buffering and a table."""
    si, di = np.dtype(src_dtype).itemsize, np.dtype(dst_dtype).itemsize
    cast = si != di
    per = 2 * si + 2 * di + 4 + (si if cast else 0)
    elems = (chip.ub_bytes - 1024) // per // 256 * 256
    return elems, elems


def chunks(total: int, step: int):
    """(start, length) of consecutive chunks of ``step`` covering ``total``."""
    step = max(1, step)
    return [(s, min(step, total - s)) for s in range(0, total, step)]


def plan_to_5hd(chip, name, shape, groups, c0, src_dtype, dst_dtype,
                per_group=None) -> TransPlan:
    """(N, C, D, H, W) -> (N, G, D, C1, H*W, C0), each group's ``per_group`` channels (C/G
    unless given: an enlarged dw group's, the last of which may run past C) padded to C0;
    blocks wholly past C are not written (GM starts zeroed)."""
    n, c, d, h, w = shape
    cg, hw = per_group or c // groups, h * w
    c1 = ceil_div(cg, c0)
    in_e, out_e = ub_split(chip, src_dtype, dst_dtype)
    plan = TransPlan(name, src_dtype, dst_dtype, in_e, out_e)
    step = min(hw, out_e // c0, in_e // c0 // 16 * 16 or 16)
    if (plan.in_item == plan.out_item == 2 and c0 == C0_B16
            and C0_B16 * plan.in_pitch(step) <= in_e):
        plan.vnchwconv = "to_5hd"
    for ni in range(n):
        for g in range(groups):
            for di in range(d):
                for k in range(c1):
                    rows = min(c0, cg - k * c0, c - g * cg - k * c0)
                    if rows <= 0:
                        break
                    src0 = ((ni * c + g * cg + k * c0) * d + di) * hw
                    dst0 = (((ni * groups + g) * d + di) * c1 + k) * hw * c0
                    for p0, ln in chunks(hw, step):
                        geometry = (src0 + p0, rows, ln, d * hw, dst0 + p0 * c0, 1, 0, 1, 0,
                                    ln * c0)
                        if plan.vnchwconv:
                            plan.pieces.append(Piece(*geometry, table=-1))
                            continue
                        tab = plan.table(("5hd", rows, ln), lambda r=rows, m=ln: plan.offsets(
                            r, m, _to_5hd_rc(r, m, c0)))
                        plan.add(*geometry, table=tab)
    return plan


def _to_5hd_rc(rows: int, length: int, c0: int):
    j = np.arange(length * c0)
    r, col = j % c0, j // c0
    return np.where(r < rows, r, -1), col


def plan_weight_dx(chip, name, w_shape, groups, kc, nc, transposed, k0, src_dtype,
                   dst_dtype) -> TransPlan:
    """The weight -> dx's B matrix [G][kD][Kc1][kH*kW][Nc1][16][k0] (rotated when not
    transposed), K = gradOutput channels, N = input channels of the group."""
    kd, kh, kw = w_shape[2:]
    khw, kvol = kh * kw, kd * kh * kw
    k1, n1 = ceil_div(kc, k0), ceil_div(nc, 16)
    in_e, out_e = ub_split(chip, src_dtype, dst_dtype)
    plan = TransPlan(name, src_dtype, dst_dtype, in_e, out_e)
    frac = 16 * k0
    step1 = min(n1, out_e // (kvol * frac), in_e // (k0 * kvol * 16))
    if transposed:
        step1 = min(step1, in_e // (16 * round_up(k0 * kvol, 16)))
    if step1 < 1:   # one block of all taps does not fit UB: cut the taps
        weight_dx_by_taps(plan, w_shape, groups, kc, nc, transposed, k0)
        return plan
    for g in range(groups):
        for a in range(k1):
            krows = min(k0, kc - a * k0)
            for b0, bl in chunks(n1, step1):
                ncols = min(bl * 16, nc - b0 * 16)
                dst0 = ((g * kd * k1 + a) * khw * n1 + b0) * frac
                key = ("wdx", transposed, krows, ncols, bl, w_shape[2:])
                if transposed:   # rows = input channels, each [kc, kD, kH, kW]
                    src0 = ((g * nc + b0 * 16) * kc + a * k0) * kvol
                    geo = (ncols, krows * kvol, kc * kvol)
                else:            # rows = gradOutput channels, each [nc, kD, kH, kW]
                    src0 = ((g * kc + a * k0) * nc + b0 * 16) * kvol
                    geo = (krows, ncols * kvol, nc * kvol)
                tab = plan.table(key, lambda k=krows, m=ncols, bl=bl, geo=geo: plan.offsets(
                    geo[0], geo[1], _weight_dx_rc(k, m, bl, k0, (kd, kh, kw), transposed)))
                plan.add(src0, *geo, dst0, kd, k1 * khw * n1 * frac, khw, n1 * frac,
                         bl * frac, table=tab)
    return plan


def _weight_dx_rc(krows, ncols, blocks, k0, kdhw, transposed):
    kd, kh, kw = kdhw
    khw, kvol = kh * kw, kd * kh * kw
    d, t, j = np.meshgrid(np.arange(kd), np.arange(khw), np.arange(blocks * 16 * k0),
                          indexing="ij")
    cn = (j // (16 * k0)) * 16 + (j // k0) % 16
    ck = j % k0
    valid = (cn < ncols) & (ck < krows)
    if transposed:
        row, col = cn, ck * kvol + d * khw + t
    else:
        rot = (kh - 1 - t // kw) * kw + (kw - 1 - t % kw)
        row, col = ck, cn * kvol + d * khw + rot
    return np.where(valid, row, -1).ravel(), np.where(valid, col, 0).ravel()


def plan_from_nd(chip, name, src_shape, dst_channels, groups, src_dtype, dst_dtype):
    """dx's (N, G, D, H*W, Nc16) -> (N, C, D, H, W), dropping the padding channels."""
    n, g_, d, hw, nc16 = src_shape
    cg = dst_channels // groups
    in_e, out_e = ub_split(chip, src_dtype, dst_dtype)
    plan = TransPlan(name, src_dtype, dst_dtype, in_e, out_e)
    cstep = min(round_up(cg, 16), 256)
    lim = max(16, min(in_e // round_up(cstep, 16), out_e // cstep) // 16 * 16)
    pstep = hw if hw <= lim else lim
    if (plan.in_item == plan.out_item == 2
            and round_up(cstep, 16) * round_up(pstep, 16) <= min(in_e, out_e)):
        plan.vnchwconv = "from_nd"
    for ni in range(n):
        for g in range(groups):
            for di in range(d):
                base = ((ni * groups + g) * d + di) * hw * nc16
                for c0_, cl in chunks(cg, cstep):
                    for p0, pl in chunks(hw, pstep):
                        dst0 = ((ni * dst_channels + g * cg + c0_) * d + di) * hw + p0
                        geometry = (base + p0 * nc16 + c0_, pl, cl, nc16, dst0, 1, 0, cl,
                                    d * hw, pl)
                        if plan.vnchwconv:
                            plan.pieces.append(Piece(*geometry, table=-1))
                            continue
                        tab = plan.table(("nd", pl, cl), lambda p=pl, c=cl: plan.offsets(
                            p, c, _from_nd_rc(p, c, plan.out_pitch(p))))
                        plan.add(*geometry, table=tab)
    return plan


def plan_from_5hd(chip, name, src_shape, dst_channels, src_dtype, dst_dtype) -> TransPlan:
    """(N, D, C1, H*W, C0) -> (N, C, D, H, W), dropping the padding channels: per C0 block and
    chunk of positions, the positions' rows of the block's real channels become channel rows
    (TransDataTo5HD for 16-bit data, else a Gather), as ``plan_from_nd`` does for one block."""
    n, d, c1, hw, c0 = src_shape
    in_e, out_e = ub_split(chip, src_dtype, dst_dtype)
    plan = TransPlan(name, src_dtype, dst_dtype, in_e, out_e)
    lim = max(16, min(in_e // round_up(c0, 16), out_e // c0) // 16 * 16)
    pstep = hw if hw <= lim else lim
    if (plan.in_item == plan.out_item == 2
            and round_up(c0, 16) * round_up(pstep, 16) <= min(in_e, out_e)):
        plan.vnchwconv = "from_nd"
    for ni in range(n):
        for di in range(d):
            for k in range(c1):
                cl = min(c0, dst_channels - k * c0)
                base = ((ni * d + di) * c1 + k) * hw * c0
                for p0, pl in chunks(hw, pstep):
                    dst0 = ((ni * dst_channels + k * c0) * d + di) * hw + p0
                    geometry = (base + p0 * c0, pl, cl, c0, dst0, 1, 0, cl, d * hw, pl)
                    if plan.vnchwconv:
                        plan.pieces.append(Piece(*geometry, table=-1))
                        continue
                    tab = plan.table(("nd", pl, cl), lambda p=pl, c=cl: plan.offsets(
                        p, c, _from_nd_rc(p, c, plan.out_pitch(p))))
                    plan.add(*geometry, table=tab)
    return plan


def _from_nd_rc(positions, channels, pitch):
    j = np.arange(channels * pitch)
    c, p = j // pitch, j % pitch
    return np.where(p < positions, p, -1), c


def plan_dw_out(chip, name, ws_shape, w_shape, groups, c0, src_dtype, dst_dtype,
                enlarge=1) -> TransPlan:
    """dw's (G', kD, Mr, Fc1*kH*kW*C0) fp32 -> the weight's (G*gc, fc, kD, kH, kW) dtype.
    G' = ceil(G / ``enlarge``): real group g is diagonal block g % enlarge of enlarged group
    g // enlarge, its rows from (g % enlarge)·gc and its channels from (g % enlarge)·fc (the
    other blocks, products across groups, are dropped)."""
    _, kd, mr, ncols = ws_shape
    gc, fc = w_shape[0] // groups, w_shape[1]
    khw = w_shape[3] * w_shape[4]
    f1 = ceil_div(fc, c0)
    in_e, out_e = ub_split(chip, src_dtype, dst_dtype)
    plan = TransPlan(name, src_dtype, dst_dtype, in_e, out_e)
    nch1 = min(c0, fc)
    row1 = plan.out_pitch(nch1 * khw) if kd == 1 else plan.out_pitch(khw) * nch1
    blocks1 = 2 if enlarge > 1 else 1   # an enlarged group's channels may straddle a block
    if in_e < plan.in_pitch(blocks1 * khw * c0) or out_e < row1:   # a row of one channel
        dw_out_by_taps(plan, ws_shape, w_shape, groups, c0, enlarge)   # block's taps does
        return plan                                                    # not fit UB: cut them
    fstep = max(1, min(f1, in_e // (khw * c0) // 16))
    for g in range(groups):
        ge, jj = divmod(g, enlarge)
        for z in range(kd):
            for f0, fl in chunks(f1, fstep):
                _dw_out_pieces(plan, (ge, z, f0, fl), (jj * gc, jj * fc),
                               (kd, khw, mr, ncols, gc, fc), c0, g * gc)
    return plan


def _dw_out_pieces(plan, at, offsets, dims, c0, dst_row) -> None:
    """The pieces of one (enlarged group, kd, channel chunk): ``fl`` blocks of the weight's
    channels, all its rows, read from the diagonal block at (row, channel) ``offsets``."""
    ge, z, f0, fl = at
    kd, khw, mr, ncols, gc, fc = dims
    kvol = kd * khw
    row_off, coff = offsets
    lane = coff % c0
    nch = min(fl * c0, fc - f0 * c0)
    blocks = ceil_div(lane + nch, c0)   # source channel blocks the chunk reads
    run_len = nch * khw if kd == 1 else khw
    per_row = plan.out_pitch(run_len) * (1 if kd == 1 else nch)
    mstep = max(1, min(gc, plan.out_elems // per_row,
                       plan.in_elems // plan.in_pitch(blocks * khw * c0)))
    for m0, ml in chunks(gc, mstep):
        src0 = ((ge * kd + z) * mr + row_off + m0) * ncols + (coff // c0 + f0) * khw * c0
        dst0 = (dst_row + m0) * fc * kvol + f0 * c0 * kvol + z * khw
        key = ("dw", ml, nch, blocks, khw, kd == 1, lane)
        tab = plan.table(key, lambda m=ml, c=nch, b=blocks, one=kd == 1: plan.offsets(
            m, b * khw * c0, _dw_rc(m, c, khw, c0, one, plan, lane)))
        if kd == 1:
            geo = (ml, fc * kvol, 1, 0, run_len)
        else:
            geo = (ml, fc * kvol, nch, kvol, khw)
        plan.add(src0, ml, blocks * khw * c0, ncols, dst0, *geo, table=tab)


def _dw_rc(rows, nch, khw, c0, merged, plan, lane=0):
    if merged:
        pitch = plan.out_pitch(nch * khw)
        m, j = np.divmod(np.arange(rows * pitch), pitch)
        c, t = j // khw, j % khw
        valid = j < nch * khw
    else:
        pitch = plan.out_pitch(khw)
        m, rest = np.divmod(np.arange(rows * nch * pitch), nch * pitch)
        c, t = rest // pitch, rest % pitch
        valid = t < khw
    c = c + lane
    col = (c // c0) * khw * c0 + t * c0 + c % c0
    return np.where(valid, m, -1), np.where(valid, col, 0)
