"""ConvolutionBackward's host tiling: base blocks, L1 chunks, buffering and the core split.

Defaults follow the A2 Ascend C tiling (kernels.md §2(e)): base block baseM = 128, baseN = 256,
baseK = 128 / sizeof(dtype) (so 2·baseM·baseK and 2·baseN·baseK bytes fit L0A / L0B double
buffered), A1/B1 double buffered in L1 with chunks sized to fill it; dx tasks (n, group, depth,
M block, N block) over the cube cores without splitting K (dx is deterministic); dw blocks over
the cores, and when there are fewer blocks than cores, K (the (n, depth) slices) split into
``dw_k_parts`` whose partial sums are atomically added in GM (CANN's default), or, with
``deterministic``, written to one slot each and summed in a fixed order by a vector kernel.
The same heuristic is used on Atlas training (its TBE tiling comes from a knowledge base that
is not public, §2(e)).
"""

from dataclasses import dataclass

from npusim.errors import TilingError
from npusim.ops.common import ceil_div, override, round_up

OP = "aclnnConvolutionBackward"
BEST_BASE_M, BEST_BASE_N = 128, 256
MAX_DW_STEP_TILES = 8   # base_k tiles per dw L1 chunk at most


@dataclass(frozen=True, kw_only=True)
class ConvBackwardTiling:
    """Host tiling of ConvolutionBackward. Every field may be overridden."""

    base_m: int          # GEMM rows per base block: dx H·W positions, dw grad channels
    base_n: int          # GEMM columns: dx input channels, dw (Cin1, kh, kw, C0) columns
    base_k: int          # K elements per L0A/L0B tile (multiple of C0)
    dx_step_k1: int      # gradOutput channel blocks (C0 each) per dx L1 chunk
    dw_step_k: int       # grad positions per dw L1 chunk (multiple of base_k)
    l1_buffers: int      # A1/B1 buffers: 2 double buffers L1, 1 does not
    l0_buffers: int      # A2/B2 buffers: 2 double buffers L0A/L0B, 1 does not
    dx_block_dim: int    # cube cores of the dx kernel
    dw_block_dim: int    # cube cores of the dw kernel
    dw_k_parts: int      # parts K of dw is split into (partial sums added in GM)
    deterministic: bool  # dw partials reduced in a fixed order instead of atomic adds
    bias_block_dim: int  # vector cores of the gradBias kernel
    bias_tile: int       # elements per gradBias UB tile (the accumulator's lanes)


