"""TransData pieces cut along the kernel taps, for weights whose taps do not fit UB at once.

``plan_weight_dx`` and ``plan_dw_out`` (``ops/transdata/kernel.py``) move all kD·kH·kW taps of a
channel block in one piece; from about 8 x 8 taps on (fp16; fewer for fp32) one such piece
and its Gather offset table no longer fit UB. These builders cut the taps into chunks of
``tl`` consecutive taps (one kd at a time) so that the in tile, the out tile and the table
each fit the UB split of ``ub_split``, whatever the kernel size: the pieces move the same
elements to the same places, only in more, smaller pieces (more DataCopyPad bursts, more
Gathers). The source rows of a dx weight piece are (K channel, N channel) pairs, two strides,
so such a piece reads ``src_outer`` strided blocks of rows.
"""

import numpy as np

from npusim.ops.common import ceil_div


def tap_chunk(fits, most: int) -> int:
    """The largest tap count in 1..most that ``fits`` accepts (1 if none does)."""
    lo, hi = 1, most
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def weight_dx_by_taps(plan, w_shape, groups, kc, nc, transposed, k0) -> None:
    """dx's B matrix [G][kD][Kc1][kH*kW][Nc1][16][k0] one N fractal column and ``tl`` taps
    per piece (rotated taps read backwards when not transposed)."""
    kd, kh, kw = w_shape[2:]
    khw = kh * kw
    k1, n1 = ceil_div(kc, k0), ceil_div(nc, 16)
    frac = 16 * k0
    tl = tap_chunk(lambda t: t * frac <= plan.out_elems
                   and k0 * 16 * plan.in_pitch(t) <= plan.in_elems, khw)
    for g in range(groups):
        for d in range(kd):
            for a in range(k1):
                krows = min(k0, kc - a * k0)
                for b in range(n1):
                    ncols = min(16, nc - b * 16)
                    for t0 in range(0, khw, tl):
                        _weight_piece(plan, (g, d, a, b, t0, min(tl, khw - t0)), krows, ncols,
                                      (kd, khw, k1, n1, kc, nc), transposed, k0)


def _weight_piece(plan, at, krows, ncols, dims, transposed, k0) -> None:
    g, d, a, b, t0, tl = at
    kd, khw, k1, n1, kc, nc = dims
    kvol, frac = kd * khw, 16 * k0
    if transposed:   # source rows: input channel cn (outer), then gradOutput channel ck
        src0 = ((g * nc + b * 16) * kc + a * k0) * kvol + d * khw + t0
        outer, rows, outer_stride = ncols, krows, kc * kvol
    else:            # source rows: gradOutput channel ck (outer), then input channel cn
        src0 = ((g * kc + a * k0) * nc + b * 16) * kvol + d * khw + khw - t0 - tl
        outer, rows, outer_stride = krows, ncols, nc * kvol
    dst0 = (((g * kd + d) * k1 + a) * khw + t0) * n1 * frac + b * frac
    key = ("wdx-taps", transposed, krows, ncols, tl)
    tab = plan.table(key, lambda: plan.offsets(outer * rows, tl, _weight_taps_rc(
        krows, ncols, tl, k0, transposed)))
    plan.add(src0, rows, tl, kvol, dst0, 1, 0, tl, n1 * frac, frac, table=tab,
             src_outer=outer, src_outer_stride=outer_stride)


def _weight_taps_rc(krows, ncols, tl, k0, transposed):
    j = np.arange(tl * 16 * k0)
    t, r = j // (16 * k0), j % (16 * k0)
    cn, ck = r // k0, r % k0
    valid = (cn < ncols) & (ck < krows)
    if transposed:
        row, col = cn * krows + ck, t
    else:
        row, col = ck * ncols + cn, tl - 1 - t
    return np.where(valid, row, -1), np.where(valid, col, 0)


def dw_out_by_taps(plan, ws_shape, w_shape, groups, c0, enlarge=1) -> None:
    """dw's (G', kD, Mr, Fc1*kH*kW*C0) fp32 -> (G*gc, fc, kD, kH, kW): per piece ``ml`` rows,
    the channels of one weight block inside one source block, and ``tl`` taps (enlarged
    groups as in ``plan_dw_out``)."""
    _, kd, mr, ncols = ws_shape
    gc, fc = w_shape[0] // groups, w_shape[1]
    khw = w_shape[3] * w_shape[4]
    tl = tap_chunk(lambda t: plan.in_pitch(t * c0) <= plan.in_elems
                   and c0 * plan.out_pitch(t) <= plan.out_elems, khw)
    for g in range(groups):
        ge, jj = divmod(g, enlarge)
        for z in range(kd):
            for f0, nch, src_ch in channel_runs(fc, jj * fc, c0):
                for t0 in range(0, khw, tl):
                    tn = min(tl, khw - t0)
                    ml = max(1, min(gc, plan.in_elems // plan.in_pitch(tn * c0),
                                    plan.out_elems // (nch * plan.out_pitch(tn))))
                    for m0 in range(0, gc, ml):
                        _dw_piece(plan, (ge, z, t0, m0), (g * gc, f0, jj * gc, src_ch),
                                  (min(ml, gc - m0), nch, tn), (kd, khw, mr, ncols, fc), c0)


def channel_runs(fc: int, src_off: int, c0: int, dst_off: int = 0):
    """(first channel, channels, first source channel) of the runs of ``fc`` channels read
    from source channel ``src_off`` on and written from ``dst_off`` on, each run inside one
    C0 block of both."""
    out, f = [], 0
    while f < fc:
        n = min(fc - f, c0 - (dst_off + f) % c0, c0 - (src_off + f) % c0)
        out.append((f, n, src_off + f))
        f += n
    return out


def _dw_piece(plan, at, origin, size, dims, c0) -> None:
    ge, z, t0, m0 = at
    dst_row, f0, row_off, src_ch = origin
    ml, nch, tl = size
    kd, khw, mr, ncols, fc = dims
    kvol = kd * khw
    lane = src_ch % c0
    src0 = ((ge * kd + z) * mr + row_off + m0) * ncols + ((src_ch // c0) * khw + t0) * c0
    dst0 = (dst_row + m0) * fc * kvol + f0 * kvol + z * khw + t0
    tab = plan.table(("dw-taps", ml, nch, tl, lane), lambda: plan.offsets(
        ml, tl * c0, _dw_taps_rc(ml, nch, tl, c0, plan.out_pitch(tl), lane)))
    plan.add(src0, ml, tl * c0, ncols, dst0, ml, fc * kvol, nch, kvol, tl, table=tab)


def _dw_taps_rc(rows, nch, tl, c0, pitch, lane=0):
    m, rest = np.divmod(np.arange(rows * nch * pitch), nch * pitch)
    c, t = rest // pitch, rest % pitch
    valid = t < tl
    return np.where(valid, m, -1), np.where(valid, t * c0 + lane + c, 0)
