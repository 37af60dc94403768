"""ConvolutionBackward's shapes: the conv parameters normalised to 3D, and the two GEMM problems.

1D is viewed as 3D with D = H = 1, 2D with D = 1 (aclnn views 1D as 2D, kernels.md §2(b)2; the
3D view lets one kernel serve all three). Padding is kept per side (``lo``, ``hi``) so the 2D
4-value form (top, bottom, left, right) needs nothing special.

``DxProblem`` describes gradInput as a GEMM over one (batch, group, depth) slice at a time:
M = H·W output positions, N = Cin per group, K = (kd, Cout1, kh, kw, C0) read by img2col from a
map in L1. For an ordinary convolution the map is gradOutput zero-dilated by the stride, read
with stride 1 and the backprop pads (k-1)·d - pad, and the weight is rotated in H and W
(kernels.md §2(c)); for a transposed convolution gradInput is the forward convolution of
gradOutput (§2(b)5): the map is gradOutput itself, read with the stride and the forward pads,
and the weight is not rotated. ``DwProblem`` is gradWeight = gradᵀ · img2col(feature), with
(feature, grad) = (input, gradOutput), or (gradOutput, input) when transposed.

A grouped gradWeight runs on *enlarged* groups, as CANN's dw kernels do: ``enlarge`` real groups
side by side make one GEMM whose channels fill the cube's 16-lane blocks (a depthwise layer's
one channel per group would otherwise be padded to 16), and only the diagonal blocks of its
result are kept (``group_enlarge``).
"""

from dataclasses import dataclass
from math import lcm

from npusim.ops.common import ceil_div, round_up

BLOCK_CUBE = 16   # the cube's M/N fractal edge, the unit CANN's group enlargement fills


@dataclass(frozen=True)
class Axis:
    """One spatial axis of a convolution: in/out lengths and the window parameters."""

    inp: int       # input length (gradInput's)
    out: int       # gradOutput's length
    k: int         # kernel length
    s: int         # stride
    d: int         # dilation
    lo: int        # padding before
    hi: int        # padding after
    op: int = 0    # output padding (transposed only)

    @property
    def span(self) -> int:
        return (self.k - 1) * self.d + 1


def conv_out(length: int, k: int, s: int, d: int, lo: int, hi: int) -> int:
    return (length + lo + hi - (k - 1) * d - 1) // s + 1


def transposed_out(length: int, k: int, s: int, d: int, lo: int, hi: int, op: int) -> int:
    return (length - 1) * s - lo - hi + (k - 1) * d + op + 1


@dataclass(frozen=True)
class Window:
    """Rows [lo, hi) of a map, read with ``pad_lo`` / ``pad_hi`` rows of padding around."""

    lo: int
    hi: int
    pad_lo: int
    pad_hi: int

    @property
    def rows(self) -> int:
        return max(0, self.hi - self.lo)


def window(e_lo: int, e_hi: int, length: int) -> Window:
    """The part of [e_lo, e_hi) inside a map of ``length`` rows, and the padding outside it."""
    lo, hi = max(e_lo, 0), min(e_hi, length)
    if hi <= lo:
        return Window(0, 0, 0, 0)
    return Window(lo, hi, lo - e_lo, e_hi - hi)


def widen(win: Window, max_pad: int) -> Window:
    """``win`` with the padding beyond ``max_pad`` per side moved into the window: its rows
    then run past the map (lo < 0 or hi > length), and the kernel zero-fills them in L1."""
    extra_lo, extra_hi = max(0, win.pad_lo - max_pad), max(0, win.pad_hi - max_pad)
    if not (extra_lo or extra_hi) or not win.rows:
        return win
    return Window(win.lo - extra_lo, win.hi + extra_hi, win.pad_lo - extra_lo,
                  win.pad_hi - extra_hi)


@dataclass(frozen=True)
class MapAxis:
    """How img2col walks one axis of an L1 map: output i, tap t read map row i*stride - off +
    t*d, in a map whose rows are the source rows zero-dilated by ``dil``."""

    length: int    # map length in dilated coordinates
    src: int       # source length (undilated)
    dil: int       # zero dilation of the source (the stride for an ordinary dx)
    stride: int    # img2col stride
    off: int       # map row of output 0, tap 0 is -off
    k: int
    d: int

    @property
    def span(self) -> int:
        return (self.k - 1) * self.d + 1

    def rows_for(self, i0: int, i1: int) -> Window:
        """The map rows outputs [i0, i1) read."""
        e_lo = i0 * self.stride - self.off
        e_hi = (i1 - 1) * self.stride - self.off + (self.k - 1) * self.d + 1
        return window(e_lo, e_hi, self.length)


