"""How one axis of an L1 chunk is laid out for LoadData3D, including re-laid rows for a stride
above what LoadData3D takes (its strideH / strideW are 6 bits: 1 to 63).

An axis is read as is (``plain_view``: the map rows of a Window, the convolution's stride,
dilation and LoadData3D padding), or re-laid (``relaid_view``): the rows output ``i`` reads
through tap ``t`` are copied into L1 row ``(i - i0) * k + t - pad_lo``, so LoadData3D walks the
L1 rows with stride ``k`` (the taps), dilation 1 and the same taps. Only rows the windows reach
are copied (a stride of 64 with a 3-row kernel copies 3 rows of every 64). Rows outside the
map are LoadData3D padding: they must come first and last in (output, tap) order, which holds
when a window ends before the next begins in the source (``stride >= (k - 1) * dilation``);
``pad_lo`` / ``pad_hi`` count them. The sums are those of the plain layout (the same source
elements meet the same weights in the same K order), so outputs stay bit-identical.
"""

from dataclasses import dataclass, replace

from npusim.dsl import DataCopyParams, data_copy
from npusim.ops.common import ceil_div
from npusim.ops.convolution.chunks import LOAD3D_MAX_STRIDE
from npusim.ops.convolution.geometry import widen


@dataclass(frozen=True)
class AxisView:
    """One axis of an L1 chunk as LoadData3D reads it, and how its rows are copied."""

    rows: int        # rows (or columns) in L1
    pad_lo: int
    pad_hi: int
    stride: int      # LoadData3D stride
    dil: int         # LoadData3D dilation
    k: int           # filter taps
    runs: tuple      # (first L1 row, first source row, rows, source step) per copied run

    @property
    def lo(self) -> int:
        """The first source row (of a plain view: its rows are consecutive from there)."""
        return self.runs[0][1] if self.runs else 0

    @property
    def hi(self) -> int:
        """One past the last source row of a plain view."""
        return self.lo + self.rows


def plain_view(win, stride: int, dil: int, k: int) -> AxisView:
    """The map rows of ``win`` (a conv_geometry.Window) read with the convolution's own stride."""
    runs = ((0, win.lo, win.rows, 1),) if win.rows else ()
    return AxisView(win.rows, win.pad_lo, win.pad_hi, stride, dil, k, runs)


def axis_view(a, t0: int, k: int, i0: int, i1: int, relaid: bool, max_pad: int) -> AxisView:
    """Outputs [i0, i1) of MapAxis ``a`` through taps [t0, t0 + k): re-laid, or plain (the
    map shifted by the first tap; padding beyond ``max_pad`` moved into the window rows,
    ``conv_geometry.widen``)."""
    if relaid:
        return relaid_view(a, t0, k, i0, i1)
    sub = replace(a, off=a.off - t0 * a.d, k=k)
    return plain_view(widen(sub.rows_for(i0, i1), max_pad), a.stride, a.d, k)


def relayable(a, k: int) -> bool:
    """Can axis ``a`` (conv_geometry.MapAxis) be re-laid with ``k`` taps per window?"""
    return a.stride >= (k - 1) * a.d and k <= LOAD3D_MAX_STRIDE


def relaid_view(a, t0: int, k: int, i0: int, i1: int) -> AxisView:
    """Outputs [i0, i1) of MapAxis ``a`` through taps [t0, t0 + k), re-laid (module doc)."""
    runs, before, after, placed = [], 0, 0, 0
    for i in range(i0, i1):
        first = i * a.stride - a.off + t0 * a.d
        lo = min(k, max(0, ceil_div(-first, a.d)))            # taps before the map
        hi = max(lo, min(k, ceil_div(a.length - first, a.d)))  # taps before its end
        if placed == 0 and lo == k:
            before += k
            continue
        before += lo if placed == 0 else 0
        if hi > lo:
            runs.append((placed, first + lo * a.d, hi - lo, a.d))
            placed += hi - lo
        after += k - hi
    return AxisView(placed, before, after, k, 1, k, tuple(runs))


def pads_of(a, t0: int, k: int, outputs: int) -> tuple[int, int]:
    """The padding (rows before, rows after) a re-laid view of all ``outputs`` has."""
    v = relaid_view(a, t0, k, 0, outputs)
    return v.pad_lo, v.pad_hi


def copy_view(dst, src, blocks: int, hv: AxisView, wv: AxisView, hw, c0: int) -> None:
    """GM NC1HWC0 ``blocks`` channel blocks (``src`` at the first) -> L1 [blocks, H, W, C0],
    the rows of ``hv`` and columns of ``wv``: one DataCopy per channel block, row run and
    column run (a run of columns ``step`` apart is copied a column at a time)."""
    hs, ws = hw
    for c in range(blocks):
        for hr0, hs0, hn, hstep in hv.runs:
            for wr0, ws0, wn, wstep in wv.runs:
                pieces = [(wr0, ws0, wn)] if wstep == 1 else [
                    (wr0 + j, ws0 + j * wstep, 1) for j in range(wn)]
                for d0, s0, n in pieces:
                    at = ((c * hv.rows + hr0) * wv.rows + d0) * c0
                    data_copy(dst[at] if at else dst, src[((c * hs + hs0) * ws + s0) * c0],
                              DataCopyParams(block_count=hn, block_len=n,
                                             src_stride=hstep * ws - n,
                                             dst_stride=wv.rows - n))
