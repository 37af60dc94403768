"""The cube unit: ``Mmad`` (C = A·B or C += A·B from L0A/L0B into L0C), and the fractal layouts.

Data formats (Ascend C ``Mmad`` API, atlasascendc_api_07_0249, and the asc-devkit doc
``矩阵计算（ISASI）/Mmad计算/Mmad.md``): every operand is cut into fractals of 512 bytes (C: 256
elements) and the fractals are laid out one after the other.

- A (m x k) in L0A is **ZZ** ("小Z大Z"): fractals of 16 x k0, k0 = 32 B / sizeof(A) (fp16/bf16 16,
  fp32 8, int8 32), row-major inside, fractals row-major: ``[m1, k1, 16, k0]``.
- B (k x n) in L0B is **ZN** ("小N大Z"): fractals of k0 x 16, column-major inside, fractals
  row-major: ``[k1, n1, 16 (n), k0 (k)]``.
- C (m x n) in L0C is **NZ** ("小Z大N"): fractals of 16 x 16, row-major inside, fractals
  column-major: ``[n1, m1, 16, 16]``.
- L1 holds NZ data: for A ``[k1, m1, 16, k0]`` (what ``DataCopyNd2Nz`` writes).

The doc's 4 x 4 example (2 x 2 fractals) fixes the orders: A 0,1,4,5,2,3,6,7,...; B 0,4,1,5,
2,6,3,7,...; C 0,1,4,5,8,9,12,13,2,3,... ``fractal_view`` below implements exactly these.

Numerics, the documented accumulation order (Huawei's own Mmad reference model,
asc-devkit ``examples/.../load_data_l12l0/scripts/mmad.py``, accumulates one k0-block dot product
at a time into C; we fix the rounding of each step):

1. The k axis is cut into steps of k0 elements, in increasing k (the last step may be short:
   padded k columns are ignored, as are padded rows of A and columns of B).
2. Within a step, the products a[i,j]·b[j,l] are formed exactly in float64 (true for fp16, bf16,
   HF32 and fp32 operands) and added in float64 in increasing j, starting from the first product.
   For fp16/bf16/HF32 data of ordinary range this sum is exact; for fp32 operands a float64 add
   may round, far below fp32's resolution. (The simulator lets BLAS form the sums it can prove
   exact, where order cannot matter, and adds the others in order: same bits, ~15x faster.)
3. The step sum is rounded once to fp32 (round to nearest even) and added to the fp32
   accumulator with an fp32 add (round to nearest even). With ``init`` (cmatrixInitVal) the
   accumulator starts from +0.0, otherwise from the fp32 value already in L0C.

int8 x int8 sums exactly in int32 (wrapping on overflow). HF32 (``SetHF32Mode``, A2 only, docs
``Mmad计算关键特性说明/HF32.md``): the fp32 values of A and B are first rounded to
``chip.hf32_mantissa_bits`` mantissa bits (the Ascend 950 doc says 10 bits for that chip, so A2's
width differs; 11 is the chip file's assumption). ``hf32_trans_mode`` False rounds to nearest
even (HF32TransMode::NEAREST_EVEN); True rounds ties away from zero, as ``Matmul::SetHF32``'s
transMode 1 states ("round to the nearest tie away from zero"); SetHF32TransMode's own doc words
NEAREST_ZERO as "rounded toward zero", a conflict we note and do not resolve.

GEMV (``Mmad计算关键特性说明/GEMV.md``): when m == 1 the A2 cube reads A as a plain vector of
k contiguous elements instead of a ZZ tile. We apply this on every chip (assumed for Atlas
training). Kernels that keep a padded ZZ tile pass m = 2, as catlass does
(``commonMadParams.m = real_n == 1 ? 2 : real_n``).

``k_direction_align`` (MmadParams.kDirectionAlign, fp32 only): L0A/L0B hold k padded to a
multiple of 16 instead of 8, i.e. 2·ceil(k/16) k-fractals.

Cost (PTO cube model, hardware.md 2.2): head ``head_cycles`` (only when the M pipe was idle),
body ceil(m/16)·ceil(k/k0)·ceil(n/16) fractals x cycles per fractal (b16, b32 or hf32; int8 uses
the b16 figure, one 16x16x32 fractal per cycle). Whole fractals are charged for padded shapes.

Not modelled: bias from the bias table (cmatrixSource / the bias prototype), unitFlag overlap
with FixPipe, fp16 output in L0C (Atlas training's f16 x f16 -> f16), int4 and sparse Mmad.
Padded rows and columns of C are left untouched (hardware computes them from padding).
"""

