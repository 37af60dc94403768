"""A convolution tiling's checks: every field in range, the blocks within L0 and the chunks
within L1 and UB, the relay and Load3D limits; a field the user set that cannot work is named
in the TilingError."""

from npusim.errors import TilingError
from npusim.ops.common import ceil_div
from npusim.ops.convolution.args import OP
from npusim.ops.convolution.chunks import (
    LOAD3D_MAX_FILTER,
    LOAD3D_MAX_PAD,
    dw_block_rows,
    dw_cols_out,
    dw_relay,
    dx_relay,
    dx_zero_fill,
    pads,
)
from npusim.ops.convolution.relay import LOAD3D_MAX_STRIDE, pads_of, relayable
from npusim.ops.convolution.tiling_fit import (
    dw_kh_top,
    dw_l1_bytes,
    dx_l1_bytes,
    dx_l1_total,
    dx_ub_fits,
    dx_ub_free,
    kh_top,
)


def _require(ok: bool, what: str) -> None:
    if not ok:
        raise TilingError(f"{OP}: {what}")


def validate_blocks(t, c0) -> None:
    """The fields the derivation divides by, and the counts that must be positive."""
    _require(t.base_m > 0 and t.base_m % 16 == 0, f"base_m = {t.base_m}: a positive multiple "
             "of 16")
    _require(t.base_n > 0 and t.base_n % 16 == 0, f"base_n = {t.base_n}: a positive multiple "
             "of 16")
    _require(t.base_k > 0 and t.base_k % c0 == 0, f"base_k = {t.base_k}: a positive multiple "
             f"of C0 = {c0}")
    _require(t.l1_buffers in (1, 2) and t.l0_buffers in (1, 2), "l1_buffers and l0_buffers: "
             "allowed 1 or 2")
    _require(isinstance(t.dx_step_m, int) and t.dx_step_m >= 1, f"dx_step_m = {t.dx_step_m}: "
             "a positive number of M base blocks")
    _require(isinstance(t.dw_step_m, int) and t.dw_step_m >= 1, f"dw_step_m = {t.dw_step_m}: "
             "a positive number of M base blocks")
    _require(t.dx_base_n > 0 and t.dx_base_n % 16 == 0, f"dx_base_n = {t.dx_base_n}: a positive "
             "multiple of 16")
    for name in ("dx_block_dim", "dw_block_dim", "dw_k_parts", "bias_block_dim"):
        value = getattr(t, name)      # checked whatever the shape (an empty batch has no dw)
        _require(isinstance(value, int) and value >= 1, f"{name} = {value}: at least 1")


