"""ConvolutionBackward's host tiling: base blocks, L1 chunks, buffering and the core split.

Defaults follow the A2 Ascend C tiling (kernels.md §2(e)): base block baseM = 128, baseN = 256,
baseK = 128 / sizeof(dtype) (so 2·baseM·baseK and 2·baseN·baseK bytes fit L0A / L0B double
buffered), A1/B1 double buffered in L1 with chunks sized to fill it; dx tasks (n, group, depth,
M block, N block) over the cube cores without splitting K (dx is deterministic); dw blocks over
the cores with K (the (n, depth) slices) split into ``dw_k_parts``, the split that leaves the
busiest core the fewest (block, slice) pairs, fewest parts on a tie: CANN's dw tiling splits
the reduction (batchDim over batch·Do, kDim over Ho·Wo) together with M and N to fill the
cores (the 24-core tilings in ops-nn's Conv3DBackpropFilterV2 tiling tests: kDim 6 x nDim 4,
kDim 8 x nDim 3, batchDim 3 x kDim 8), partial sums atomically added in GM; or, with
``deterministic``, written to one slot each and summed in a fixed order by vector cores (inside
the mixed dw kernel on Atlas A2, where each K part of a block runs on its own cube core:
``dw_block_dim`` >= ``dw_k_parts``; a vector kernel of its own elsewhere).
The same heuristic is used on Atlas training (its TBE tiling comes from a knowledge base that
is not public, §2(e)).

Reuse across base blocks (dx): ``dx_step_m`` M base blocks per task share an A1 chunk, the
L0B tile of each K step and L0C (as many as L0C holds while every cube core keeps a task: 2 on
Atlas training's 256 KB, 1 on A2 where one 128 x 256 fp32 block fills its 128 KB); with
``dx_b1_keep`` (CANN's B1 full load) the weight of all K stays in L1 across a core's tasks
(kD = 1, when one B1 buffer of it beside two A1 chunks fits L1). A stride above LoadData3D's
63 re-lays the rows the windows reach (``ops/conv_relay.py``), at most 63 taps per window.

Derive, then validate: the user's overrides are kept and every other field is derived from
them. When the CANN-like default does not fit L1 (large kernels, long rows), the derivation
falls back step by step, each step only if the previous does not fit, so shapes that fit keep
the default: dx_base_n shrinks to the input channels there are; where the output has one
row (1-D), chunks hold only the map columns their outputs reach (``narrow``); the dx chunk
takes fewer kernel rows (``dx_step_kh``, one channel block at a time, so K keeps its order);
dw N blocks stay in one channel block and ``dw_step_kh`` kernel rows, with only the feature
rows those rows reach in L1. Padding a window needs beyond LoadData3D's 255 is held as zeros
in dx's L1 map (``dx_pad_excess``). A shape that still does not fit is a TilingError naming
the shape; one that does not fit because of a field the user set names that field.
"""

from dataclasses import dataclass

from npusim.errors import TilingError
from npusim.ops.common import ceil_div, override, round_up
from npusim.ops.conv_chunks import (
    LOAD3D_MAX_FILTER,
    LOAD3D_MAX_PAD,
    dw_block_rows,
    dw_cols_out,
    dw_n_blocks,
    dw_relay,
    dx_cols_out,
    dx_pad_excess,
    dx_relay,
    dx_task_m,
    dx_zero_fill,
    pads,
)
from npusim.ops.conv_relay import LOAD3D_MAX_STRIDE, pads_of, relayable

OP = "aclnnConvolutionBackward"
BEST_BASE_M, BEST_BASE_N = 128, 256
MAX_DW_STEP_TILES = 8   # base_k tiles per dw L1 chunk at most