from dataclasses import dataclass, field
from functools import lru_cache
from typing import ClassVar

import numpy as np

from npusim.dtypes import name_of
from npusim.errors import NpusimError
from npusim.isa.base import Instr, Pipe, region

FRACTAL_ROWS = 16        # rows of an A fractal, columns of a B fractal, both sides of C (MMAD)
C0_BYTES = 32            # bytes of one fractal row: k0 = C0_BYTES / sizeof(T) (MMAD)
FRACTAL_BYTES = FRACTAL_ROWS * C0_BYTES
MAX_MNK = 4095           # MmadParams m, n, k in [0, 4095] (MMAD)
CHUNK_ELEMENTS = 1 << 17  # float64 elements of step sums formed at once (cache-sized)
SIGNIFICANT_BITS = {"float16": 11, "bfloat16": 8, "float32": 24}   # IEEE / bf16 formats

# (A dtype name, C dtype name) pairs Mmad accepts
MMAD_DTYPES = {"float16": "float32", "bfloat16": "float32", "float32": "float32",
               "int8": "int32"}

# layout name -> (fractals row-major?, inside row-major?)
LAYOUTS = {"ZZ": (True, True), "NZ": (False, True), "ZN": (True, False)}


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def fractal_view(flat: np.ndarray, r1: int, c1: int, fr: int, fc: int, layout: str):
    """A (r1, fr, c1, fc) view of ``flat`` holding an (r1·fr) x (c1·fc) matrix in ``layout``.

    Index it as [row // fr, row % fr, col // fc, col % fc]. No copy.
    """
    outer_rows, inner_rows = LAYOUTS[layout]
    flat = flat[:r1 * c1 * fr * fc]
    if inner_rows:
        shape = (r1, c1, fr, fc) if outer_rows else (c1, r1, fr, fc)
        order = (0, 2, 1, 3) if outer_rows else (1, 2, 0, 3)
    else:
        shape = (r1, c1, fc, fr) if outer_rows else (c1, r1, fc, fr)
        order = (0, 3, 1, 2) if outer_rows else (1, 3, 0, 2)
    return flat.reshape(shape).transpose(order)


def read_fractal(flat, rows: int, cols: int, r1: int, c1: int, fr: int, fc: int, layout: str):
    """The rows x cols matrix stored in ``layout`` (a copy)."""
    view = fractal_view(flat, r1, c1, fr, fc, layout)
    return view.reshape(r1 * fr, c1 * fc)[:rows, :cols]


def write_fractal(flat, x: np.ndarray, r1: int, c1: int, fr: int, fc: int, layout: str) -> None:
    """Store matrix ``x`` in ``layout``; padding rows and columns keep their bytes."""
    view = fractal_view(flat, r1, c1, fr, fc, layout)
    rows, cols = x.shape
    if rows == r1 * fr and cols == c1 * fc:
        view[...] = x.reshape(r1, fr, c1, fc)
        return
    full = np.array(view, order="C")
    full.reshape(r1 * fr, c1 * fc)[:rows, :cols] = x
    view[...] = full


def round_hf32(x: np.ndarray, mantissa_bits: int, ties_away: bool) -> np.ndarray:
    """fp32 values rounded to ``mantissa_bits`` mantissa bits (same exponent range).

    Ties go to even, or away from zero when ``ties_away``. Inf and NaN pass unchanged; a value
    that rounds past the largest finite number becomes inf.
    """
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    drop = 23 - mantissa_bits
    half = np.uint32(1 << (drop - 1))
    keep = np.uint32(~((1 << drop) - 1) & 0xFFFFFFFF)
    if ties_away:
        add = half
    else:
        add = half - np.uint32(1) + ((bits >> np.uint32(drop)) & np.uint32(1))
    rounded = (bits + add) & keep
    finite = (bits & np.uint32(0x7F800000)) != np.uint32(0x7F800000)
    return np.where(finite, rounded, bits).view(np.float32)


