"""L1 -> L0A / L0B loads on the MTE1 pipe: LoadData 2D (fractal copies) and 3D v2 (img2col).

LoadData2D (Ascend C ``LoadData(dst, src, LoadData2DParams)``, asc-devkit doc
``矩阵计算的搬入/LoadData_2D.md`` and its reference model ``load_data_l12l0/scripts/load2d.py``):
``repeat_times`` fractals of 512 bytes; repeat r reads fractal ``start_index + r·src_stride`` of
the source (units of 512 B; src_stride 0 re-reads one fractal) and writes it at
``r·(1 + dst_gap)`` fractals from the destination. ``if_transpose`` transposes each 16 x 16 b16
fractal (only b16, only L1 -> L0A/L0B). Turning L1's NZ A into L0A's ZZ is one load per 16-row
block with ``src_stride = m1``; B (k x n) in L1 NZ becomes L0B's ZN with ``if_transpose``; a
transposed B (n x k) in L1 NZ is already ZN fractal by fractal. See ``isa/cube.py`` for layouts.

LoadData3D v2 (``LoadData(dst, src, LoadData3DParamsV2)``, doc ``LoadData_3D.md`` and reference
model ``load_data_l12l0/scripts/load3d.py``): the L1 source is a feature map in NC1HWC0
(``[C1, l1_h, l1_w, C0]``, C0 = 32 B / sizeof); img2col turns it into a matrix X whose rows are
output positions (ho, wo) in row-major order, Ho = (l1_h + pad_top + pad_bottom - dil_h·(fh-1)
- 1) // stride_h + 1, and whose columns are ordered (c1, kh, kw, c0), as the reference model's
``[C1, Hk·Wk, HoWo, C0]`` intermediate fixes. Padding reads ``pad_value``. The instruction takes
rows ``m_start_pt .. +m_extension`` and columns ``k_start_pt .. +k_extension`` of X and writes:

- to L0A: X in ZZ (fractals 16 x C0); with ``en_transpose`` X^T in ZZ (b16 and b32), the form
  the dw kernel uses for dy;
- to L0B: X as the B matrix (k = positions, n = channels) in ZN, fractals C0 x 16 (b16, b32).

Rows past Ho·Wo follow the same formula (ho >= Ho; an assumption, the docs do not say), reading
the map where the window still covers it and padding elsewhere. Only the rows and columns asked
for are written; the padding of the last fractals keeps its bytes.

Costs (PERF-LOAD, hardware.md 2.2): head ``load2d_startup_cycles`` / ``load3d_startup_cycles``,
body bytes written / ``l1_to_l0a_bytes_per_cycle`` or ``l1_to_l0b_bytes_per_cycle`` (2D; at
that size, ``Chip.rate``: msKPP's measured L1->L0A/L0B tables on the A2 models) or
``load3d_bytes_per_cycle`` / ``load3d_l0b_bytes_per_cycle`` (3D to L0A / L0B; whole 512-byte
fractals; PERF-LOAD gives a range for each, 32-256 and 28.4-128 B/cycle, without saying what
selects the rate, so one rate per destination is taken). On a chip with
``load2d_startup_per_instruction`` every LoadData2D pays its start-up, back to back too: it is
part of the body there, not a head (no shipped model sets it since issue 38: msKPP's tables
stream LoadData2D without it).

Not modelled: GM -> L0A/L0B and GM -> L1 LoadData, LoadDataWithTranspose, load3d v1 (the Atlas
training instruction: the same img2col with another parameter encoding, so npusim accepts v2 on
both chips), small-channel layouts (channel_size not a multiple of C0), ``dst_gap`` being ignored
on Atlas training, SetFmatrix / SetLoadDataRepeat / SetLoadDataPaddingValue registers (the
parameters are given per instruction, as with the default IsResetLoad3dConfig).
"""

from dataclasses import dataclass, field
from functools import lru_cache
from operator import attrgetter, sub
from typing import ClassVar

import numpy as np

from npusim.dtypes import name_of
from npusim.errors import NpusimError
from npusim.isa.base import Instr, Pipe, region
from npusim.isa.cube import C0_BYTES, FRACTAL_BYTES, FRACTAL_ROWS, ceil_div, write_fractal
from npusim.isa.move import blocks_view, check_path

UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32}
LOAD_DST = {"L0A": "l1_to_l0a_bytes_per_cycle", "L0B": "l1_to_l0b_bytes_per_cycle"}
# LoadData3DParamsV2 field -> allowed (lowest, highest) value
LOAD3D_LIMITS = {"l1_h": (0, 32767), "l1_w": (0, 32767), "channel_size": (0, 65535),
                 "k_extension": (0, 65535), "m_extension": (0, 65535), "k_start_pt": (0, 65535),
                 "m_start_pt": (0, 32767), "stride_w": (1, 63), "stride_h": (1, 63),
                 "filter_w": (0, 255), "filter_h": (0, 255), "dilation_filter_w": (1, 255),
                 "dilation_filter_h": (1, 255)}
LOAD3D_FIELDS = attrgetter(*LOAD3D_LIMITS)
LOAD3D_LOW, LOAD3D_HIGH = zip(*LOAD3D_LIMITS.values(), strict=True)


@lru_cache(maxsize=64)
def _img2col_index(c0, c1, fh, fw, l1_h, l1_w, wo, stride_h, stride_w, dil_h, dil_w, left, top,
                   m_start, m_ext, k_start, k_ext) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices into the [C1, l1_h, l1_w, C0] map of each element of the img2col tile (0
    for the elements that read padding), and the flat positions in the tile of those padding
    elements (cached per geometry, read-only; int32 indices: half the cache's memory)."""
    pos = m_start + np.arange(m_ext)
    col = k_start + np.arange(k_ext)
    ci, cc0 = col // (fh * fw * c0), col % c0
    kh, kw = (col // (fw * c0)) % fh, (col // c0) % fw
    hb, wb = pos // wo * stride_h - top, pos % wo * stride_w - left   # window corner per row
    # element (row, col) reads map row hb + kh*dil_h, column wb + kw*dil_w: inside the map
    # when both are; per row, which taps are is a small (rows x fh) and (rows x fw) table
    th, tw = hb[:, None] + np.arange(fh) * dil_h, wb[:, None] + np.arange(fw) * dil_w
    inside = ((th >= 0) & (th < l1_h))[:, kh] & ((tw >= 0) & (tw < l1_w))[:, kw]
    # ((ci*l1_h + h)*l1_w + w)*c0 + cc0 splits into a row part and a column part
    idx = ((hb * l1_w + wb) * c0)[:, None] + (((ci * l1_h + kh * dil_h) * l1_w + kw * dil_w)
                                               * c0 + cc0)[None, :]
    idx = np.where(inside, idx, 0).astype(np.int32 if c1 * l1_h * l1_w * c0 < 1 << 31
                                          else np.intp)
    pads = np.flatnonzero(~inside)
    idx.setflags(write=False)
    pads.setflags(write=False)
    return idx, pads


@lru_cache(maxsize=512)
def _img2col_laid_out(index_args: tuple, shape: tuple, transpose: bool):
    """_img2col_index's indices and pad positions in the order the destination's fractal
    layout ``shape`` (r1, c1, fractal rows, fractal cols, layout) stores the tile (transposed
    first when ``transpose``), or None when the tile does not fill whole fractals (then the
    padding of the last fractals keeps its bytes and the write goes through write_fractal)."""
    idx, pads = _img2col_index(*index_args)
    r1, c1, fr, fc, layout = shape
    is_pad = np.zeros(idx.shape, bool)
    is_pad.reshape(-1)[pads] = True
    if transpose:
        idx, is_pad = idx.T, is_pad.T
    if idx.shape != (r1 * fr, c1 * fc):
        return None
    laid, laid_pad = np.empty(idx.size, idx.dtype), np.empty(idx.size, bool)
    write_fractal(laid, idx, *shape)
    write_fractal(laid_pad, is_pad, *shape)
    pads = np.flatnonzero(laid_pad)
    laid.setflags(write=False)
    pads.setflags(write=False)
    return laid, pads


def check_range(what: str, name: str, value: int, lo: int, hi: int) -> None:
    if not lo <= value <= hi:
        raise NpusimError(f"{what}: {name} = {value} out of range; allowed {lo}..{hi}")


def check_load_dtype(chip, dtype, what: str) -> None:
    """Refuse data types the chip's cube cannot take (bf16 and b32 are A2 only, LoadData docs)."""
    name = name_of(dtype)
    needs = None
    if name == "bfloat16":
        needs = "bfloat16"
    elif np.dtype(dtype).itemsize == 4:
        needs = "float32"
    if needs and needs not in chip.input_dtypes:
        raise NpusimError(f"{what}: {name} data cannot be loaded on {chip.name!r}; its cube "
                          f"takes {', '.join(chip.input_dtypes)}")


def check_align(chip, tensor, key: str, what: str) -> None:
    align = getattr(chip, key)
    if tensor.addr % align:
        raise NpusimError(f"{what}: {tensor.where()} is not {align}-byte aligned "
                          f"({key} of {chip.name!r})")


def check_l1_to_l0(what: str, dst, src) -> None:
    if src.kind != "L1" or dst.kind not in LOAD_DST:
        raise NpusimError(f"{what}: path {src.kind}->{dst.kind} not modelled; "
                          f"allowed L1->L0A, L1->L0B")
    if src.dtype != dst.dtype:
        raise NpusimError(f"{what}: source {src.dtype} and destination {dst.dtype} differ")


@dataclass(frozen=True, kw_only=True, slots=True)
class LoadData2D(Instr):
    """LoadData with LoadData2DParams: whole 512-byte fractals from L1 to L0A or L0B."""

    name: ClassVar[str] = "load_data"
    pipe: ClassVar[str] = Pipe.MTE1
    dst: object
    src: object
    start_index: int = 0
    repeat_times: int
    src_stride: int = 0
    dst_gap: int = 0
    if_transpose: bool = False

    def __post_init__(self):
        check_l1_to_l0(self.name, self.dst, self.src)
        check_range(self.name, "start_index", self.start_index, 0, 65535)
        check_range(self.name, "repeat_times", self.repeat_times, 0, 255)
        check_range(self.name, "src_stride", self.src_stride, 0, 65535)
        check_range(self.name, "dst_gap", self.dst_gap, 0, 65535)
        if self.if_transpose and self.src.dtype.itemsize != 2:
            raise NpusimError(f"load_data: if_transpose needs a b16 type, got {self.src.dtype}")
        if self.repeat_times:
            self.src.check(self.src_span, "load_data read")
            self.dst.check(self.dst_span, "load_data write")

    @property
    def src_span(self) -> int:
        last = self.start_index + (self.repeat_times - 1) * self.src_stride
        return (last + 1) * FRACTAL_BYTES

    @property
    def dst_span(self) -> int:
        return ((self.repeat_times - 1) * (1 + self.dst_gap) + 1) * FRACTAL_BYTES

    def validate(self, chip) -> None:
        check_load_dtype(chip, self.src.dtype, self.name)
        check_align(chip, self.dst, "l0ab_align_bytes", self.name)
        check_align(chip, self.src, "l1_align_bytes", self.name)

    def head(self, chip) -> float:
        return 0.0 if chip.load2d_startup_per_instruction else chip.load2d_startup_cycles

    def body(self, chip) -> float:
        """The bytes at the L0 side's rate; with ``load2d_startup_per_instruction`` the
        start-up too, so that back-to-back loads each pay it."""
        nbytes = self.moved_bytes()
        own = nbytes / chip.rate(LOAD_DST[self.dst.kind], nbytes)
        return own + chip.load2d_startup_cycles if chip.load2d_startup_per_instruction else own

    def execute(self) -> None:
        if not self.repeat_times:
            return
        src = blocks_view(self.src.store, self.src.addr + self.start_index * FRACTAL_BYTES,
                          self.repeat_times, FRACTAL_BYTES, self.src_stride * FRACTAL_BYTES)
        dst = blocks_view(self.dst.store, self.dst.addr, self.repeat_times, FRACTAL_BYTES,
                          (1 + self.dst_gap) * FRACTAL_BYTES)
        if self.if_transpose:
            fr = FRACTAL_ROWS
            src = src.view(np.uint16).reshape(self.repeat_times, fr, fr).transpose(0, 2, 1)
            dst = dst.view(np.uint16).reshape(self.repeat_times, fr, fr)
        dst[...] = src

    def reads(self) -> tuple:
        if not self.repeat_times:
            return ()
        return ((self.src.store, self.src.addr + self.start_index * FRACTAL_BYTES,
                 self.src.addr + self.src_span),)

    def writes(self) -> tuple:
        return (region(self.dst, self.dst_span),) if self.repeat_times else ()

    def moved_bytes(self) -> int:
        return self.repeat_times * FRACTAL_BYTES

    def path(self) -> str:
        return f"L1->{self.dst.kind}" + (" (transpose)" if self.if_transpose else "")

    def operands(self) -> dict:
        return {"dst": repr(self.dst), "src": repr(self.src), "start_index": self.start_index,
                "repeat_times": self.repeat_times, "src_stride": self.src_stride,
                "dst_gap": self.dst_gap, "if_transpose": self.if_transpose}


@dataclass(frozen=True, kw_only=True, slots=True)
class LoadData3D(Instr):
    """LoadData with LoadData3DParamsV2: img2col of an NC1HWC0 feature map into L0A or L0B.

    ``pad_list`` is [left, right, top, bottom]. ``filter_size_w`` / ``filter_size_h`` add 256 to
    the filter extent, as in Ascend C.
    """

    name: ClassVar[str] = "load_data_3d"
    pipe: ClassVar[str] = Pipe.MTE1
    dst: object
    src: object
    l1_h: int
    l1_w: int
    channel_size: int
    k_extension: int
    m_extension: int
    k_start_pt: int = 0
    m_start_pt: int = 0
    pad_list: tuple = (0, 0, 0, 0)
    stride_w: int = 1
    stride_h: int = 1
    filter_w: int = 1
    filter_h: int = 1
    dilation_filter_w: int = 1
    dilation_filter_h: int = 1
    en_transpose: bool = False
    pad_value: float = 0
    filter_size_w: bool = False
    filter_size_h: bool = False

    # geometry, computed once in __post_init__ from the fields above (see _geometry)
    fh: int = field(init=False, repr=False, compare=False)
    fw: int = field(init=False, repr=False, compare=False)
    c0: int = field(init=False, repr=False, compare=False)
    c1: int = field(init=False, repr=False, compare=False)
    k_total: int = field(init=False, repr=False, compare=False)
    ho: int = field(init=False, repr=False, compare=False)
    wo: int = field(init=False, repr=False, compare=False)
    src_elements: int = field(init=False, repr=False, compare=False)
    nop: bool = field(init=False, repr=False, compare=False)
    dst_bytes: int = field(init=False, repr=False, compare=False)
    _dst_shape: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        check_l1_to_l0(self.name, self.dst, self.src)
        self._check_params()
        for name, value in self._geometry().items():
            object.__setattr__(self, name, value)
        if self.nop:
            return
        self._check_geometry()
        self.src.check(self.src_elements * self.src.dtype.itemsize, "load_data_3d read")
        self.dst.check(self.dst_bytes, "load_data_3d write")

    def _check_params(self) -> None:
        values = LOAD3D_FIELDS(self)
        pads = self.pad_list
        if (min(map(sub, values, LOAD3D_LOW)) >= 0 and min(map(sub, LOAD3D_HIGH, values)) >= 0
                and len(pads) == 4 and min(pads) >= 0 and max(pads) <= 255):
            return      # all in range (checked without a Python call per field)
        for value, (name, (lo, hi)) in zip(values, LOAD3D_LIMITS.items(), strict=True):
            check_range(self.name, name, value, lo, hi)
        if len(self.pad_list) != 4:
            raise NpusimError(f"{self.name}: pad_list needs 4 entries [left, right, top, bottom], "
                              f"got {self.pad_list}")
        for pad in self.pad_list:
            check_range(self.name, "pad_list entry", pad, 0, 255)

    def _geometry(self) -> dict:
        """The filter extent (``filter_size_*`` add 256), C0 and C1, the img2col matrix's
        columns (C1·kh·kw·C0) and output size (Ho, Wo: see the module docstring), the map's
        elements, whether nothing is loaded, and what is written: ``dst_shape`` and bytes."""
        fh = self.filter_h + (256 if self.filter_size_h else 0)
        fw = self.filter_w + (256 if self.filter_size_w else 0)
        c0 = C0_BYTES // self.src.dtype.itemsize
        c1 = self.channel_size // c0
        left, right, top, bottom = self.pad_list
        span_h = self.dilation_filter_h * (fh - 1) + 1
        span_w = self.dilation_filter_w * (fw - 1) + 1
        nop = not (self.l1_h and self.l1_w and self.channel_size and self.k_extension
                   and self.m_extension and fh and fw)
        m, k = self.m_extension, self.k_extension
        if self.dst.kind == "L0B":
            shape = ceil_div(m, c0), ceil_div(k, FRACTAL_ROWS), c0, FRACTAL_ROWS, "ZN"
        elif self.en_transpose:
            shape = ceil_div(k, FRACTAL_ROWS), ceil_div(m, c0), FRACTAL_ROWS, c0, "ZZ"
        else:
            shape = ceil_div(m, FRACTAL_ROWS), ceil_div(k, c0), FRACTAL_ROWS, c0, "ZZ"
        return {"fh": fh, "fw": fw, "c0": c0, "c1": c1, "k_total": c1 * fh * fw * c0,
                "ho": (self.l1_h + top + bottom - span_h) // self.stride_h + 1,
                "wo": (self.l1_w + left + right - span_w) // self.stride_w + 1,
                "src_elements": c1 * self.l1_h * self.l1_w * c0, "nop": nop,
                "dst_bytes": 0 if nop else shape[0] * shape[1] * FRACTAL_BYTES,
                "_dst_shape": shape}

    def _check_geometry(self) -> None:
        c0, item, what = self.c0, self.src.dtype.itemsize, self.name
        if self.channel_size % c0:
            raise NpusimError(f"{what}: channel_size = {self.channel_size} is not a multiple of "
                              f"C0 = {c0}; small-channel layouts are not modelled")
        if self.k_start_pt % c0:
            raise NpusimError(f"{what}: k_start_pt = {self.k_start_pt} must be a multiple of "
                              f"C0 = {c0}")
        end = self.k_start_pt + self.k_extension
        if end > self.k_total or (self.k_extension % c0 and end != self.k_total):
            raise NpusimError(f"{what}: k range {self.k_start_pt}..{end} must lie in "
                              f"0..{self.k_total} (C1·kh·kw·C0) and be whole C0 = {c0} columns "
                              f"unless it reaches the end")
        if self.ho < 1 or self.wo < 1:
            raise NpusimError(f"{what}: the filter does not fit the padded feature map "
                              f"(output {self.ho} x {self.wo})")
        if self.dst.kind == "L0B" and item == 1:
            raise NpusimError(f"{what}: L1->L0B img2col does not take b8 data")
        if self.en_transpose and self.dst.kind == "L0A" and item == 1:
            raise NpusimError(f"{what}: en_transpose to L0A does not take b8 data")

    def dst_shape(self) -> tuple[int, int, int, int, str]:
        """(r1, c1, fractal rows, fractal cols, layout) of what is written."""
        return self._dst_shape

    def validate(self, chip) -> None:
        check_load_dtype(chip, self.src.dtype, self.name)
        check_align(chip, self.dst, "l0ab_align_bytes", self.name)
        check_align(chip, self.src, "l1_align_bytes", self.name)

    def head(self, chip) -> float:
        return chip.load3d_startup_cycles

    def body(self, chip) -> float:
        rate = chip.load3d_l0b_bytes_per_cycle if self.dst.kind == "L0B" else \
            chip.load3d_bytes_per_cycle
        return self.dst_bytes / rate

    def _index_args(self) -> tuple:
        return (self.c0, self.c1, self.fh, self.fw, self.l1_h, self.l1_w, self.wo,
                self.stride_h, self.stride_w, self.dilation_filter_h, self.dilation_filter_w,
                self.pad_list[0], self.pad_list[2], self.m_start_pt, self.m_extension,
                self.k_start_pt, self.k_extension)

    def _pad_bits(self, uint):
        return np.array(self.pad_value, self.src.dtype).reshape(1).view(uint)[0]

    def img2col(self) -> np.ndarray:
        """The m_extension x k_extension tile of the img2col matrix (raw element bits)."""
        idx, pads = _img2col_index(*self._index_args())
        uint = UINT_OF_SIZE[self.src.dtype.itemsize]
        x = self.src.array(self.src_elements).view(uint).take(idx)
        if pads.size:   # the pad value's bits where the window leaves the map
            x.reshape(-1)[pads] = self._pad_bits(uint)
        return x

    def execute(self) -> None:
        if self.nop:
            return
        transpose = self.en_transpose and self.dst.kind == "L0A"
        uint = UINT_OF_SIZE[self.src.dtype.itemsize]
        flat = self.dst.array(self.dst_bytes // self.dst.dtype.itemsize).view(uint)
        laid = _img2col_laid_out(self._index_args(), self._dst_shape, transpose)
        if laid is not None:   # whole fractals: gather straight into the layout
            np.take(self.src.array(self.src_elements).view(uint), laid[0], out=flat,
                    mode="clip")   # every index is in range: clip only avoids a buffered copy
            if laid[1].size:
                flat[laid[1]] = self._pad_bits(uint)
            return
        x = self.img2col()
        write_fractal(flat, x.T if transpose else x, *self._dst_shape)

    def reads(self) -> tuple:
        return () if self.nop else (region(self.src, self.src_elements * self.src.dtype.itemsize),)

    def writes(self) -> tuple:
        return () if self.nop else (region(self.dst, self.dst_bytes),)

    def moved_bytes(self) -> int:
        return self.dst_bytes

    def path(self) -> str:
        return f"L1->{self.dst.kind} (img2col)"

    def operands(self) -> dict:
        return {"dst": repr(self.dst), "src": repr(self.src), "l1_h": self.l1_h,
                "l1_w": self.l1_w, "channel_size": self.channel_size,
                "m": [self.m_start_pt, self.m_extension], "k": [self.k_start_pt, self.k_extension],
                "filter": [self.fh, self.fw], "stride": [self.stride_h, self.stride_w],
                "dilation": [self.dilation_filter_h, self.dilation_filter_w],
                "pad": list(self.pad_list), "en_transpose": self.en_transpose}


@dataclass(frozen=True, kw_only=True, slots=True)
class InitConstValue(Instr):
    """InitConstValue(dst, InitConstValueParams): fill an L1 tensor with a constant (MTE2).

    Ascend C ``InitConstValue`` (doc ``InitConstValue.md``) writes ``repeat_times`` x
    ``block_num`` 32-byte blocks of ``init_value`` into L1 / L0A / L0B, ``dst_gap`` blocks
    between repeats; it is how the A2 dx kernel zeroes its L1 A-buffer before the stride
    expansion of dy (kernels.md §2(c)). Modelled for L1 only. Cost: the GM latency is not paid
    (nothing is read); bytes written / ``gm_to_l1_bytes_per_cycle`` (assumed: the MTE2 L1 write
    port, the fill rate is not published), head ``local_move_startup_cycles``.
    """

    name: ClassVar[str] = "init_const_value"
    pipe: ClassVar[str] = Pipe.MTE2
    dst: object
    repeat_times: int = 1
    block_num: int = 1
    dst_gap: int = 0
    init_value: float = 0

    def __post_init__(self):
        if self.dst.kind != "L1":
            raise NpusimError(f"{self.name}: modelled for L1 only, got {self.dst.kind}")
        check_range(self.name, "repeat_times", self.repeat_times, 0, 32767)
        check_range(self.name, "block_num", self.block_num, 0, 32767)
        check_range(self.name, "dst_gap", self.dst_gap, 0, 32767)
        self.dst.check(self.span, "init_const_value write")

    @property
    def span(self) -> int:
        if not (self.repeat_times and self.block_num):
            return 0
        step = (self.block_num + self.dst_gap) * 32
        return (self.repeat_times - 1) * step + self.block_num * 32

    def validate(self, chip) -> None:
        check_path(chip, "gm_to_l1_bytes_per_cycle", self.name)

    def head(self, chip) -> float:
        return chip.local_move_startup_cycles

    def body(self, chip) -> float:
        return self.moved_bytes() / chip.gm_to_l1_bytes_per_cycle

    def execute(self) -> None:
        if not self.span:
            return
        value = np.array(self.init_value, self.dst.dtype).reshape(1).view(np.uint8)
        block = np.tile(value, 32 // value.size)
        view = blocks_view(self.dst.store, self.dst.addr, self.repeat_times,
                           self.block_num * 32, (self.block_num + self.dst_gap) * 32)
        view[...] = np.tile(block, self.block_num)

    def writes(self) -> tuple:
        return (region(self.dst, self.span),) if self.span else ()

    def moved_bytes(self) -> int:
        return self.repeat_times * self.block_num * 32

    def path(self) -> str:
        return "fill->L1"

    def operands(self) -> dict:
        return {"dst": repr(self.dst), "repeat_times": self.repeat_times,
                "block_num": self.block_num, "dst_gap": self.dst_gap,
                "init_value": float(self.init_value)}