@dataclass(frozen=True, kw_only=True)
class ConvBackwardTiling:
    """Host tiling of ConvolutionBackward. Every field may be overridden."""

    base_m: int          # GEMM rows per base block: dx H·W positions, dw grad channels
    base_n: int          # GEMM columns: dx input channels, dw (Cin1, kh, kw, C0) columns
    dx_base_n: int       # dx input channels per block (<= base_n): base_n, or the channels
                         # there are when a base_n block of all taps does not fit L1
    base_k: int          # K elements per L0A/L0B tile (multiple of C0)
    dx_step_k1: int      # gradOutput channel blocks (C0 each) per dx L1 chunk
    dx_step_kh: int      # kernel rows per dx L1 chunk: kH, or fewer when one channel block
                         # of all kH x kW taps does not fit L1 (then dx_step_k1 = 1)
    dx_step_m: int       # dx M base blocks per task (CANN's stepM): their C blocks share L0C
                         # (step_m x base_m x base_n x 4 bytes), their map rows one A1 chunk,
                         # and each K step's L0B tile serves all of them; each C block still
                         # leaves L0C on its own (FixPipe, or L0C -> UB in base_m rows)
    dx_b1_keep: bool     # B1 full load (CANN's isB1FullLoadFlag_): kD = 1 and the whole K in
                         # one chunk, the N block's weight stays in one B1 buffer across a
                         # core's tasks of the same group and N block (tasks then run N
                         # block by N block); False: B1 reloaded per task, l1_buffers deep
    dw_step_k: int       # grad positions per dw L1 chunk (multiple of base_k)
    dw_step_m: int       # dw M base blocks (grad channels) per task: their C blocks share L0C
                         # (dw_step_m x base_m x base_n x 4 bytes), their channels one A1
                         # chunk, and each position step's img2col L0B tile serves all of
                         # them, so the feature is read and expanded once per task. Default
                         # 1: the K split already spreads dw over the cores, and sharing
                         # (fewer tasks, more K parts) did not pay on the ResNet-50 shapes
    dw_step_kh: int      # 0: dw N blocks run across the (Cin1, kh, kw, C0) columns and L1
                         # holds the feature rows of all kH kernel rows; r > 0: N blocks stay
                         # in one channel block and r kernel rows, L1 holds the feature rows
                         # those rows reach (the default when the first does not fit L1)
    l1_buffers: int      # A1/B1 buffers: 2 double buffers L1, 1 does not
    l0_buffers: int      # A2/B2 buffers: 2 double buffers L0A/L0B, 1 does not
    dx_block_dim: int    # cube cores of the dx kernel
    dw_block_dim: int    # cube cores of the dw kernel
    dw_k_parts: int      # parts K of dw is split into (partial sums added in GM)
    deterministic: bool  # dw partials reduced in a fixed order instead of atomic adds
    dw_v2: bool          # dw runs the Ascend C Conv3DBackpropFilterV2 (A2; zeroes its output
                         # itself) rather than the TBE kernel after a MemSet; default: aclnn's
                         # choice (``ops/conv_route.py``)
    narrow: bool         # where the output height is 1 (1-D): an L1 chunk holds only the map
                         # columns its outputs reach (dx: the M block's, dw: the position
                         # chunk's), not the whole row; the default when the row does not fit
    bias_block_dim: int  # vector cores of the gradBias kernel
    bias_tile: int       # elements per gradBias UB tile (the accumulator's lanes)