@dataclass(frozen=True)
class DxProblem:
    """gradInput as a GEMM per (n, g, depth) slice; see the module docstring."""

    n: int
    groups: int
    kc: int            # K channels per group (gradOutput's: the map's channels)
    nc: int            # N channels per group (gradInput's)
    map_d: int         # map depth (source slices)
    out_dhw: tuple     # gradInput (D, H, W)
    map_hw: tuple      # source (H, W) of the map before dilation
    kdhw: tuple        # kernel (kD, kH, kW)
    h: MapAxis
    w: MapAxis
    depth: Axis
    transposed: bool

    def depth_taps(self, di: int) -> list[tuple[int, int]]:
        """(kd, source slice) pairs feeding output slice ``di``, in increasing kd."""
        a, taps = self.depth, []
        for kd in range(a.k):
            if self.transposed:
                q = di * a.s - a.lo + kd * a.d
            else:
                num = di + a.lo - kd * a.d
                if num % a.s:
                    continue
                q = num // a.s
            if 0 <= q < self.map_d:
                taps.append((kd, q))
        return taps


@dataclass(frozen=True)
class DwProblem:
    """gradWeight = gradᵀ · img2col(feature) per (group, kd); see the module docstring."""

    n: int
    groups: int
    gc: int            # grad channels per group (GEMM M)
    fc: int            # feature channels per group
    grad_dhw: tuple
    feat_dhw: tuple
    kdhw: tuple
    h: MapAxis
    w: MapAxis
    depth: Axis
    enlarge: int = 1   # real groups per (enlarged) group; ``groups`` counts enlarged ones

    def feature_slice(self, kd: int, dg: int) -> int:
        """The feature depth slice grad slice ``dg`` reads through tap ``kd``, or -1."""
        a = self.depth
        q = dg * a.s - a.lo + kd * a.d
        return q if 0 <= q < self.feat_dhw[0] else -1


def dx_problem(n, groups, cin, cout, axes, transposed) -> DxProblem:
    """gradInput's problem from the normalised axes (D, H, W)."""
    dep, ah, aw = axes
    if transposed:   # forward conv of gradOutput: map = gradOutput, channels Cout
        maps = [MapAxis(a.out, a.out, 1, a.s, a.lo, a.k, a.d) for a in (ah, aw)]
    else:            # correlation of the dilated gradOutput with the rotated weight
        maps = [MapAxis((a.out - 1) * a.s + 1, a.out, a.s, 1, (a.k - 1) * a.d - a.lo, a.k, a.d)
                for a in (ah, aw)]
    return DxProblem(n=n, groups=groups, kc=cout // groups, nc=cin // groups, map_d=dep.out,
                     out_dhw=(dep.inp, ah.inp, aw.inp), map_hw=(ah.out, aw.out),
                     kdhw=(dep.k, ah.k, aw.k), h=maps[0], w=maps[1], depth=dep,
                     transposed=transposed)


def forward_problem(n, cin, cout, axes) -> DxProblem:
    """The forward convolution (aclnnConvolution, groups = 1) as the dx GEMM of a transposed
    convolution (kernels.md §2(b)5): the map is the input, read with the stride, dilation and
    pads, K = input channels, N = output channels, the weight not rotated."""
    dep, ah, aw = axes
    maps = [MapAxis(a.inp, a.inp, 1, a.s, a.lo, a.k, a.d) for a in (ah, aw)]
    return DxProblem(n=n, groups=1, kc=cin, nc=cout, map_d=dep.inp,
                     out_dhw=(dep.out, ah.out, aw.out), map_hw=(ah.inp, aw.inp),
                     kdhw=(dep.k, ah.k, aw.k), h=maps[0], w=maps[1], depth=dep,
                     transposed=True)


def group_enlarge(groups: int, gc: int, fc: int) -> int:
    """How many real groups one enlarged dw group holds: the least multiple making both
    channel counts whole 16-channel blocks, at most ``groups`` (ops-nn
    conv3d_backprop_filter_v2 ``CalcRealGroupMagFactor``, arch35 tiling; the arch22 tiling
    for 910B reads the same ``real_g`` and ``cin1_g`` from TBE's group calculation)."""
    if groups <= 1 or not gc or not fc:
        return 1
    mag = lcm(lcm(fc, BLOCK_CUBE) // fc, lcm(gc, BLOCK_CUBE) // gc)
    return min(mag, groups)


def dw_problem(n, groups, cin, cout, axes, transposed, enlarge=False) -> DwProblem:
    """gradWeight's problem: feature = input (or gradOutput when transposed); with
    ``enlarge``, on enlarged groups (``group_enlarge``; the last may hold fewer real groups)."""
    dep, ah, aw = axes
    if transposed:
        feat = (dep.out, ah.out, aw.out)
        grad = (dep.inp, ah.inp, aw.inp)
        gc, fc = cin // groups, cout // groups
    else:
        feat = (dep.inp, ah.inp, aw.inp)
        grad = (dep.out, ah.out, aw.out)
        gc, fc = cout // groups, cin // groups
    maps = [MapAxis(f, f, 1, a.s, a.lo, a.k, a.d) for f, a in zip(feat[1:], (ah, aw),
                                                                   strict=True)]
    e = group_enlarge(groups, gc, fc) if enlarge else 1
    return DwProblem(n=n, groups=ceil_div(groups, e), gc=e * gc, fc=e * fc, grad_dhw=grad,
                     feat_dhw=feat, kdhw=(dep.k, ah.k, aw.k), h=maps[0], w=maps[1], depth=dep,
                     enlarge=e)


def c1_of(channels: int, c0: int) -> int:
    return ceil_div(channels, c0)


def pad16(channels: int) -> int:
    return round_up(channels, 16)
