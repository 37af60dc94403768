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
63 re-lays the rows the windows reach (``ops/convolution/relay.py``), at most 63 taps per window.

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

from npusim.ops.common import ceil_div, override, round_up
from npusim.ops.convolution.args import OP
from npusim.ops.convolution.chunks import (
    dx_relay,
)
from npusim.ops.convolution.tiling_checks import validate, validate_blocks
from npusim.ops.convolution.tiling_fit import (
    balanced_parts,
    dw_blocks,
    dw_fits,
    dw_kh_top,
    dw_step,
    dx_fits,
    dx_step,
    dx_tasks,
    kh_top,
    with_fields,
)

BEST_BASE_M, BEST_BASE_N = 128, 256


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
                         # choice (``ops/convolution/route.py``)
    narrow: bool         # where the output height is 1 (1-D): an L1 chunk holds only the map
                         # columns its outputs reach (dx: the M block's, dw: the position
                         # chunk's), not the whole row; the default when the row does not fit
    bias_block_dim: int  # vector cores of the gradBias kernel
    bias_tile: int       # elements per gradBias UB tile (the accumulator's lanes)


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
        t = with_fields(t, dx_base_n=t.base_n)
    if "dx_step_kh" in free:
        t = with_fields(t, dx_step_kh=min(p.kdhw[1], kh_top(p.h, dx_relay(p)[0])))
    if "dx_step_m" in free:
        t = with_fields(t, dx_step_m=_dx_step_m(chip, p, t, c0, item))
    if "dx_step_k1" in free:
        t = with_fields(t, dx_step_k1=max(1, dx_step(chip, p, t, c0, item)))
    if not dx_fits(chip, p, t, c0, item) and "dx_base_n" in free:
        t = with_fields(t, dx_base_n=min(t.dx_base_n, round_up(p.nc, 16)))
        if "dx_step_k1" in free:
            t = with_fields(t, dx_step_k1=max(1, dx_step(chip, p, t, c0, item)))
    if not dx_fits(chip, p, t, c0, item) and "narrow" not in fixed and p.out_dhw[1] == 1:
        t = with_fields(t, narrow=True)
        if "dx_step_k1" in free:
            t = with_fields(t, dx_step_k1=max(1, dx_step(chip, p, t, c0, item)))
    if not dx_fits(chip, p, t, c0, item) and "dx_step_kh" in free:
        if "dx_step_k1" in free:
            t = with_fields(t, dx_step_k1=1)
        for kr in range(t.dx_step_kh - 1, 0, -1):
            t = with_fields(t, dx_step_kh=kr)
            if dx_fits(chip, p, t, c0, item):
                break
    if "dx_b1_keep" not in fixed:
        t = _derive_keep(chip, p, t, c0, item, free)
    if "dx_block_dim" not in fixed:
        t = with_fields(t, dx_block_dim=min(chip.ai_core_count, dx_tasks(p, t, c0)))
    return t


def _dx_step_m(chip, p, t, c0, item) -> int:
    """The most M base blocks whose C blocks fit L0C together, while there are still a task
    per cube core and one channel block of the chunk fits L1 (assumed: the Ascend C dx kernel
    runs stepM = 1, kernels.md §2(e), on A2 where one 128 x 256 fp32 block fills L0C; the TBE
    tiling of Atlas training is not public, and one L0C tile of several base blocks is what
    its 256 KB L0C allows). Each C block is one buffer of the L0C queue and takes one event id
    of its pipe pair each way, so the step is at most the chip's event ids per pipe pair."""
    top = max(1, min(chip.l0c_bytes // max(1, t.base_m * t.base_n * 4), chip.event_ids))
    for step in range(top, 1, -1):
        trial = with_fields(t, dx_step_m=step, dx_step_k1=1)
        if (dx_tasks(p, trial, c0) >= chip.ai_core_count
                and dx_fits(chip, p, trial, c0, item)):
            return step
    return 1


def _derive_keep(chip, p, t, c0, item, free) -> ConvBackwardTiling:
    """CANN's B1 full load (kernels.md §2(e) dx; isB1FullLoadFlag_ in the arch22 kernel):
    kD = 1 and all K in one chunk, kept in one B1 buffer, when that fits L1."""
    k1, kh = ceil_div(p.kc, c0), p.kdhw[1]
    if p.kdhw[0] != 1 or kh > kh_top(p.h, dx_relay(p)[0]):
        return t
    trial = with_fields(t, dx_b1_keep=True)
    if "dx_step_k1" in free:
        trial = with_fields(trial, dx_step_k1=k1)
    if "dx_step_kh" in free:
        trial = with_fields(trial, dx_step_kh=kh)
    whole = trial.dx_step_k1 == k1 and trial.dx_step_kh == kh
    return trial if whole and dx_fits(chip, p, trial, c0, item) else t


def _derive_dw(chip, t, p, c0, item, fixed) -> ConvBackwardTiling:
    """dw_step_k as large as fits L1 (N blocks across channel blocks); else N blocks of one
    channel block and as many kernel rows as fit; then the K split over the cores."""
    if "dw_step_kh" not in fixed:   # 0 (all kernel rows) unless img2col cannot take them
        top = dw_kh_top(p)
        t = with_fields(t, dw_step_kh=0 if p.kdhw[1] <= top else top)
    if "dw_step_k" not in fixed:
        t = with_fields(t, dw_step_k=dw_step(chip, p, t, c0, item) or t.base_k)
    if not dw_fits(chip, p, t, c0, item) and "narrow" not in fixed and p.grad_dhw[1] == 1:
        t = with_fields(t, narrow=True)
        if "dw_step_k" not in fixed:
            t = with_fields(t, dw_step_k=dw_step(chip, p, t, c0, item) or t.base_k)
    if not dw_fits(chip, p, t, c0, item) and "dw_step_kh" not in fixed:
        for kr in range(min(p.kdhw[1], dw_kh_top(p)), 0, -1):
            t = with_fields(t, dw_step_kh=kr)
            if "dw_step_k" not in fixed:
                t = with_fields(t, dw_step_k=dw_step(chip, p, t, c0, item) or t.base_k)
            if dw_fits(chip, p, t, c0, item):
                break
    blocks = dw_blocks(p, t, c0)
    slices = p.n * p.grad_dhw[0]
    if "dw_k_parts" not in fixed:
        cores = t.dw_block_dim if "dw_block_dim" in fixed and t.deterministic and \
            chip.separated else chip.ai_core_count   # the mixed dw: a core per K part
        parts = max(1, min(slices, cores // max(blocks, 1)))
        if not t.deterministic:
            parts = balanced_parts(blocks, slices, cores)
        t = with_fields(t, dw_k_parts=parts)
    if "dw_block_dim" not in fixed:
        t = with_fields(t, dw_block_dim=max(1, min(chip.ai_core_count, blocks * t.dw_k_parts)))
    return t


def conv_tiling(chip, dx, dw, c0, item, bias_n, overrides, dw_v2=False) -> ConvBackwardTiling:
    """The user's ``overrides``, every other field derived from them, validated; ``dw_v2``:
    aclnn's choice of the V2 dw kernel (a deterministic dw on Atlas A2 always runs it)."""
    t = override(_start(chip, dx, item, bias_n), overrides, OP)
    fixed = set(overrides or ())
    if "dw_v2" not in fixed:
        t = with_fields(t, dw_v2=bool(dw_v2 or (t.deterministic and chip.separated)))
    validate_blocks(t, c0)
    t = derive(chip, t, dx, dw, c0, item, fixed)
    validate(chip, t, dx, dw, c0, item, fixed)
    return t