MAGNITUDE = np.int64(0x7FFFFFFFFFFFFFFF)   # float64 bits without the sign: ordered as |x|
INF_BITS = np.int64(0x7FF0000000000000)
NORMAL_BITS = np.int64(1 << 52)            # the smallest normal float64's bits
UNSIGNED = {2: np.uint16, 4: np.uint32}    # the bits of fp16 / bf16 and of fp32


def _span(top: np.ndarray, low: np.ndarray, bits: int) -> np.ndarray:
    """e_max - e_min + bits (see _slice_span) from the float64 magnitude bits (int64) of each
    slice's largest value and of its smallest nonzero one (anything when all are zero).

    The exponents are read from the bits: a normal float64 with biased exponent E has frexp
    exponent E - 1022, so the difference of the biased exponents is the difference of frexp's.
    float64 subnormals (never the widening of fp16, bf16 or fp32 data) go through frexp.
    """
    if ((low < NORMAL_BITS) & (top > 0)).any():
        span = np.frexp(top.view(np.float64))[1] - np.frexp(low.view(np.float64))[1] + bits
    else:
        span = (top >> 52) - (low >> 52) + bits
    return np.where(top == 0, 0, np.where(top >= INF_BITS, 999, span))


def _extremes(x: np.ndarray, axis, unsigned, sign) -> tuple[np.ndarray, np.ndarray]:
    """Per slice, the largest magnitude and the smallest nonzero one, as unsigned bits."""
    mag = x.view(unsigned) & ~sign
    if axis == x.ndim - 1:      # numpy reduces a short inner axis slowly: make it the middle
        mag, axis = np.ascontiguousarray(mag.swapaxes(-1, -2)), axis - 1
    one = unsigned(1)   # zeros wrap to the largest value: the minimum is the smallest nonzero
    return np.maximum.reduce(mag, axis=axis), np.minimum.reduce(mag - one, axis=axis) + one


def _slice_span(x: np.ndarray, axis, bits: int) -> np.ndarray:
    """Per slice along ``axis``: e_max - e_min + bits, where every |value| < 2**e_max and every
    nonzero one is at least 2**(e_min - 1) and has ``bits`` significant bits, so a multiple of
    2**(e_min - bits). 0 for an all-zero slice, 999 for one holding inf or nan.

    ``x`` is float64, or fp16, bf16 or fp32 (read in its own, narrower bits: the same spans).
    The magnitudes are compared as unsigned integers (the bits of |x| order as |x| does); the
    two extremes of each slice are then widened to float64."""
    if x.dtype != np.float64:
        unsigned = UNSIGNED[x.dtype.itemsize]
        top, low = _extremes(x, axis, unsigned, unsigned(1 << (8 * x.dtype.itemsize - 1)))
        return _span(*(v.view(x.dtype).astype(np.float64).view(np.int64) for v in (top, low)),
                     bits)
    top, low = _extremes(x, axis, np.uint64, np.uint64(1 << 63))
    return _span(top.view(np.int64), low.view(np.int64), bits)


