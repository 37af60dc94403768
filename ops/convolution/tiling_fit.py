"""How much of L1 and UB a convolution tiling needs, and how many steps and tasks it makes:
the sizes ``tiling.py`` derives from and ``tiling_checks.py`` validates against."""

from npusim.ops.common import ceil_div, override, round_up
from npusim.ops.convolution.args import OP
from npusim.ops.convolution.chunks import (
    LOAD3D_MAX_FILTER,
    dw_block_rows,
    dw_cols_out,
    dw_n_blocks,
    dw_relay,
    dx_cols_out,
    dx_pad_excess,
    dx_relay,
    dx_task_m,
    dx_zero_fill,
)
from npusim.ops.convolution.relay import LOAD3D_MAX_STRIDE

MAX_DW_STEP_TILES = 8   # base_k tiles per dw L1 chunk at most


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


def balanced_parts(blocks: int, slices: int, cores: int) -> int:
    """K parts of the dw split: the fewest that leave the busiest core the fewest (block,
    slice) pairs when blocks x parts tasks go round-robin over the cores."""
    def busiest(parts):
        return ceil_div(blocks * parts, cores) * ceil_div(slices, parts)
    return min(range(1, max(1, min(slices, cores)) + 1), key=lambda k: (busiest(k), k))


def dw_kh_top(p) -> int:
    """The most kernel rows one dw N block may reach."""
    return kh_top(p.h, dw_relay(p)[0])


def kh_top(a, relaid: bool) -> int:
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


def dx_fits(chip, p, t, c0, item) -> bool:
    a1 = dx_l1_bytes(p, t, c0, item)[0]
    return (dx_l1_total(p, t, c0, item) <= chip.l1_bytes
            and t.dx_step_m * t.base_m * t.base_n * 4 <= chip.l0c_bytes
            and dx_ub_fits(chip, p, t, a1))


def dw_fits(chip, p, t, c0, item) -> bool:
    a1, b1 = dw_l1_bytes(p, t, c0, item)
    return (t.l1_buffers * (a1 + b1) <= chip.l1_bytes
            and t.dw_step_m * t.base_m * t.base_n * 4 <= chip.l0c_bytes)


def dx_tasks(p, t, c0) -> int:
    hw = p.out_dhw[1] * p.out_dhw[2]
    return max(1, p.n * p.groups * p.out_dhw[0] * ceil_div(hw, dx_task_m(t))
               * ceil_div(round_up(p.nc, 16), t.dx_base_n))


def dw_block_grid(p, t, c0) -> tuple[int, int]:
    """(M blocks, N blocks) of one (group, kd) dw GEMM."""
    mbs = ceil_div(ceil_div(p.gc, c0), t.base_m * t.dw_step_m // c0)
    return mbs, len(dw_n_blocks(p, t, c0))


def dw_blocks(p, t, c0) -> int:
    mbs, nbs = dw_block_grid(p, t, c0)
    return p.groups * p.kdhw[0] * mbs * nbs


def dx_step(chip, p, t, c0, item) -> int:
    """The most channel blocks per dx L1 chunk that fit (0: not even one); one when the chunk
    takes only some kernel rows (K then runs channel block by channel block)."""
    top = ceil_div(p.kc, c0) if t.dx_step_kh >= p.kdhw[1] else 1
    for step in range(top, 0, -1):
        if dx_fits(chip, p, with_fields(t, dx_step_k1=step), c0, item):
            return step
    return 0


def dw_step(chip, p, t, c0, item) -> int:
    """The most grad positions per dw L1 chunk that fit (0: not even base_k)."""
    if t.base_k <= 0:
        return 0
    positions = p.grad_dhw[1] * p.grad_dhw[2]
    top = min(round_up(positions, t.base_k), MAX_DW_STEP_TILES * t.base_k)
    for step in range(top, 0, -t.base_k):
        if dw_fits(chip, p, with_fields(t, dw_step_k=step), c0, item):
            return step
    return 0


def with_fields(t, **fields):
    return override(t, fields, OP)
