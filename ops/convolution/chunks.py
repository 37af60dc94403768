"""Which rows and columns of a map, and which kernel rows, one ConvolutionBackward L1 chunk
covers: the geometry the tiling sizes L1 with and the cube kernels load by.

- A dx task is ``dx_step_m`` base blocks of M (``dx_task_m``): one L1 chunk holds the map
  rows all of them read.
- ``narrow``: where the output has one row (1-D), a dx chunk holds only the map columns of its
  M block's outputs and a dw chunk those of its grad positions, instead of the whole row.
- Padding beyond what LoadData3D pads (its padList entries are 8 bits) is held as zero rows /
  columns in dx's L1 map (``dx_pad_excess`` bounds them).
- dw N blocks (``dw_n_blocks``): across the (Cin1, kh, kw, C0) columns, or (``dw_step_kh``)
  within one channel block and a few kernel rows, so a block reaches only those kernel rows.
"""

from npusim.ops.common import ceil_div

LOAD3D_MAX_PAD = 255    # LoadData3DParamsV2 padList entries are 8 bits (isa/load.py checks it)
LOAD3D_MAX_FILTER = 255  # and filterW / filterH (the kernels do not use filterSizeW/H's +256)
LOAD3D_MAX_STRIDE = 63   # and strideW / strideH are 6 bits


def dx_task_m(t) -> int:
    """GEMM rows (H·W positions) of one dx task: ``dx_step_m`` base blocks."""
    return t.base_m * t.dx_step_m


def dx_narrow(p, t) -> bool:
    """Does the dx kernel load only the columns of each M block (``narrow``, output H = 1)?"""
    return t.narrow and p.out_dhw[1] == 1


def dx_cols_out(p, t) -> int:
    """Output columns one dx L1 chunk's map columns serve."""
    w = p.out_dhw[2]
    return min(w, dx_task_m(t)) if dx_narrow(p, t) else w


def dw_narrow(p, t) -> bool:
    """Does the dw kernel load only each position chunk's columns (``narrow``, grad H = 1)?"""
    return t.narrow and p.grad_dhw[1] == 1


def dw_cols_out(p, t) -> int:
    """Grad columns one dw L1 chunk serves."""
    wg = p.grad_dhw[2]
    return min(wg, t.dw_step_k) if dw_narrow(p, t) else wg


def dx_pad_excess(p, t) -> tuple[int, int]:
    """(rows, columns) at most that a dx chunk's window pads beyond what LoadData3D pads:
    the kernel puts them in L1 as zeros (``conv_geometry.widen``)."""
    h, w = p.out_dhw[1:]
    hrows = min(h, ceil_div(dx_task_m(t), w) + 1)
    kr = min(t.dx_step_kh, p.kdhw[1])
    pads_h = pads(p.h, h, (hrows - 1) * p.h.stride + (kr - 1) * p.h.d)
    pads_w = pads(p.w, w, (dx_cols_out(p, t) - 1) * p.w.stride + p.w.span - 1)
    return tuple(0 if relaid else sum(max(0, v - LOAD3D_MAX_PAD) for v in side)
                 for side, relaid in zip((pads_h, pads_w), dx_relay(p), strict=True))


def dx_relay(p) -> tuple[bool, bool]:
    """(H, W): does dx re-lay the map rows / columns (a transposed convolution's stride above
    what LoadData3D takes; ``ops/convolution/relay.py``)? Padding is then LoadData3D's own."""
    return p.h.stride > LOAD3D_MAX_STRIDE, p.w.stride > LOAD3D_MAX_STRIDE


def dx_zero_fill(p, t) -> bool:
    """Is dx's A1 map built on zeros (the stride expansion of an ordinary convolution, or
    padding beyond LoadData3D's)? Without FixPipe (Atlas training) it is built in UB."""
    return p.h.dil > 1 or p.w.dil > 1 or any(dx_pad_excess(p, t))


def pads(a, out: int, extent: int) -> tuple[int, int]:
    """The most padding before and after the map one chunk's window (``extent`` + 1 rows or
    columns) of a MapAxis ``a`` with ``out`` outputs sees."""
    before = min(max(0, a.off), extent)
    after = min(max(0, (out - 1) * a.stride - a.off + a.span - a.length), extent)
    return before, after


def dw_relay(p) -> tuple[bool, bool]:
    """(H, W): does dw re-lay the feature rows / columns (``ops/convolution/relay.py``) because the
    stride is above what LoadData3D takes?"""
    return p.h.stride > LOAD3D_MAX_STRIDE, p.w.stride > LOAD3D_MAX_STRIDE


def dw_block_rows(p, t, c0: int) -> int:
    """The most kernel rows one dw N block's columns reach."""
    kh, kw = p.kdhw[1:]
    if not t.dw_step_kh:
        return kh
    taps = max(1, t.base_n // c0)
    return min(kh, t.dw_step_kh, (taps - 1 + kw - 1) // kw + 1)


def dw_n_blocks(p, t, c0: int) -> list[tuple[int, int, int, int]]:
    """The dw N blocks as (first column, columns, first kernel row, kernel rows)."""
    kh, kw = p.kdhw[1:]
    f1, per_f, per_row = ceil_div(p.fc, c0), kh * kw * c0, kw * c0
    if not t.dw_step_kh:
        total = f1 * per_f
        return [(n0, min(t.base_n, total - n0), 0, kh) for n0 in range(0, total, t.base_n)]
    out = []
    for f in range(f1):
        for r0 in range(0, kh, t.dw_step_kh):
            cols = min(t.dw_step_kh, kh - r0) * per_row
            for j in range(0, cols, t.base_n):
                nn = min(t.base_n, cols - j)
                lo, hi = r0 + j // per_row, r0 + (j + nn - 1) // per_row
                out.append((f * per_f + r0 * per_row + j, nn, lo, hi - lo + 1))
    return out