def validate(chip, t, dx, dw, c0, item, fixed=frozenset()) -> None:
    """TilingError for a tiling that cannot work on ``chip``: about a field the user set
    (``fixed``), or, when only derived fields are involved, about the shape."""
    validate_blocks(t, c0)
    _require((t.base_k // c0) * (t.base_n // 16) <= 255, f"base_k / {c0} x base_n / 16 = "
             f"{(t.base_k // c0) * (t.base_n // 16)} fractals per LoadData2D; at most 255")
    l0a, l0b = t.l0_buffers * t.base_m * t.base_k * item, t.l0_buffers * t.base_n * t.base_k * item
    _require(l0a <= chip.l0a_bytes and l0b <= chip.l0b_bytes, f"L0A needs {l0a} bytes, L0B "
             f"{l0b}; {chip.name} has {chip.l0a_bytes} and {chip.l0b_bytes}")
    _require(t.base_m * t.base_n * 4 <= chip.l0c_bytes, f"base_m x base_n x 4 = "
             f"{t.base_m * t.base_n * 4} bytes of L0C; {chip.name} has {chip.l0c_bytes}")
    _require(t.deterministic in (True, False), "deterministic: True or False")
    _require(t.dw_v2 in (True, False), "dw_v2: True or False")
    _require(not t.dw_v2 or chip.separated, f"dw_v2 = True on {chip.name}: the V2 dw kernel "
             "runs on Atlas A2 only (allowed False)")
    _require(t.dw_v2 or not (t.deterministic and chip.separated), "deterministic = True on "
             f"{chip.name} with dw_v2 = False: a deterministic dw runs the V2 kernel there "
             "(allowed dw_v2 True)")
    _require(t.narrow in (True, False), "narrow: True or False")
    _require(1 <= t.bias_block_dim <= chip.vector_core_count, f"bias_block_dim = "
             f"{t.bias_block_dim}: 1 to {chip.vector_core_count}")
    _require(t.bias_tile > 0 and t.bias_tile % 64 == 0 and t.bias_tile * 12 + 64
             <= chip.ub_bytes, f"bias_tile = {t.bias_tile}: a positive multiple of 64 whose "
             "buffers fit UB")
    if dx is not None:
        _validate_dx(chip, t, dx, c0, item, fixed)
    if dw is not None:
        _validate_dw(chip, t, dw, c0, item, fixed)


DX_FIELDS = ("base_m", "base_n", "dx_base_n", "dx_step_k1", "dx_step_kh", "l1_buffers",
             "narrow", "dx_step_m", "dx_b1_keep")


DW_FIELDS = ("base_m", "base_n", "base_k", "dw_step_k", "dw_step_kh", "l1_buffers", "narrow",
             "dw_step_m")


def _validate_dx(chip, t, p, c0, item, fixed) -> None:
    kh, kw = p.kdhw[1:]
    _require(0 < t.dx_base_n <= t.base_n and t.dx_base_n % 16 == 0, f"dx_base_n = "
             f"{t.dx_base_n}: a positive multiple of 16, at most base_n = {t.base_n} (L0B and "
             "L0C are sized by base_n)")
    _require(1 <= t.dx_step_k1 <= ceil_div(p.kc, c0), f"dx_step_k1 = {t.dx_step_k1}: 1 to "
             f"{ceil_div(p.kc, c0)} channel blocks")
    _check_kernel_width(kw)
    top = min(kh, kh_top(p.h, dx_relay(p)[0]))
    _require(1 <= t.dx_step_kh <= top, f"dx_step_kh = {t.dx_step_kh}: 1 to {top} kernel rows "
             f"(kH = {kh}; LoadData3D takes at most {kh_top(p.h, dx_relay(p)[0])}"
             + (f" re-laid at strideH = {p.h.stride}" if dx_relay(p)[0] else "") + ")")
    _check_dx_relay(p, t)
    _require(t.dx_step_kh == kh or t.dx_step_k1 == 1, f"dx_step_kh = {t.dx_step_kh} < kH = "
             f"{kh} needs dx_step_k1 = 1 (K runs channel block by channel block)")
    _validate_dx_steps(chip, t, p, c0)
    a1, b1 = dx_l1_bytes(p, t, c0, item)
    total = dx_l1_total(p, t, c0, item)
    ok = total <= chip.l1_bytes and dx_ub_fits(chip, p, t, a1)
    if not ok and not fixed & set(DX_FIELDS):
        raise TilingError(
            f"{OP}: gradInput of this shape cannot run on {chip.name}: gradInput "
            f"{p.out_dhw[1]} x {p.out_dhw[2]}, weight {kh} x {kw}, dilation {p.h.d} x {p.w.d}: "
            f"one {c0}-channel block of one kernel row ({kw} taps) with the {a1 // c0 // item} "
            f"map positions its outputs reach (with the padding beyond {LOAD3D_MAX_PAD} as "
            f"zeros) needs "
            f"{t.l1_buffers} x ({a1} + {b1}) bytes of L1"
            + ("" if dx_ub_fits(chip, p, t, a1) else f" and {a1} of UB (at most "
               f"{dx_ub_free(chip, t)})")
            + ("" if p.out_dhw[1] == 1 else " (rows are cut into column chunks only when "
               "gradInput has one row)")
            + f"; {chip.name} has {chip.l1_bytes}")
    b1_count = 1 if t.dx_b1_keep else t.l1_buffers
    _require(total <= chip.l1_bytes, f"dx L1 chunk needs {t.l1_buffers} x {a1} + {b1_count} "
             f"x {b1} bytes; {chip.name} has {chip.l1_bytes} "
             f"(set: {', '.join(sorted(fixed & set(DX_FIELDS)))})")
    _require(dx_ub_fits(chip, p, t, a1), f"dx stride expansion in UB needs "
             f"{a1} bytes; at most {dx_ub_free(chip, t)} beside the L0C->UB queues")
    _require(1 <= t.dx_block_dim <= chip.ai_core_count, f"dx_block_dim = {t.dx_block_dim}: "
             f"1 to {chip.ai_core_count}")


def _step_events(field: str, step: int, chip) -> str:
    return (f"{field} = {step}: each of a task's C blocks is one buffer of the L0C queue and "
            f"takes one event id of its pipe pair; {chip.name} has {chip.event_ids} event ids "
            f"per pipe pair, so 1 to {chip.event_ids}")


def _validate_dx_steps(chip, t, p, c0) -> None:
    """dx_step_m (L0C holds its C blocks) and dx_b1_keep (all K in one kept chunk)."""
    l0c = t.dx_step_m * t.base_m * t.base_n * 4
    _require(t.dx_step_m >= 1 and l0c <= chip.l0c_bytes, f"dx_step_m = {t.dx_step_m}: at "
             f"least 1, and dx_step_m x base_m x base_n x 4 = {l0c} bytes of L0C at most "
             f"{chip.l0c_bytes} ({chip.name})")
    _require(t.dx_step_m <= chip.event_ids, _step_events("dx_step_m", t.dx_step_m, chip))
    _require(t.dx_b1_keep in (True, False), "dx_b1_keep: True or False")
    if t.dx_b1_keep:
        k1, kh = ceil_div(p.kc, c0), p.kdhw[1]
        _require(p.kdhw[0] == 1 and t.dx_step_k1 == k1 and t.dx_step_kh == kh,
                 f"dx_b1_keep = True needs kD = 1 (got {p.kdhw[0]}) and all K in one chunk: "
                 f"dx_step_k1 = {k1} (got {t.dx_step_k1}) and dx_step_kh = {kh} (got "
                 f"{t.dx_step_kh})")


def _validate_dw(chip, t, p, c0, item, fixed) -> None:
    kh = p.kdhw[1]
    _require(t.dw_step_k > 0 and t.dw_step_k % t.base_k == 0, f"dw_step_k = {t.dw_step_k}: a "
             f"positive multiple of base_k = {t.base_k}")
    _check_kernel_width(p.kdhw[2])
    top = min(kh, dw_kh_top(p))
    _require(0 <= t.dw_step_kh <= top and (t.dw_step_kh or kh <= top), f"dw_step_kh = "
             f"{t.dw_step_kh}: 0 (N blocks across channel blocks) or 1 to {top} kernel rows "
             f"(kH = {kh}; 0 needs kH <= {dw_kh_top(p)}, what LoadData3D takes"
             + (f" with strideH = {p.h.stride} re-laid" if dw_relay(p)[0] else "") + ")")
    _check_relay(p, t, c0)
    l0c = t.dw_step_m * t.base_m * t.base_n * 4
    _require(l0c <= chip.l0c_bytes, f"dw_step_m = {t.dw_step_m}: dw_step_m x base_m x base_n "
             f"x 4 = {l0c} bytes of L0C at most {chip.l0c_bytes} ({chip.name})")
    _require(t.dw_step_m <= chip.event_ids, _step_events("dw_step_m", t.dw_step_m, chip))
    a1, b1 = dw_l1_bytes(p, t, c0, item)
    if t.l1_buffers * (a1 + b1) > chip.l1_bytes and not fixed & set(DW_FIELDS):
        raise TilingError(
            f"{OP}: gradWeight of this shape cannot run on {chip.name}: grad "
            f"{p.grad_dhw[1]} x {p.grad_dhw[2]}, feature {p.feat_dhw[1]} x {p.feat_dhw[2]}, "
            f"kernel {kh} x {p.kdhw[2]}: {t.dw_step_k} grad positions with the feature rows "
            f"one kernel row reaches ({_map_cols(p.w, dw_cols_out(p, t))} columns wide) need "
            f"{t.l1_buffers} x ({a1} + {b1}) bytes of L1; {chip.name} has {chip.l1_bytes}"
            + ("" if p.grad_dhw[1] == 1 else " (rows are cut into column chunks only when "
               "the grad has one row)"))
    _require(t.l1_buffers * (a1 + b1) <= chip.l1_bytes, f"dw L1 chunk needs "
             f"{t.l1_buffers} x ({a1} + {b1}) bytes; {chip.name} has {chip.l1_bytes} "
             f"(set: {', '.join(sorted(fixed & set(DW_FIELDS)))})")
    hg, wg = p.grad_dhw[1:]
    _check_pads("gradWeight", (p.h, p.w), (hg, wg, dw_cols_out(p, t)),
                min(hg, ceil_div(t.dw_step_k, wg) + 1), dw_block_rows(p, t, c0),
                dw_relay(p))
    slices = p.n * p.grad_dhw[0]
    _require(1 <= t.dw_k_parts <= max(1, slices), f"dw_k_parts = {t.dw_k_parts}: 1 to "
             f"{max(1, slices)} (the (n, depth) slices)")
    _require(1 <= t.dw_block_dim <= chip.ai_core_count, f"dw_block_dim = {t.dw_block_dim}: "
             f"1 to {chip.ai_core_count}")
    _require(not (t.deterministic and chip.separated) or t.dw_block_dim >= t.dw_k_parts,
             f"deterministic dw on {chip.name}: dw_block_dim = {t.dw_block_dim} below "
             f"dw_k_parts = {t.dw_k_parts} (each K part of a block runs on its own cube core; "
             f"allowed dw_block_dim {t.dw_k_parts} to {chip.ai_core_count})")


def _check_dx_relay(p, t) -> None:
    """A transposed dx whose stride LoadData3D cannot take re-lays the map (as dw does)."""
    relay = dx_relay(p)
    if not any(relay):
        return
    _relayable("gradInput", (p.h, min(t.dx_step_kh, p.kdhw[1]), relay[0]),
               (p.w, p.kdhw[2], relay[1]))
    h, w = p.out_dhw[1:]
    for name, a, k, on, out in (("H", p.h, min(t.dx_step_kh, p.kdhw[1]), relay[0], h),
                                ("W", p.w, p.kdhw[2], relay[1], w)):
        worst = max(pads_of(a, 0, k, out)) if on else 0
        _require(worst <= LOAD3D_MAX_PAD, f"gradInput re-laid at stride{name} = {a.stride}: "
                 f"{worst} taps of padding; LoadData3D pads at most {LOAD3D_MAX_PAD}")
    _require(not dx_zero_fill(p, t), f"gradInput re-laid at stride {p.h.stride} x "
             f"{p.w.stride} with padding beyond {LOAD3D_MAX_PAD} on the other axis: not "
             "modelled")


def _relayable(what, *axes) -> None:
    for name, (a, k, on) in zip("HW", axes, strict=True):
        if on and not relayable(a, k):
            raise TilingError(
                f"{OP}: {what} with stride{name} = {a.stride} (LoadData3D takes at most "
                f"{LOAD3D_MAX_STRIDE}) re-lays the rows its windows reach; {k} taps with "
                f"dilation {a.d} span {(k - 1) * a.d + 1}: it needs at most "
                f"{LOAD3D_MAX_STRIDE} taps and windows no wider than the stride + 1")


def _check_relay(p, t, c0) -> None:
    """A dw axis whose stride LoadData3D cannot take is re-laid: its windows may not overlap
    and at most 63 taps (LoadData3D's stride over the re-laid rows) per window."""
    relay = dw_relay(p)
    _relayable("gradWeight", (p.h, dw_block_rows(p, t, c0), relay[0]),
               (p.w, p.kdhw[2], relay[1]))


def _check_kernel_width(kw: int) -> None:
    if kw > LOAD3D_MAX_FILTER:
        raise TilingError(f"{OP}: a weight {kw} taps wide (W, or L in 1-D) cannot run: "
                          f"LoadData3D takes at most {LOAD3D_MAX_FILTER} kernel columns and "
                          "the kernels cut a kernel by rows only")


def _map_cols(a, out: int) -> int:
    """Map columns one L1 chunk holds: every column the ``out`` outputs' windows reach."""
    return min(a.length, (out - 1) * a.stride + a.span)


def _check_pads(what, axes, outs, rows, kr, relay=(False, False)) -> None:
    """img2col (LoadData3D) pads at most 255 rows or columns on each side of the L1 map; a
    chunk of ``rows`` output rows and ``kr`` kernel rows sees at most its own extent in H
    (a re-laid axis: the taps of its windows outside the map)."""
    ah, aw = axes
    seen = dict(zip(("top", "bottom"), pads_of(ah, 0, kr, outs[0]) if relay[0] else pads(
        ah, outs[0], (rows - 1) * ah.stride + (kr - 1) * ah.d), strict=True))
    seen.update(zip(("left", "right"), pads_of(aw, 0, aw.k, outs[1]) if relay[1] else pads(
        aw, outs[1], (outs[2] - 1) * aw.stride + aw.span - 1), strict=True))
    worst = max(seen, key=seen.get)
    if seen[worst] > LOAD3D_MAX_PAD:
        unit, a = ("columns", aw) if worst in ("left", "right") else ("rows", ah)
        raise TilingError(
            f"{OP}: {what} of this shape cannot run: its img2col window reaches "
            f"{seen[worst]} {unit} of padding ({worst}) beyond the map (kernel span "
            f"(k - 1) x dilation + 1 = {a.span}, window offset {a.off}); LoadData3D pads at "
            f"most {LOAD3D_MAX_PAD}")