def dx_l1_bytes(p, t, c0: int, item: int) -> tuple[int, int]:
    """(A1, B1) bytes of one dx L1 chunk of ``t.dx_step_k1`` channel blocks."""
    h, w = p.out_dhw[1:]
    hrows = min(h, ceil_div(t.base_m, w) + 1)
    rows = min(p.h.length, (hrows - 1) * p.h.stride + p.h.span)
    cols = min(p.w.length, (w - 1) * p.w.stride + p.w.span)
    kh, kw = p.kdhw[1:]
    a1 = t.dx_step_k1 * rows * cols * c0 * item
    b1 = t.dx_step_k1 * kh * kw * (t.base_n // 16) * 512
    return a1, b1


def dw_l1_bytes(p, t, c0: int, item: int) -> tuple[int, int]:
    """(A1, B1) bytes of one dw L1 chunk of ``t.dw_step_k`` positions."""
    hg, wg = p.grad_dhw[1:]
    kh, kw = p.kdhw[1:]
    rows_g = min(hg, ceil_div(t.dw_step_k, wg) + 1)
    rows_f = min(p.feat_dhw[1], (rows_g - 1) * p.h.stride + p.h.span)
    cols_f = min(p.feat_dhw[2], (wg - 1) * p.w.stride + p.w.span)
    fc1 = min(ceil_div(p.fc, c0), ceil_div(t.base_n, kh * kw * c0) + 1)
    a1 = (t.base_m // c0) * rows_g * wg * c0 * item
    b1 = fc1 * rows_f * cols_f * c0 * item
    return a1, b1


def default_tiling(chip, dx, dw, c0: int, item: int, bias_n: int) -> ConvBackwardTiling:
    """The default tiling; ``dx`` / ``dw`` are the problems (None when masked out)."""
    base_k = 128 // item
    t = ConvBackwardTiling(base_m=BEST_BASE_M, base_n=BEST_BASE_N, base_k=base_k,
                           dx_step_k1=1, dw_step_k=base_k, l1_buffers=2, l0_buffers=2,
                           dx_block_dim=1, dw_block_dim=1, dw_k_parts=1, deterministic=False,
                           bias_block_dim=max(1, min(chip.vector_core_count, bias_n)),
                           bias_tile=4096)
    if dx is not None:
        t = _replace(t, dx_step_k1=_dx_step(chip, dx, t, c0, item),
                     dx_block_dim=min(chip.ai_core_count, _dx_tasks(dx, t, c0)))
    if dw is not None:
        t = _replace(t, dw_step_k=_dw_step(chip, dw, t, c0, item))
        blocks = _dw_blocks(dw, t, c0)
        slices = dw.n * dw.grad_dhw[0]
        parts = max(1, min(slices, chip.ai_core_count // max(blocks, 1)))
        t = _replace(t, dw_k_parts=parts,
                     dw_block_dim=max(1, min(chip.ai_core_count, blocks * parts)))
    return t


def _replace(t, **fields):
    return override(t, fields, OP)


def _dx_tasks(p, t, c0) -> int:
    hw = p.out_dhw[1] * p.out_dhw[2]
    return max(1, p.n * p.groups * p.out_dhw[0] * ceil_div(hw, t.base_m)
               * ceil_div(round_up(p.nc, 16), t.base_n))


def dw_block_grid(p, t, c0) -> tuple[int, int]:
    """(M blocks, N blocks) of one (group, kd) dw GEMM."""
    kh, kw = p.kdhw[1:]
    mbs = ceil_div(ceil_div(p.gc, c0), t.base_m // c0)
    nbs = ceil_div(ceil_div(p.fc, c0) * kh * kw * c0, t.base_n)
    return mbs, nbs


def _dw_blocks(p, t, c0) -> int:
    mbs, nbs = dw_block_grid(p, t, c0)
    return p.groups * p.kdhw[0] * mbs * nbs


def _dx_step(chip, p, t, c0, item) -> int:
    k1 = ceil_div(p.kc, c0)
    for step in range(k1, 0, -1):
        a1, b1 = dx_l1_bytes(p, _replace(t, dx_step_k1=step), c0, item)
        if t.l1_buffers * (a1 + b1) <= chip.l1_bytes and (chip.has_fixpipe or
                                                          a1 <= chip.ub_bytes // 2):
            return step
    return 1


def _dw_step(chip, p, t, c0, item) -> int:
    positions = p.grad_dhw[1] * p.grad_dhw[2]
    top = min(round_up(positions, t.base_k), MAX_DW_STEP_TILES * t.base_k)
    for step in range(top, 0, -t.base_k):
        a1, b1 = dw_l1_bytes(p, _replace(t, dw_step_k=step), c0, item)
        if t.l1_buffers * (a1 + b1) <= chip.l1_bytes:
            return step
    return t.base_k


def conv_tiling(chip, dx, dw, c0, item, bias_n, overrides) -> ConvBackwardTiling:
    """The default tiling with the user's ``overrides``, validated."""
    t = default_tiling(chip, dx, dw, c0, item, bias_n)
    if not overrides:
        return t
    t = override(t, overrides, OP)
    validate(chip, t, dx, dw, c0, item)
    return t


def _require(ok: bool, what: str) -> None:
    if not ok:
        raise TilingError(f"{OP}: {what}")


def validate(chip, t, dx, dw, c0, item) -> None:
    """TilingError for an override that cannot work on ``chip``."""
    _require(t.base_m > 0 and t.base_m % 16 == 0, f"base_m = {t.base_m}: a positive multiple "
             "of 16")
    _require(t.base_n > 0 and t.base_n % 16 == 0, f"base_n = {t.base_n}: a positive multiple "
             "of 16")
    _require(t.base_k > 0 and t.base_k % c0 == 0, f"base_k = {t.base_k}: a positive multiple "
             f"of C0 = {c0}")
    _require(t.l1_buffers in (1, 2) and t.l0_buffers in (1, 2), "l1_buffers and l0_buffers: "
             "allowed 1 or 2")
    _require((t.base_k // c0) * (t.base_n // 16) <= 255, f"base_k / {c0} x base_n / 16 = "
             f"{(t.base_k // c0) * (t.base_n // 16)} fractals per LoadData2D; at most 255")
    l0a, l0b = t.l0_buffers * t.base_m * t.base_k * item, t.l0_buffers * t.base_n * t.base_k * item
    _require(l0a <= chip.l0a_bytes and l0b <= chip.l0b_bytes, f"L0A needs {l0a} bytes, L0B "
             f"{l0b}; {chip.name} has {chip.l0a_bytes} and {chip.l0b_bytes}")
    _require(t.base_m * t.base_n * 4 <= chip.l0c_bytes, f"base_m x base_n x 4 = "
             f"{t.base_m * t.base_n * 4} bytes of L0C; {chip.name} has {chip.l0c_bytes}")
    _require(t.deterministic in (True, False), "deterministic: True or False")
    _require(1 <= t.bias_block_dim <= chip.vector_core_count, f"bias_block_dim = "
             f"{t.bias_block_dim}: 1 to {chip.vector_core_count}")
    _require(t.bias_tile > 0 and t.bias_tile % 64 == 0 and t.bias_tile * 12 + 64
             <= chip.ub_bytes, f"bias_tile = {t.bias_tile}: a positive multiple of 64 whose "
             "buffers fit UB")
    if dx is not None:
        _validate_dx(chip, t, dx, c0, item)
    if dw is not None:
        _validate_dw(chip, t, dw, c0, item)


def _validate_dx(chip, t, p, c0, item) -> None:
    _require(1 <= t.dx_step_k1 <= ceil_div(p.kc, c0), f"dx_step_k1 = {t.dx_step_k1}: 1 to "
             f"{ceil_div(p.kc, c0)} channel blocks")
    a1, b1 = dx_l1_bytes(p, t, c0, item)
    _require(t.l1_buffers * (a1 + b1) <= chip.l1_bytes, f"dx L1 chunk needs "
             f"{t.l1_buffers} x ({a1} + {b1}) bytes; {chip.name} has {chip.l1_bytes}")
    _require(chip.has_fixpipe or a1 <= chip.ub_bytes // 2, f"dx stride expansion in UB needs "
             f"{a1} bytes; at most {chip.ub_bytes // 2}")
    _require(1 <= t.dx_block_dim <= chip.ai_core_count, f"dx_block_dim = {t.dx_block_dim}: "
             f"1 to {chip.ai_core_count}")


def _validate_dw(chip, t, p, c0, item) -> None:
    _require(t.dw_step_k > 0 and t.dw_step_k % t.base_k == 0, f"dw_step_k = {t.dw_step_k}: a "
             f"positive multiple of base_k = {t.base_k}")
    a1, b1 = dw_l1_bytes(p, t, c0, item)
    _require(t.l1_buffers * (a1 + b1) <= chip.l1_bytes, f"dw L1 chunk needs "
             f"{t.l1_buffers} x ({a1} + {b1}) bytes; {chip.name} has {chip.l1_bytes}")
    slices = p.n * p.grad_dhw[0]
    _require(1 <= t.dw_k_parts <= max(1, slices), f"dw_k_parts = {t.dw_k_parts}: 1 to "
             f"{max(1, slices)} (the (n, depth) slices)")
    _require(1 <= t.dw_block_dim <= chip.ai_core_count, f"dw_block_dim = {t.dw_block_dim}: "
             f"1 to {chip.ai_core_count}")