def dx_l1_bytes(p, t, c0: int, item: int) -> tuple[int, int]:
    """(A1, B1) bytes of one dx L1 chunk: ``t.dx_step_k1`` channel blocks x ``t.dx_step_kh``
    kernel rows (the map rows those kernel rows reach)."""
    h, w = p.out_dhw[1:]
    kr, kw = min(t.dx_step_kh, p.kdhw[1]), p.kdhw[2]
    hrows = min(h, ceil_div(dx_task_m(t), w) + 1)
    more_h, more_w = dx_pad_excess(p, t)
    rows = min(p.h.length + more_h, (hrows - 1) * p.h.stride + (kr - 1) * p.h.d + 1)
    cols = min(p.w.length + more_w, (dx_cols_out(p, t) - 1) * p.w.stride + p.w.span)
    relay_h, relay_w = dx_relay(p)   # re-laid: every tap of every output its own row
    if relay_h:
        rows = hrows * kr
    if relay_w:
        cols = dx_cols_out(p, t) * kw
    a1 = t.dx_step_k1 * rows * cols * c0 * item
    b1 = t.dx_step_k1 * kr * kw * (t.dx_base_n // 16) * 512
    return a1, b1


def dx_l1_total(p, t, c0: int, item: int) -> int:
    """L1 bytes of the dx kernel: ``l1_buffers`` A1 chunks and as many B1 chunks, or one
    B1 when it is kept (``dx_b1_keep``)."""
    a1, b1 = dx_l1_bytes(p, t, c0, item)
    return t.l1_buffers * a1 + (1 if t.dx_b1_keep else t.l1_buffers) * b1


def dw_l1_bytes(p, t, c0: int, item: int) -> tuple[int, int]:
    """(A1, B1) bytes of one dw L1 chunk of ``t.dw_step_k`` positions."""
    hg, wg = p.grad_dhw[1:]
    kh, kw = p.kdhw[1:]
    kr = dw_block_rows(p, t, c0)
    rows_g = min(hg, ceil_div(t.dw_step_k, wg) + 1)
    rows_f = min(p.feat_dhw[1], (rows_g - 1) * p.h.stride + (kr - 1) * p.h.d + 1)
    cols_g = dw_cols_out(p, t)
    cols_f = min(p.feat_dhw[2], (cols_g - 1) * p.w.stride + p.w.span)
    relay_h, relay_w = dw_relay(p)   # re-laid: every tap of every output its own row
    if relay_h:
        rows_f = rows_g * kr
    if relay_w:
        cols_f = cols_g * kw
    fc1 = min(ceil_div(p.fc, c0), ceil_div(t.base_n, kh * kw * c0) + 1)
    if t.dw_step_kh:
        fc1 = 1
    a1 = (t.base_m * t.dw_step_m // c0) * rows_g * cols_g * c0 * item
    b1 = fc1 * rows_f * cols_f * c0 * item
    return a1, b1


def default_tiling(chip, dx, dw, c0: int, item: int, bias_n: int) -> ConvBackwardTiling:
    """The default tiling; ``dx`` / ``dw`` are the problems (None when masked out)."""
    return derive(chip, _start(chip, dx, item, bias_n), dx, dw, c0, item, set())


def _start(chip, dx, item, bias_n) -> ConvBackwardTiling:
    """The fields nothing is derived from (and placeholders for the derived ones)."""
    return ConvBackwardTiling(base_m=BEST_BASE_M, base_n=BEST_BASE_N, dx_base_n=BEST_BASE_N,
                              base_k=128 // item,
                              dx_step_k1=1, dx_step_kh=dx.kdhw[1] if dx else 1,
                              dx_step_m=1, dx_b1_keep=False, dw_step_m=1,
                              dw_step_k=128 // item, dw_step_kh=0, l1_buffers=2, l0_buffers=2,
                              dx_block_dim=1, dw_block_dim=1, dw_k_parts=1,
                              deterministic=False, dw_v2=False, narrow=False,
                              bias_block_dim=max(1, min(chip.vector_core_count, bias_n)),
                              bias_tile=4096)


def derive(chip, t, dx, dw, c0, item, fixed) -> ConvBackwardTiling:
    """Every field not in ``fixed`` (the user's) derived from the others to fit the chip."""
    if dx is not None:
        t = _derive_dx(chip, t, dx, c0, item, fixed)
    if dw is not None:
        t = _derive_dw(chip, t, dw, c0, item, fixed)
    return t


def _derive_dx(chip, t, p, c0, item, fixed) -> ConvBackwardTiling:
    """dx_step_m as L0C allows; dx_step_k1 as large as fits L1; if one channel block of all
    taps does not fit, dx_base_n shrinks to the channels there are, then the chunk takes
    fewer kernel rows; B1 kept when all K is one chunk."""
    free = {f for f in ("dx_step_k1", "dx_step_kh", "dx_base_n", "dx_step_m") if f not in fixed}
    if "dx_base_n" in free:
        t = _replace(t, dx_base_n=t.base_n)
    if "dx_step_kh" in free:
        t = _replace(t, dx_step_kh=min(p.kdhw[1], _kh_top(p.h, dx_relay(p)[0])))
    if "dx_step_m" in free:
        t = _replace(t, dx_step_m=_dx_step_m(chip, p, t, c0, item))
    if "dx_step_k1" in free:
        t = _replace(t, dx_step_k1=max(1, _dx_step(chip, p, t, c0, item)))
    if not _dx_fits(chip, p, t, c0, item) and "dx_base_n" in free:
        t = _replace(t, dx_base_n=min(t.dx_base_n, round_up(p.nc, 16)))
        if "dx_step_k1" in free:
            t = _replace(t, dx_step_k1=max(1, _dx_step(chip, p, t, c0, item)))
    if not _dx_fits(chip, p, t, c0, item) and "narrow" not in fixed and p.out_dhw[1] == 1:
        t = _replace(t, narrow=True)
        if "dx_step_k1" in free:
            t = _replace(t, dx_step_k1=max(1, _dx_step(chip, p, t, c0, item)))
    if not _dx_fits(chip, p, t, c0, item) and "dx_step_kh" in free:
        if "dx_step_k1" in free:
            t = _replace(t, dx_step_k1=1)
        for kr in range(t.dx_step_kh - 1, 0, -1):
            t = _replace(t, dx_step_kh=kr)
            if _dx_fits(chip, p, t, c0, item):
                break
    if "dx_b1_keep" not in fixed:
        t = _derive_keep(chip, p, t, c0, item, free)
    if "dx_block_dim" not in fixed:
        t = _replace(t, dx_block_dim=min(chip.ai_core_count, _dx_tasks(p, t, c0)))
    return t


def _dx_step_m(chip, p, t, c0, item) -> int:
    """The most M base blocks whose C blocks fit L0C together, while there are still a task
    per cube core and one channel block of the chunk fits L1 (assumed: the Ascend C dx kernel
    runs stepM = 1, kernels.md §2(e), on A2 where one 128 x 256 fp32 block fills L0C; the TBE
    tiling of Atlas training is not public, and one L0C tile of several base blocks is what
    its 256 KB L0C allows)."""
    top = max(1, chip.l0c_bytes // max(1, t.base_m * t.base_n * 4))
    for step in range(top, 1, -1):
        trial = _replace(t, dx_step_m=step, dx_step_k1=1)
        if (_dx_tasks(p, trial, c0) >= chip.ai_core_count
                and _dx_fits(chip, p, trial, c0, item)):
            return step
    return 1


def _derive_keep(chip, p, t, c0, item, free) -> ConvBackwardTiling:
    """CANN's B1 full load (kernels.md §2(e) dx; isB1FullLoadFlag_ in the arch22 kernel):
    kD = 1 and all K in one chunk, kept in one B1 buffer, when that fits L1."""
    k1, kh = ceil_div(p.kc, c0), p.kdhw[1]
    if p.kdhw[0] != 1 or kh > _kh_top(p.h, dx_relay(p)[0]):
        return t
    trial = _replace(t, dx_b1_keep=True)
    if "dx_step_k1" in free:
        trial = _replace(trial, dx_step_k1=k1)
    if "dx_step_kh" in free:
        trial = _replace(trial, dx_step_kh=kh)
    whole = trial.dx_step_k1 == k1 and trial.dx_step_kh == kh
    return trial if whole and _dx_fits(chip, p, trial, c0, item) else t


def _derive_dw(chip, t, p, c0, item, fixed) -> ConvBackwardTiling:
    """dw_step_k as large as fits L1 (N blocks across channel blocks); else N blocks of one
    channel block and as many kernel rows as fit; then the K split over the cores."""
    if "dw_step_kh" not in fixed:   # 0 (all kernel rows) unless img2col cannot take them
        top = _dw_kh_top(p)
        t = _replace(t, dw_step_kh=0 if p.kdhw[1] <= top else top)
    if "dw_step_k" not in fixed:
        t = _replace(t, dw_step_k=_dw_step(chip, p, t, c0, item) or t.base_k)
    if not _dw_fits(chip, p, t, c0, item) and "narrow" not in fixed and p.grad_dhw[1] == 1:
        t = _replace(t, narrow=True)
        if "dw_step_k" not in fixed:
            t = _replace(t, dw_step_k=_dw_step(chip, p, t, c0, item) or t.base_k)
    if not _dw_fits(chip, p, t, c0, item) and "dw_step_kh" not in fixed:
        for kr in range(min(p.kdhw[1], _dw_kh_top(p)), 0, -1):
            t = _replace(t, dw_step_kh=kr)
            if "dw_step_k" not in fixed:
                t = _replace(t, dw_step_k=_dw_step(chip, p, t, c0, item) or t.base_k)
            if _dw_fits(chip, p, t, c0, item):
                break
    blocks = _dw_blocks(p, t, c0)
    slices = p.n * p.grad_dhw[0]
    if "dw_k_parts" not in fixed:
        cores = t.dw_block_dim if "dw_block_dim" in fixed and t.deterministic and \
            chip.separated else chip.ai_core_count   # the mixed dw: a core per K part
        parts = max(1, min(slices, cores // max(blocks, 1)))
        if not t.deterministic:
            parts = _balanced_parts(blocks, slices, cores)
        t = _replace(t, dw_k_parts=parts)
    if "dw_block_dim" not in fixed:
        t = _replace(t, dw_block_dim=max(1, min(chip.ai_core_count, blocks * t.dw_k_parts)))
    return t


def _balanced_parts(blocks: int, slices: int, cores: int) -> int:
    """K parts of the dw split: the fewest that leave the busiest core the fewest (block,
    slice) pairs when blocks x parts tasks go round-robin over the cores."""
    def busiest(parts):
        return ceil_div(blocks * parts, cores) * ceil_div(slices, parts)
    return min(range(1, max(1, min(slices, cores)) + 1), key=lambda k: (busiest(k), k))


def _dw_kh_top(p) -> int:
    """The most kernel rows one dw N block may reach."""
    return _kh_top(p.h, dw_relay(p)[0])


def _kh_top(a, relaid: bool) -> int:
    """The most kernel rows one chunk may take on MapAxis ``a``: what LoadData3D takes, and
    with re-laid rows (stride > 63) at most 63 taps whose windows do not overlap."""
    if not relaid:
        return LOAD3D_MAX_FILTER
    return max(1, min(LOAD3D_MAX_STRIDE, a.stride // a.d + 1))


def dx_ub_fits(chip, p, t, a1: int) -> bool:
    """Does the A1 map fit UB where it is built there (zero-filled, no FixPipe)?"""
    return chip.has_fixpipe or not dx_zero_fill(p, t) or a1 <= dx_ub_free(chip, t)


def dx_ub_free(chip, t) -> int:
    """UB left for the stride expansion of dx's map (chips without FixPipe): the L0C->UB
    queues take base_m x base_n fp32 and, for a 16-bit output, as many 16-bit elements."""
    return chip.ub_bytes - t.base_m * t.base_n * (4 + 2)


def _dx_fits(chip, p, t, c0, item) -> bool:
    a1 = dx_l1_bytes(p, t, c0, item)[0]
    return (dx_l1_total(p, t, c0, item) <= chip.l1_bytes
            and t.dx_step_m * t.base_m * t.base_n * 4 <= chip.l0c_bytes
            and dx_ub_fits(chip, p, t, a1))


def _dw_fits(chip, p, t, c0, item) -> bool:
    a1, b1 = dw_l1_bytes(p, t, c0, item)
    return (t.l1_buffers * (a1 + b1) <= chip.l1_bytes
            and t.dw_step_m * t.base_m * t.base_n * 4 <= chip.l0c_bytes)


def _replace(t, **fields):
    return override(t, fields, OP)


def _dx_tasks(p, t, c0) -> int:
    hw = p.out_dhw[1] * p.out_dhw[2]
    return max(1, p.n * p.groups * p.out_dhw[0] * ceil_div(hw, dx_task_m(t))
               * ceil_div(round_up(p.nc, 16), t.dx_base_n))


def dw_block_grid(p, t, c0) -> tuple[int, int]:
    """(M blocks, N blocks) of one (group, kd) dw GEMM."""
    mbs = ceil_div(ceil_div(p.gc, c0), t.base_m * t.dw_step_m // c0)
    return mbs, len(dw_n_blocks(p, t, c0))


def _dw_blocks(p, t, c0) -> int:
    mbs, nbs = dw_block_grid(p, t, c0)
    return p.groups * p.kdhw[0] * mbs * nbs


def _dx_step(chip, p, t, c0, item) -> int:
    """The most channel blocks per dx L1 chunk that fit (0: not even one); one when the chunk
    takes only some kernel rows (K then runs channel block by channel block)."""
    top = ceil_div(p.kc, c0) if t.dx_step_kh >= p.kdhw[1] else 1
    for step in range(top, 0, -1):
        if _dx_fits(chip, p, _replace(t, dx_step_k1=step), c0, item):
            return step
    return 0


def _dw_step(chip, p, t, c0, item) -> int:
    """The most grad positions per dw L1 chunk that fit (0: not even base_k)."""
    if t.base_k <= 0:
        return 0
    positions = p.grad_dhw[1] * p.grad_dhw[2]
    top = min(round_up(positions, t.base_k), MAX_DW_STEP_TILES * t.base_k)
    for step in range(top, 0, -t.base_k):
        if _dw_fits(chip, p, _replace(t, dw_step_k=step), c0, item):
            return step
    return 0


def conv_tiling(chip, dx, dw, c0, item, bias_n, overrides, dw_v2=False) -> ConvBackwardTiling:
    """The user's ``overrides``, every other field derived from them, validated; ``dw_v2``:
    aclnn's choice of the V2 dw kernel (a deterministic dw on Atlas A2 always runs it)."""
    t = override(_start(chip, dx, item, bias_n), overrides, OP)
    fixed = set(overrides or ())
    if "dw_v2" not in fixed:
        t = _replace(t, dw_v2=bool(dw_v2 or (t.deterministic and chip.separated)))
    _validate_blocks(t, c0)
    t = derive(chip, t, dx, dw, c0, item, fixed)
    validate(chip, t, dx, dw, c0, item, fixed)
    return t


def _require(ok: bool, what: str) -> None:
    if not ok:
        raise TilingError(f"{OP}: {what}")


def _validate_blocks(t, c0) -> None:
    """The fields the derivation divides by."""
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


def validate(chip, t, dx, dw, c0, item, fixed=frozenset()) -> None:
    """TilingError for a tiling that cannot work on ``chip``: about a field the user set
    (``fixed``), or, when only derived fields are involved, about the shape."""
    _validate_blocks(t, c0)
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
    top = min(kh, _kh_top(p.h, dx_relay(p)[0]))
    _require(1 <= t.dx_step_kh <= top, f"dx_step_kh = {t.dx_step_kh}: 1 to {top} kernel rows "
             f"(kH = {kh}; LoadData3D takes at most {_kh_top(p.h, dx_relay(p)[0])}"
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


def _validate_dx_steps(chip, t, p, c0) -> None:
    """dx_step_m (L0C holds its C blocks) and dx_b1_keep (all K in one kept chunk)."""
    l0c = t.dx_step_m * t.base_m * t.base_n * 4
    _require(t.dx_step_m >= 1 and l0c <= chip.l0c_bytes, f"dx_step_m = {t.dx_step_m}: at "
             f"least 1, and dx_step_m x base_m x base_n x 4 = {l0c} bytes of L0C at most "
             f"{chip.l0c_bytes} ({chip.name})")
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
    top = min(kh, _dw_kh_top(p))
    _require(0 <= t.dw_step_kh <= top and (t.dw_step_kh or kh <= top), f"dw_step_kh = "
             f"{t.dw_step_kh}: 0 (N blocks across channel blocks) or 1 to {top} kernel rows "
             f"(kH = {kh}; 0 needs kH <= {_dw_kh_top(p)}, what LoadData3D takes"
             + (f" with strideH = {p.h.stride} re-laid" if dw_relay(p)[0] else "") + ")")
    _check_relay(p, t, c0)
    l0c = t.dw_step_m * t.base_m * t.base_n * 4
    _require(l0c <= chip.l0c_bytes, f"dw_step_m = {t.dw_step_m}: dw_step_m x base_m x base_n "
             f"x 4 = {l0c} bytes of L0C at most {chip.l0c_bytes} ({chip.name})")
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
