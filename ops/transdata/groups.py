"""TransData of a grouped gradWeight: the fractal of each group's diagonal block into one
fractal of all the groups' channels, as CANN converts a grouped FRACTAL_Z_3D before the
conversion to the weight's NCDHW layout.

aclnn converts a grouped weight gradient in two TransData steps, FRACTAL_Z_3D with groups to
FRACTAL_Z_3D without, then to NCDHW (hicann/ops-math conversion/trans_data op_api
``TransDataFzWithGroup``). The TBE ``trans_data_groups`` kernel of the first step declares its
output atomic, so the runtime zeroes it with a MemSet first: with groups the measured chain has
two kernels more (``conv3d-backprop-filter-910b2.csv``: TransData x4 + MemSet x2 against x3 and
x1). The dw workspace here is (G', kD, Mr, Fc1·kH·kW·C0) on enlarged groups
(``ops/convolution/geometry.group_enlarge``); the ungrouped fractal is (kD, round(G·gc, C0),
ceil(G·fc / C0)·kH·kW·C0): real group g's gc rows from g·gc, its fc channels from g·fc.

Modelled: the pieces (a run of channels inside one C0 block of source and destination, all taps or a
chunk of them, up to a UB of rows) added atomically into the zeroed fractal, on the TBE kernel's
schedule (CANN 8.1.RC1 ``impl/dynamic/trans_data_groups.py``, FZG -> FZ modes): one UB buffer, so
each pass copies in, reorders and copies out before the next comes in; the cores split one axis of
its loop nest (enlarged groups, kD, channel blocks, taps, rows) and each core runs the rest of it,
the real groups of an enlarged group one after another (its ``e`` loop sits inside the group loop
whatever the axis). The axis is chosen by the rule of the TIK TransData tilings whose code is public
(``ops/transdata/tik_split.py``); this kernel's own tiling is closed, so that choice is assumed. Not
modelled: its vnchwconv round trip for a group whose channels do not start a C0 block (npusim's
Gather with an offset table stands for it).
"""

import numpy as np

from npusim.ops.common import ceil_div, round_up
from npusim.ops.transdata.plan import TransPlan, chunks, ub_split
from npusim.ops.transdata.taps import channel_runs, tap_chunk
from npusim.ops.transdata.tik_split import tik_lanes


def ungrouped_shape(w_shape, groups: int, c0: int) -> tuple:
    """(kD, rows, columns) of the fractal of all ``groups`` groups' channels."""
    khw = w_shape[3] * w_shape[4]
    gc, fc = w_shape[0] // groups, w_shape[1]
    return (w_shape[2], round_up(groups * gc, c0), ceil_div(groups * fc, c0) * khw * c0)


def plan_dw_groups(chip, name, ws_shape, w_shape, groups, c0, enlarge) -> TransPlan:
    """dw's enlarged-group fractal ``ws_shape`` -> the ungrouped fractal (fp32 both)."""
    f32 = np.dtype("float32")
    in_e, out_e = ub_split(chip, f32, f32)
    plan = TransPlan(name, f32, f32, in_e, out_e, atomic=True, serial=True)
    khw = w_shape[3] * w_shape[4]
    gc, fc = w_shape[0] // groups, w_shape[1]
    u_shape = ungrouped_shape(w_shape, groups, c0)
    tl = tap_chunk(lambda t: plan.in_pitch(t * c0) <= in_e and t * c0 <= out_e, khw)
    units = []   # per piece its unit on each axis the cores may split: (G', kD, C1, taps, rows)
    for g in range(groups):
        ge, jj = divmod(g, enlarge)
        for f, nch, src_ch in channel_runs(fc, jj * fc, c0, g * fc):
            for ti, (t0, tn) in enumerate(chunks(khw, tl)):
                units += _group_pieces(plan, (ws_shape, u_shape, khw, c0), (ge, jj * gc, src_ch),
                                       (g * gc, g * fc + f), (nch, t0, tn, gc),
                                       (ge, (g * fc + f) // c0 - g * fc // c0, ti))
    plan.lanes = tik_lanes(units, chip.vector_core_count)
    return plan


def _group_pieces(plan, shapes, src, dst, size, unit) -> list:
    """Per kd, ``gc`` rows in chunks: ``nch`` channels of taps t0 .. t0+tn from the source
    block at (enlarged group, row, channel) ``src`` to (row, channel) ``dst``; the pieces'
    units on the split axes, (group, channel block, tap chunk) ``unit`` with kd and row chunk."""
    ws_shape, (_, rows_u, cols_u), khw, c0 = shapes
    _, kd, mr, ncols = ws_shape
    ge, row_s, ch_s = src
    row_d, ch_d = dst
    nch, t0, tn, gc = size
    lane = ch_s % c0
    mstep = max(1, min(gc, plan.in_elems // plan.in_pitch(tn * c0),
                       plan.out_elems // (tn * plan.out_pitch(nch))))
    ge_u, c1_u, t_u = unit
    units = []
    for z in range(kd):
        for mi, (m0, ml) in enumerate(chunks(gc, mstep)):
            units.append((ge_u, z, c1_u, t_u, mi))
            src0 = ((ge * kd + z) * mr + row_s + m0) * ncols + ((ch_s // c0) * khw + t0) * c0
            dst0 = ((z * rows_u + row_d + m0) * cols_u + ((ch_d // c0) * khw + t0) * c0
                    + ch_d % c0)
            tab = plan.table(("groups", ml, nch, tn, lane), lambda m=ml: plan.offsets(
                m, tn * c0, _groups_rc(m, nch, tn, plan.out_pitch(nch), lane, c0)))
            plan.add(src0, ml, tn * c0, ncols, dst0, ml, cols_u, tn, c0, nch, table=tab)
    return units


def _groups_rc(rows, nch, taps, pitch, lane, c0):
    """(row, column) in the in tile of each gathered element: per row, per tap, ``nch``
    channels from ``lane`` on (``pitch`` slots, the rest padding)."""
    m, rest = np.divmod(np.arange(rows * taps * pitch), taps * pitch)
    t, c = rest // pitch, rest % pitch
    valid = c < nch
    return np.where(valid, m, -1), np.where(valid, t * c0 + lane + c, 0)