@lru_cache(maxsize=8)
def _exponent_tables(dtype: np.dtype, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """(top, low) over every magnitude bit pattern of a 16-bit float (sign bit clear), such that
    ``top[t] - low[l]`` is _slice_span's value for a slice whose largest magnitude has bits t and
    whose smallest nonzero one has bits l: e_max - e_min + bits; 0 for an all-zero slice
    (t = l = 0); at least 999 (not exactly 999) for a slice holding inf or nan."""
    mags = np.arange(1 << 15, dtype=np.uint16)
    with np.errstate(invalid="ignore", over="ignore"):
        wide = mags.view(dtype).astype(np.float64)
    finite = np.isfinite(wide)
    exps = np.frexp(np.where(finite, wide, 1.0))[1].astype(np.int32)
    top, low = exps + bits, np.where(finite, exps, 0)
    top[0] = low[0] = 0
    top[~finite] = 999 + low.max()
    return top, low


def _spans16(sa: np.ndarray, sb: np.ndarray, full: int, k0: int, bits: int):
    """_slice_span of every k-step's rows of A (full x m) and columns of B (full x n) for 16-bit
    float operands (fp16, bf16): A's first ``full·k0`` columns transposed beside B's rows, so
    both reduce in one pass (see _bit_spans)."""
    m, n, rows = sa.shape[0], sb.shape[1], full * k0
    mag = np.empty((rows, m + n), np.uint16)
    np.copyto(mag[:, :m], sa.view(np.uint16)[:, :rows].T)
    np.copyto(mag[:, m:], sb.view(np.uint16)[:rows])
    span = _bit_spans(mag.reshape(full, k0, m + n), sa.dtype, bits)
    return span[:, :m], span[:, m:]


def _bit_spans(bits16: np.ndarray, dtype: np.dtype, bits: int) -> np.ndarray:
    """_slice_span along axis 1 of the raw bits (uint16, overwritten) of 16-bit floats, read
    with one table lookup per extreme (see _exponent_tables)."""
    bits16 &= np.uint16(0x7FFF)
    top = np.maximum.reduce(bits16, axis=1)
    bits16 -= np.uint16(1)   # zeros wrap to the largest value: the minimum is the smallest nonzero
    low = np.minimum.reduce(bits16, axis=1)
    low += np.uint16(1)
    top_of, low_of = _exponent_tables(dtype, bits)
    return top_of.take(top) - low_of.take(low)


def _sequential(a3: np.ndarray, b3: np.ndarray) -> np.ndarray:
    """Step sums (steps x m x n) added in float64 in increasing k from the first product."""
    acc = a3[:, :, 0, None] * b3[:, None, 0, :]
    for j in range(1, a3.shape[2]):
        acc += a3[:, :, j, None] * b3[:, None, j, :]
    return acc


def _room(kk: int) -> int:
    """Bits a step of ``kk`` products leaves for the operands' spans (53 minus carries)."""
    return 53 - (max(kk, 1) - 1).bit_length()     # 53 - ceil(log2(kk))


def step_sums(a3: np.ndarray, b3: np.ndarray, bits: int = 53) -> np.ndarray:
    """The float64 step sums of a3 (steps x m x kk) · b3 (steps x kk x n), in the order of
    rule 2 of the module docstring; ``bits``: significant bits of the operands' dtype.

    Where a step's products and every partial sum of them fit in float64's 53 bits (checked
    per step, row and column from the operands' exponents) each add is exact, so any order
    gives the same sum and BLAS computes it; the other elements are summed in order.
    """
    return _sums(a3, b3, _slice_span(a3, 2, bits), _slice_span(b3, 1, bits),
                 _room(a3.shape[2]))


PAIR_LIMIT = 1 << 16      # candidate (row, column) pairs the inexact search tests at once


def _sums(a3, b3, ra: np.ndarray, rb: np.ndarray, room: int) -> np.ndarray:
    """step_sums given the spans of every step's rows of A (steps x m) and columns of B
    (steps x n)."""
    ok = ra.max(axis=1, initial=0) + rb.max(axis=1, initial=0) <= room
    out = np.matmul(a3, b3)
    if ok.all():
        return out
    bad = np.flatnonzero(~ok)
    q, i, j = _inexact(ra[bad], rb[bad], room)
    if not q.size:
        return out
    if 4 * q.size > bad.size * ra.shape[1] * rb.shape[1]:   # mostly inexact: all in order
        out[bad] = _sequential(a3[bad], b3[bad])
    else:   # each such element's products, summed in order (accumulate adds left to right)
        s = bad[q]
        out[s, i, j] = np.add.accumulate(a3[s, i, :] * b3[s, :, j], axis=1)[:, -1]
    return out


def _inexact(ra: np.ndarray, rb: np.ndarray, room: int):
    """(step, row, column) of the elements whose sums may be inexact: the spans of the row of A
    and the column of B exceed ``room`` together. Such a row fails with its step's widest
    column and such a column with its widest row: only those are paired."""
    rows = ra + rb.max(axis=1, keepdims=True) > room
    cols = rb + ra.max(axis=1, keepdims=True) > room
    qr, ir = np.nonzero(rows)
    qc, jc = np.nonzero(cols)
    if qr.size * qc.size <= PAIR_LIMIT:
        x, y = np.nonzero((qr[:, None] == qc[None, :])
                          & (ra[qr, ir][:, None] + rb[qc, jc][None, :] > room))
        return qr[x], ir[x], jc[y]
    found = []
    for q in np.flatnonzero(rows.any(axis=1) & cols.any(axis=1)).tolist():
        i, j = np.flatnonzero(rows[q]), np.flatnonzero(cols[q])
        ii, jj = np.nonzero(ra[q, i][:, None] + rb[q, j][None, :] > room)
        found.append((np.full(ii.size, q), i[ii], j[jj]))
    if not found:
        return qr[:0], qr[:0], qr[:0]
    return tuple(np.concatenate(parts) for parts in zip(*found, strict=True))


def step_partials(a: np.ndarray, b: np.ndarray, k0: int, bits: int = 53, raw=None):
    """Yield, in increasing k, each k-step's sums rounded to fp32 (an m x n array).

    ``a`` (m x k) and ``b`` (k x n) are float64 holding values of ``bits`` significant bits.
    Within a step the products are added in float64 in increasing k, starting from the first
    product (see the module docstring). The spans of every step's rows and columns are found
    once for the whole of A and B (from ``raw``, the same A and B in their own dtype, when
    given: fewer bytes to read); the sums are then formed a cache-sized chunk of steps at a
    time (the chunking changes no bit: each element's sum is exact or taken in order).
    """
    m, k = a.shape
    n = b.shape[1]
    full = k // k0
    if full:
        sa, sb = raw if raw is not None else (a, b)
        if sa.dtype.itemsize == 2 and sb.dtype == sa.dtype and sa.dtype.name in SIGNIFICANT_BITS:
            ra, rb = _spans16(sa, sb, full, k0, bits)
        else:   # A's rows per step k-major (a copy in A's own dtype): reductions run over m
            ra = _slice_span(sa[:, :full * k0].T.reshape(full, k0, m), 1, bits)
            rb = _slice_span(sb[:full * k0].reshape(full, k0, n), 1, bits)
    per_chunk = max(1, CHUNK_ELEMENTS // max(1, m * n))
    for s0 in range(0, full, per_chunk):
        s1 = min(full, s0 + per_chunk)
        a3 = a[:, s0 * k0:s1 * k0].reshape(m, s1 - s0, k0).transpose(1, 0, 2)
        b3 = b[s0 * k0:s1 * k0].reshape(s1 - s0, k0, n)
        yield from _sums(a3, b3, ra[s0:s1], rb[s0:s1], _room(k0)).astype(np.float32)
    if k % k0:
        tail = step_sums(a[None, :, full * k0:], b[None, full * k0:], bits)
        yield tail[0].astype(np.float32)


def add_step_sums(acc: np.ndarray, a3: np.ndarray, b3: np.ndarray, ra, rb) -> None:
    """acc (fp32, m x n) += each step's sums of a3 (steps x m x kk) · b3 (steps x kk x n),
    rounded to fp32, in increasing step; ra, rb: the spans of the steps' rows and columns.
    The rules of step_partials; the elements that may be inexact are summed in order first,
    then each step's product goes through one m x n float64 buffer (stays in cache)."""
    steps, m, kk = a3.shape
    room = _room(kk)
    ok = ra.max(axis=1, initial=0) + rb.max(axis=1, initial=0) <= room
    fix = None
    if not ok.all():
        bad = np.flatnonzero(~ok)
        q, i, j = _inexact(ra[bad], rb[bad], room)
        if q.size:
            s = bad[q]
            fix = (s, i, j, np.add.accumulate(a3[s, i, :] * b3[s, :, j], axis=1)[:, -1])
    buf = np.empty((m, b3.shape[2]))
    for step in range(steps):
        np.matmul(a3[step], b3[step], out=buf)
        if fix is not None:
            here = fix[0] == step
            buf[fix[1][here], fix[2][here]] = fix[3][here]
        np.add(acc, buf, out=acc, dtype=np.float32)   # rounded to fp32, an fp32 add


@dataclass(frozen=True, kw_only=True, slots=True)
class Mmad(Instr):
    """Mmad(c, a, b): C (L0C, NZ) = or += A (L0A, ZZ) · B (L0B, ZN); see the module docstring.

    ``init`` is MmadParams.cmatrixInitVal (True: C starts from 0). ``hf32`` and
    ``hf32_trans_mode`` are the SetHF32Mode / SetHF32TransMode state when the Mmad was issued;
    ``hf32_mantissa_bits`` is the chip's HF32 width (validate checks it against the chip).
    """

    name: ClassVar[str] = "mmad"
    pipe: ClassVar[str] = Pipe.M
    c: object
    a: object
    b: object
    m: int
    n: int
    k: int
    init: bool = True
    hf32: bool = False
    hf32_trans_mode: bool = False
    k_direction_align: bool = False
    hf32_mantissa_bits: int = 0
    # geometry, computed once in __post_init__ (see _geometry)
    k0: int = field(init=False, repr=False, compare=False)
    k1: int = field(init=False, repr=False, compare=False)
    a_bytes: int = field(init=False, repr=False, compare=False)
    b_bytes: int = field(init=False, repr=False, compare=False)
    c_bytes: int = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        self._check_operands()
        for name, value in self._geometry().items():
            object.__setattr__(self, name, value)
        if not (self.m and self.n):
            return
        self.a.check(self.a_bytes, "mmad read of A")
        self.b.check(self.b_bytes, "mmad read of B")
        self.c.check(self.c_bytes, "mmad write of C")

    def _check_operands(self) -> None:
        for what, t, kind in (("c", self.c, "L0C"), ("a", self.a, "L0A"), ("b", self.b, "L0B")):
            if t.kind != kind:
                raise NpusimError(f"mmad: operand {what} must be in {kind}, got {t.kind}")
        for what, v in (("m", self.m), ("n", self.n), ("k", self.k)):
            if not 0 <= v <= MAX_MNK:
                raise NpusimError(f"mmad: {what} = {v} out of range; allowed 0..{MAX_MNK}")
        a_name, b_name, c_name = (name_of(t.dtype) for t in (self.a, self.b, self.c))
        if a_name not in MMAD_DTYPES or b_name != a_name or c_name != MMAD_DTYPES[a_name]:
            pairs = ", ".join(f"{x} x {x} -> {y}" for x, y in MMAD_DTYPES.items())
            raise NpusimError(f"mmad: {a_name} x {b_name} -> {c_name} not supported; "
                              f"allowed: {pairs}")
        if (self.hf32 or self.k_direction_align) and a_name != "float32":
            raise NpusimError(f"mmad: HF32 mode and k_direction_align need float32 inputs, "
                              f"got {a_name}")
        if self.hf32 and not 0 < self.hf32_mantissa_bits < 23:
            raise NpusimError(f"mmad: HF32 mode needs hf32_mantissa_bits in 1..22 (the chip's "
                              f"hf32_mantissa_bits), got {self.hf32_mantissa_bits}")

    @property
    def gemv(self) -> bool:
        return self.m == 1

    def _geometry(self) -> dict:
        """k0 (A's elements per 32-byte fractal row), k1 (k-fractals per row of A / column of
        B as they sit in L0A / L0B; k_direction_align pads k to 2·k0), and the bytes of A, B
        and C read or written (GEMV: A is k plain elements)."""
        k0 = C0_BYTES // self.a.dtype.itemsize
        k1 = 2 * ceil_div(self.k, 2 * k0) if self.k_direction_align else ceil_div(self.k, k0)
        m1, n1 = ceil_div(self.m, FRACTAL_ROWS), ceil_div(self.n, FRACTAL_ROWS)
        a_bytes = (self.k * self.a.dtype.itemsize if self.m == 1
                   else m1 * k1 * FRACTAL_BYTES)
        return {"k0": k0, "k1": k1, "a_bytes": a_bytes, "b_bytes": k1 * n1 * FRACTAL_BYTES,
                "c_bytes": m1 * n1 * FRACTAL_ROWS * FRACTAL_ROWS * self.c.dtype.itemsize}

    @property
    def input_mode(self) -> str:
        """The chip's name for the input type: 'hfloat32' in HF32 mode, else the dtype."""
        return "hfloat32" if self.hf32 else name_of(self.a.dtype)

    def validate(self, chip) -> None:
        # _check_operands ran at construction, on these very (frozen) fields
        if (chip.fractal_m, chip.fractal_n, chip.fractal_k_bytes) != (FRACTAL_ROWS, FRACTAL_ROWS,
                                                                       C0_BYTES):
            raise NpusimError(f"mmad: chip {chip.name!r} has {chip.fractal_m} x {chip.fractal_n} "
                              f"x {chip.fractal_k_bytes} B fractals; npusim's L0 layouts are "
                              f"{FRACTAL_ROWS} x {FRACTAL_ROWS} x {C0_BYTES} B")
        if self.input_mode not in chip.input_dtypes:
            raise NpusimError(f"mmad: input type {self.input_mode!r} not supported by the cube "
                              f"of {chip.name!r}; allowed: {', '.join(chip.input_dtypes)}")
        if self.hf32 and self.hf32_mantissa_bits != chip.hf32_mantissa_bits:
            raise NpusimError(f"mmad: hf32_mantissa_bits = {self.hf32_mantissa_bits}, chip "
                              f"{chip.name!r} rounds HF32 to {chip.hf32_mantissa_bits} bits")
        for what, t, key in (("a", self.a, "l0ab_align_bytes"), ("b", self.b, "l0ab_align_bytes"),
                             ("c", self.c, "l0c_align_bytes")):
            align = getattr(chip, key)
            if t.addr % align:
                raise NpusimError(f"mmad: operand {what} at {t.where()} is not {align}-byte "
                                  f"aligned ({key} of {chip.name!r})")

    def head(self, chip) -> float:
        return chip.head_cycles

    def body(self, chip) -> float:
        k0 = chip.fractal_k_bytes // self.a.dtype.itemsize
        fractals = (ceil_div(self.m, chip.fractal_m) * ceil_div(self.k, k0)
                    * ceil_div(self.n, chip.fractal_n))
        if self.hf32:
            per = chip.hf32_cycles_per_fractal
        elif self.a.dtype.itemsize == 4:
            per = chip.b32_cycles_per_fractal
        else:
            per = chip.b16_cycles_per_fractal
        return fractals * per

    def operand_a(self) -> np.ndarray:
        """A as an m x k array in its own dtype."""
        if self.gemv:
            return self.a.array(self.k).reshape(1, self.k)
        m1 = ceil_div(self.m, FRACTAL_ROWS)
        flat = self.a.array(self.a_bytes // self.a.dtype.itemsize)
        return read_fractal(flat, self.m, self.k, m1, self.k1, FRACTAL_ROWS, self.k0, "ZZ")

    def operand_b(self) -> np.ndarray:
        """B as a k x n array in its own dtype."""
        n1 = ceil_div(self.n, FRACTAL_ROWS)
        flat = self.b.array(self.b_bytes // self.b.dtype.itemsize)
        return read_fractal(flat, self.k, self.n, self.k1, n1, self.k0, FRACTAL_ROWS, "ZN")

    def _c_flat(self) -> tuple[np.ndarray, int, int]:
        m1, n1 = ceil_div(self.m, FRACTAL_ROWS), ceil_div(self.n, FRACTAL_ROWS)
        return self.c.array(self.c_bytes // self.c.dtype.itemsize), m1, n1

    def execute(self) -> None:
        if not (self.m and self.n):
            return
        if self.whole_fractals16:
            self._execute_fractals16()
            return
        flat, m1, n1 = self._c_flat()
        a, b = self.operand_a(), self.operand_b()
        if self.init:
            old = np.zeros((self.m, self.n), self.c.dtype)
        else:
            old = read_fractal(flat, self.m, self.n, m1, n1, FRACTAL_ROWS, FRACTAL_ROWS, "NZ")
        if a.dtype == np.int8:
            total = old.astype(np.int64) + a.astype(np.int64) @ b.astype(np.int64)
            result = total.astype(np.int32)
        else:
            result = self._accumulate(a, b, old)
        write_fractal(flat, result, m1, n1, FRACTAL_ROWS, FRACTAL_ROWS, "NZ")

    @property
    def whole_fractals16(self) -> bool:
        """fp16 / bf16 operands filling whole fractals (m, n multiples of 16, k of k0)."""
        return (self.a.dtype.itemsize == 2 and self.a.dtype.name in SIGNIFICANT_BITS
                and self.m > 1 and not (self.m % FRACTAL_ROWS or self.n % FRACTAL_ROWS
                                        or self.k % self.k0))

    def _execute_fractals16(self) -> None:
        """execute for whole_fractals16: A (transposed) and B go straight from their L0
        layouts into one step-major block, read once for the span bits and once widened to
        float64 (each step's A and B are views of it, as BLAS takes them), C straight from NZ;
        the same steps, spans and roundings as _accumulate."""
        k0, k1, m, n, fr = self.k0, self.k1, self.m, self.n, FRACTAL_ROWS
        m1, n1 = m // fr, n // fr
        za = self.a.array(self.a_bytes // 2).reshape(m1, k1, fr, k0)     # ZZ
        zb = self.b.array(self.b_bytes // 2).reshape(k1, n1, fr, k0)     # ZN: [k1, n1, n, k]
        raw = np.empty((k1, k0, m1 + n1, fr), np.uint16)   # A^T beside B, step-major
        raw[:, :, :m1] = za.view(np.uint16).transpose(1, 3, 0, 2)
        raw[:, :, m1:] = zb.view(np.uint16).transpose(0, 3, 1, 2)
        raw = raw.reshape(k1, k0, m + n)
        wide = raw.view(self.a.dtype).astype(np.float64)   # A^T beside B, as float64
        span = _bit_spans(raw, self.a.dtype, SIGNIFICANT_BITS[self.a.dtype.name])
        a3, b3 = wide[:, :, :m].transpose(0, 2, 1), wide[:, :, m:]
        nz = self.c.array(self.c_bytes // 4).reshape(n1, m1, fr, fr)
        acc = np.zeros((m1, fr, n1, fr), np.float32)
        if not self.init:
            acc[...] = nz.transpose(1, 2, 0, 3)
        add_step_sums(acc.reshape(m, n), a3, b3, span[:, :m], span[:, m:])
        nz[...] = acc.transpose(2, 0, 1, 3)

    def _accumulate(self, a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> np.ndarray:
        if self.hf32:
            a = round_hf32(a, self.hf32_mantissa_bits, self.hf32_trans_mode)
            b = round_hf32(b, self.hf32_mantissa_bits, self.hf32_trans_mode)
        acc = np.array(acc, np.float32)
        bits = (self.hf32_mantissa_bits + 1 if self.hf32
                else SIGNIFICANT_BITS.get(a.dtype.name, 53))
        for partial in step_partials(a.astype(np.float64), b.astype(np.float64), self.k0, bits,
                                     raw=(a, b)):
            acc += partial
        return acc

    def reads(self) -> tuple:
        if not (self.m and self.n):
            return ()
        out = (region(self.a, self.a_bytes), region(self.b, self.b_bytes))
        return out if self.init else out + (region(self.c, self.c_bytes),)

    def writes(self) -> tuple:
        return (region(self.c, self.c_bytes),) if self.m and self.n else ()

    def operands(self) -> dict:
        return {"c": repr(self.c), "a": repr(self.a), "b": repr(self.b), "m": self.m,
                "n": self.n, "k": self.k, "init": self.init, "input": self.input_mode}
