"""Moving cube results out of L0C, and ND -> NZ loads into L1.

``Fixpipe`` (Atlas A2 FixPipe unit, PIPE_FIX; Ascend C ``Fixpipe(dst, src, FixpipeParamsV220)``,
asc-devkit docs ``矩阵计算的搬出/Fixpipe（L0C到GM数据搬运）.md``, ``NZ2ND.md``, ``NZ2NZ.md``):
reads ``m_size`` rows x ``n_size`` columns of an NZ matrix in L0C (Z column kb of 16 columns
starts ``kb·src_stride·16`` elements in: ``src_stride`` is the Z-column height in rows, which
Ascend C says to fill with m rounded up to 16, "mSize对16向上取整"), converts and writes GM:

- NZ2ND (FixpipeConfig CFG_ROW_MAJOR, the default): row j of ND matrix i lands at
  ``i·dst_nd_stride + j·dst_stride`` elements; ``n_size`` need not be a multiple of 16 (the
  dav_c220 implementation says "If NZ2ND is enabled, n size could be unaligned"); ``nd_num``
  matrices ``src_nd_stride`` x 256 elements apart in L0C.
- NZ2NZ (CFG_NZ): Z column kb lands ``kb·dst_stride·32`` bytes in; ``n_size`` a multiple of 16.

``quant_pre``: ``NoQuant`` (fp32 -> fp32, int32 -> int32), ``F322F16`` and ``F322BF16`` (fp32 ->
fp16 / bf16 with CAST_RINT: round to nearest even; overflow gives inf). ``relu_en`` applies
ReLU before the conversion. ``atomic`` (SetAtomicAdd) adds into GM in the destination type.
``FixpipeL1`` is the same unit writing L1 in NZ (the L0C -> L1 path for a following cube pass).

``L0cToUb`` (Atlas training, coupled cores: ``DataCopy(CO2, CO1, DataCopyParams,
DataCopyEnhancedParams)``, doc ``DataCopy（L0C到UB数据搬运）.md`` and the coupled matmul sample
``耦合模式.md``): a raw copy on the vector side (PIPE_V), no conversion (the enhanced quant
modes work only on Atlas inference AI Core; on Atlas training the call is a plain copy). Blocks
of ``block_len`` units, ``src_stride`` / ``dst_stride`` gaps between blocks: BLOCK_MODE_MATRIX
units are one 16 x 16 fractal (1024 B fp32, 512 B fp16) for length and source gap, 32 B for the
destination gap; BLOCK_MODE_VECTOR units are a 1 x 16 row (64 B fp32), a fractal, and 32 B.

``DataCopyNd2Nz`` (A2, MTE2; ``DataCopy(dst, src, Nd2NzParams)``, doc
``DataCopy（GMToL1随路转换-ND2NZ搬运）.md``, loop in CCE ``copy_gm_to_cbuf_multi_nd2nz``): for
each of ``nd_num`` ND matrices (``src_nd_matrix_stride`` elements apart in GM, landing
``dst_nz_matrix_stride`` elements apart in L1), row j of ``d_value`` elements (``src_d_value``
elements apart) is cut into 32-byte blocks; block k lands at ``j·dst_nz_n_stride·32 +
k·dst_nz_c0_stride·32`` bytes. A short last block is zero-padded to 32 bytes. Padding rows of the
NZ fractals are not written.

Costs (hardware.md 2.2): FixPipe to GM: head ``fixpipe_startup_cycles``, body burst-rounded GM
bytes / ``l0c_to_gm_bytes_per_cycle`` at that size (``Chip.rate``: msKPP's measured L0C->GM
table on the A2 models; GmMove, the engine adds shared GM bandwidth); to L1: output elements
(whole 16-wide blocks) / ``fixpipe_elements_per_cycle``. L0C -> UB:
``local_move_startup_cycles`` + bytes / ``l0c_to_ub_bytes_per_cycle``. ND2NZ: GM latency +
burst-rounded bytes (each source row one GM block) / ``gm_to_l1_nd2nz_bytes_per_cycle`` at
that size (msKPP's GM->L1 with ND->NZ table; a chip without it: ``gm_to_l1_bytes_per_cycle``).

Not modelled: quantisation modes (DEQF16, QF322B8_PRE, REQ8, vector quant tensors), channel
split / merge, unitFlag, NZ2ND into L1 and L0C -> UB on A2 (dav-3510 only), saturation modes.
"""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.lib.stride_tricks import as_strided

from npusim.dtypes import name_of
from npusim.errors import NpusimError
from npusim.isa.base import Instr, Pipe, region
from npusim.isa.cube import C0_BYTES, FRACTAL_ROWS, ceil_div
from npusim.isa.load import check_align, check_range
from npusim.isa.move import GmMove, block_span, blocks_view, burst_bytes

FRACTAL_ELEMENTS = FRACTAL_ROWS * FRACTAL_ROWS
# quant_pre -> (L0C dtype name, destination dtype name); NoQuant keeps the type
QUANT_MODES = {"NoQuant": None, "F322F16": ("float32", "float16"),
               "F322BF16": ("float32", "bfloat16")}
UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def typed(store, addr: int, count: int, dtype) -> np.ndarray:
    """``count`` elements of ``dtype`` at byte ``addr`` of a store (a view, maybe unaligned)."""
    dt = np.dtype(dtype)
    return store.data[addr:addr + count * dt.itemsize].view(dt)


def no_fixpipe(chip, what: str) -> NpusimError:
    return NpusimError(f"{what}: chip {chip.name!r} has no FixPipe unit (has_fixpipe = false); "
                       "on coupled cores L0C leaves through data_copy_l0c_to_ub (L0C->UB, PIPE_V)")


@dataclass(frozen=True, kw_only=True, slots=True)
class L0cOut(Instr):
    """What Fixpipe to GM and to L1 share: the L0C NZ source and the conversion."""

    dst: object
    src: object
    m_size: int
    n_size: int
    src_stride: int
    dst_stride: int
    quant_pre: str = "NoQuant"
    relu_en: bool = False

    @property
    def nb(self) -> int:
        """Z columns (16 wide) read."""
        return ceil_div(self.n_size, FRACTAL_ROWS)

    @property
    def n_matrices(self) -> int:
        return 1

    @property
    def src_matrix_elements(self) -> int:
        return 0

    @property
    def nop(self) -> bool:
        return not (self.m_size and self.n_size and self.n_matrices)

    def check_common(self, max_m: int) -> None:
        what = self.name
        if self.src.kind != "L0C":
            raise NpusimError(f"{what}: source must be in L0C, got {self.src.kind}")
        check_range(what, "m_size", self.m_size, 0, max_m)
        check_range(what, "n_size", self.n_size, 0, 4095)
        check_range(what, "src_stride", self.src_stride, 0, 65535)
        check_range(what, "dst_stride", self.dst_stride, 1, 2 ** 32 - 1)
        if self.quant_pre not in QUANT_MODES:
            raise NpusimError(f"{what}: quant_pre {self.quant_pre!r} not modelled; "
                              f"allowed: {', '.join(QUANT_MODES)}")
        src_t, dst_t = name_of(self.src.dtype), name_of(self.dst.dtype)
        want = QUANT_MODES[self.quant_pre] or (src_t, src_t)
        if (src_t, dst_t) != want or src_t not in ("float32", "int32"):
            raise NpusimError(f"{what}: quant_pre {self.quant_pre} does not convert {src_t} "
                              f"-> {dst_t}; allowed: NoQuant float32->float32 or int32->int32, "
                              f"F322F16 float32->float16, F322BF16 float32->bfloat16")

    @property
    def src_elements(self) -> int:
        """Elements of L0C from ``src`` to the end of the last block read."""
        return ((self.n_matrices - 1) * self.src_matrix_elements
                + (self.nb - 1) * self.src_stride * FRACTAL_ROWS + self.m_size * FRACTAL_ROWS)

    def values(self) -> np.ndarray:
        """(matrices, m, n) converted values, as they leave the FixPipe."""
        es = self.src.dtype.itemsize
        base = typed(self.src.store, self.src.addr, self.src_elements, self.src.dtype)
        blocks = as_strided(base, shape=(self.n_matrices, self.m_size, self.nb, FRACTAL_ROWS),
                            strides=(self.src_matrix_elements * es, FRACTAL_ROWS * es,
                                     self.src_stride * FRACTAL_ROWS * es, es))
        x = blocks.reshape(self.n_matrices, self.m_size, self.nb * FRACTAL_ROWS)
        x = x[:, :, :self.n_size]
        if self.relu_en:
            x = np.maximum(x, 0)
        return x.astype(self.dst.dtype)

    def nz_view(self) -> np.ndarray:
        """(m, nb, 16) view of an NZ destination (Z columns ``dst_stride`` x 32 bytes apart)."""
        ds = self.dst.dtype.itemsize
        count = (self.nb - 1) * self.dst_stride * C0_BYTES // ds + self.m_size * FRACTAL_ROWS
        base = typed(self.dst.store, self.dst.addr, count, self.dst.dtype)
        return as_strided(base, shape=(self.m_size, self.nb, FRACTAL_ROWS),
                          strides=(FRACTAL_ROWS * ds, self.dst_stride * C0_BYTES, ds))

    @property
    def nz_bytes(self) -> int:
        return ((self.nb - 1) * self.dst_stride * C0_BYTES
                + self.m_size * FRACTAL_ROWS * self.dst.dtype.itemsize)

    def src_region(self) -> tuple:
        return region(self.src, self.src_elements * self.src.dtype.itemsize)

    def base_operands(self) -> dict:
        return {"dst": repr(self.dst), "src": repr(self.src), "m": self.m_size,
                "n": self.n_size, "src_stride": self.src_stride, "dst_stride": self.dst_stride,
                "quant_pre": self.quant_pre, "relu": self.relu_en}


@dataclass(frozen=True, kw_only=True, slots=True)
class Fixpipe(GmMove, L0cOut):
    """Fixpipe L0C -> GM with NZ2ND (``nz2nd``) or NZ2NZ and fp32 -> fp16/bf16 conversion."""

    name: ClassVar[str] = "fixpipe"
    pipe: ClassVar[str] = Pipe.FIX
    nz2nd: bool = True
    nd_num: int = 1
    src_nd_stride: int = 0
    dst_nd_stride: int = 0
    atomic: bool = False

    def __post_init__(self):
        if self.dst.kind != "GM":
            raise NpusimError(f"fixpipe: destination must be GM, got {self.dst.kind}; "
                              "use FixpipeL1 for L0C->L1")
        self.check_common(8192 if self.nz2nd else 65535)
        check_range(self.name, "nd_num", self.nd_num, 0, 65535)
        check_range(self.name, "src_nd_stride", self.src_nd_stride, 0, 512)
        check_range(self.name, "dst_nd_stride", self.dst_nd_stride, 0, 65535)
        if not self.nz2nd and (self.n_size % FRACTAL_ROWS or self.nd_num != 1):
            raise NpusimError(f"fixpipe: NZ output needs n_size a multiple of 16 and nd_num 1, "
                              f"got n_size {self.n_size}, nd_num {self.nd_num}")
        if self.nop:
            return
        self.src.check(self.src_elements * self.src.dtype.itemsize, "fixpipe read")
        self.dst.check(self.dst_elements * self.dst.dtype.itemsize, "fixpipe write")

    @property
    def n_matrices(self) -> int:
        return self.nd_num if self.nz2nd else 1

    @property
    def src_matrix_elements(self) -> int:
        return self.src_nd_stride * FRACTAL_ELEMENTS

    @property
    def dst_elements(self) -> int:
        if not self.nz2nd:
            return self.nz_bytes // self.dst.dtype.itemsize
        return ((self.n_matrices - 1) * self.dst_nd_stride
                + (self.m_size - 1) * self.dst_stride + self.n_size)

    def gm_blocks(self) -> list[tuple[int, int, int, int]]:
        """(addr, count, length, stride) in bytes of each GM block group written."""
        ds = self.dst.dtype.itemsize
        if self.nop:
            return [(self.dst.addr, 0, 0, 0)]
        if not self.nz2nd:
            return [(self.dst.addr, self.nb, self.m_size * FRACTAL_ROWS * ds,
                     self.dst_stride * C0_BYTES)]
        return [(self.dst.addr + i * self.dst_nd_stride * ds, self.m_size, self.n_size * ds,
                 self.dst_stride * ds) for i in range(self.n_matrices)]

    def gm_geometry(self):
        return self.gm_blocks()[0]

    def gm_span(self) -> tuple[int, int]:
        spans = [(a, a + block_span(a, c, n, s)) for a, c, n, s in self.gm_blocks()]
        return min(lo for lo, _ in spans), max(hi for _, hi in spans)

    def charged_bytes(self, chip) -> int:
        return sum(burst_bytes(*g, chip.gm_burst_bytes) for g in self.gm_blocks())

    @property
    def gm_write(self) -> bool:
        return True

    @property
    def rate_key(self) -> str:
        return "l0c_to_gm_bytes_per_cycle"

    def validate(self, chip) -> None:
        if not chip.has_fixpipe:
            raise no_fixpipe(chip, self.name)
        GmMove.validate(self, chip)
        check_align(chip, self.src, "l0c_align_bytes", self.name)
        if not self.nz2nd and self.dst.addr % C0_BYTES:
            raise NpusimError(f"fixpipe: NZ output at {self.dst.where()} must be 32-byte aligned")

    def head(self, chip) -> float:
        return chip.fixpipe_startup_cycles

    def execute(self) -> None:
        if self.nop:
            return
        x = self.values()
        if self.nz2nd:
            ds = self.dst.dtype.itemsize
            base = typed(self.dst.store, self.dst.addr, self.dst_elements, self.dst.dtype)
            out = as_strided(base, shape=x.shape, strides=(self.dst_nd_stride * ds,
                                                            self.dst_stride * ds, ds))
        else:
            out = self.nz_view()
            x = x[0].reshape(self.m_size, self.nb, FRACTAL_ROWS)
        out[...] = out + x if self.atomic else x

    def reads(self) -> tuple:
        return () if self.nop else (self.src_region(),)

    def writes(self) -> tuple:
        if self.nop:
            return ()
        return tuple((self.dst.store, a, a + block_span(a, c, n, s))
                     for a, c, n, s in self.gm_blocks())

    def moved_bytes(self) -> int:
        return self.n_matrices * self.m_size * self.n_size * self.dst.dtype.itemsize

    def path(self) -> str:
        return "L0C->GM" + (" (atomic add)" if self.atomic else "")

    def operands(self) -> dict:
        return {**self.base_operands(), "nz2nd": self.nz2nd, "nd_num": self.nd_num,
                "atomic": self.atomic}


@dataclass(frozen=True, kw_only=True, slots=True)
class FixpipeL1(L0cOut):
    """Fixpipe L0C -> L1 (NZ2NZ): ``dst_stride`` is the Z-column distance in 32-byte blocks."""

    name: ClassVar[str] = "fixpipe"
    pipe: ClassVar[str] = Pipe.FIX

    def __post_init__(self):
        if self.dst.kind != "L1":
            raise NpusimError(f"fixpipe: FixpipeL1 writes L1, got {self.dst.kind}")
        self.check_common(65535)
        if self.n_size % FRACTAL_ROWS:
            raise NpusimError(f"fixpipe: NZ output needs n_size a multiple of 16, "
                              f"got {self.n_size}")
        if not self.nop:
            self.src.check(self.src_elements * self.src.dtype.itemsize, "fixpipe read")
            self.dst.check(self.nz_bytes, "fixpipe write")

    def validate(self, chip) -> None:
        if not chip.has_fixpipe:
            raise no_fixpipe(chip, self.name)
        check_align(chip, self.src, "l0c_align_bytes", self.name)
        check_align(chip, self.dst, "l1_align_bytes", self.name)

    def head(self, chip) -> float:
        return chip.fixpipe_startup_cycles

    def body(self, chip) -> float:
        return self.m_size * self.nb * FRACTAL_ROWS / chip.fixpipe_elements_per_cycle

    def execute(self) -> None:
        if not self.nop:
            self.nz_view()[...] = self.values()[0].reshape(self.m_size, self.nb, FRACTAL_ROWS)

    def reads(self) -> tuple:
        return () if self.nop else (self.src_region(),)

    def writes(self) -> tuple:
        return () if self.nop else (region(self.dst, self.nz_bytes),)

    def moved_bytes(self) -> int:
        return self.m_size * self.nb * FRACTAL_ROWS * self.dst.dtype.itemsize

    def path(self) -> str:
        return "L0C->L1"

    def operands(self) -> dict:
        return self.base_operands()


# block_mode -> (length unit, source gap unit) in elements; the destination gap unit is 32 B
L0C_UB_UNITS = {"matrix": (FRACTAL_ELEMENTS, FRACTAL_ELEMENTS),
                "vector": (FRACTAL_ROWS, FRACTAL_ELEMENTS)}


@dataclass(frozen=True, kw_only=True, slots=True)
class L0cToUb(Instr):
    """DataCopy L0C (CO1) -> UB (CO2) on coupled cores: a raw copy of whole blocks."""

    name: ClassVar[str] = "data_copy_l0c_to_ub"
    pipe: ClassVar[str] = Pipe.V
    dst: object
    src: object
    block_count: int = 1
    block_len: int
    src_stride: int = 0
    dst_stride: int = 0
    block_mode: str = "matrix"

    def __post_init__(self):
        what = self.name
        if self.src.kind != "L0C" or self.dst.kind != "UB":
            raise NpusimError(f"{what}: path {self.src.kind}->{self.dst.kind}; allowed L0C->UB")
        if self.block_mode not in L0C_UB_UNITS:
            raise NpusimError(f"{what}: block_mode {self.block_mode!r}; allowed: "
                              f"{', '.join(L0C_UB_UNITS)}")
        if self.src.dtype != self.dst.dtype or self.src.dtype.itemsize not in (2, 4):
            raise NpusimError(f"{what}: copies without conversion: source {self.src.dtype} and "
                              f"destination {self.dst.dtype} must be the same 16/32-bit type")
        for name, hi in (("block_count", 4095), ("block_len", 65535), ("src_stride", 65535),
                         ("dst_stride", 65535)):
            check_range(what, name, getattr(self, name), 0, hi)
        self.src.check(block_span(0, self.block_count, self.length, self.src_step), what + " read")
        self.dst.check(block_span(0, self.block_count, self.length, self.dst_step),
                       what + " write")

    @property
    def length(self) -> int:
        return self.block_len * L0C_UB_UNITS[self.block_mode][0] * self.src.dtype.itemsize

    @property
    def src_step(self) -> int:
        gap = L0C_UB_UNITS[self.block_mode][1] * self.src.dtype.itemsize
        return self.length + self.src_stride * gap

    @property
    def dst_step(self) -> int:
        return self.length + self.dst_stride * C0_BYTES

    def validate(self, chip) -> None:
        if not chip.has_l0c_to_ub:
            raise NpusimError(f"{self.name}: chip {chip.name!r} has no L0C->UB path "
                              "(has_l0c_to_ub = false); on Atlas A2 use fixpipe (L0C->GM)")
        check_align(chip, self.src, "l0c_align_bytes", self.name)
        check_align(chip, self.dst, "ub_align_bytes", self.name)

    def head(self, chip) -> float:
        return chip.local_move_startup_cycles

    def body(self, chip) -> float:
        return self.moved_bytes() / chip.l0c_to_ub_bytes_per_cycle

    def execute(self) -> None:
        if self.block_count and self.block_len:
            s = blocks_view(self.src.store, self.src.addr, self.block_count, self.length,
                            self.src_step)
            blocks_view(self.dst.store, self.dst.addr, self.block_count, self.length,
                        self.dst_step)[...] = s

    def reads(self) -> tuple:
        return (region(self.src, block_span(0, self.block_count, self.length, self.src_step)),)

    def writes(self) -> tuple:
        return (region(self.dst, block_span(0, self.block_count, self.length, self.dst_step)),)

    def moved_bytes(self) -> int:
        return self.block_count * self.length

    def path(self) -> str:
        return "L0C->UB"

    def operands(self) -> dict:
        return {"dst": repr(self.dst), "src": repr(self.src), "blocks": self.block_count,
                "block_len": self.block_len, "block_mode": self.block_mode}


@dataclass(frozen=True, kw_only=True, slots=True)
class DataCopyNd2Nz(GmMove):
    """DataCopy GM -> L1 with Nd2NzParams: ND matrices become NZ fractals (A2 only)."""

    name: ClassVar[str] = "data_copy_nd2nz"
    pipe: ClassVar[str] = Pipe.MTE2
    dst: object
    src: object
    nd_num: int = 1
    n_value: int
    d_value: int
    src_nd_matrix_stride: int = 0
    src_d_value: int
    dst_nz_c0_stride: int
    dst_nz_n_stride: int = 1
    dst_nz_matrix_stride: int = 0

    def __post_init__(self):
        what = self.name
        if self.src.kind != "GM" or self.dst.kind != "L1":
            raise NpusimError(f"{what}: path {self.src.kind}->{self.dst.kind}; allowed GM->L1")
        if self.src.dtype.itemsize != self.dst.dtype.itemsize:
            raise NpusimError(f"{what}: source {self.src.dtype} and destination "
                              f"{self.dst.dtype} differ in size")
        for name, lo, hi in (("nd_num", 0, 4095), ("n_value", 0, 16384), ("d_value", 0, 65535),
                             ("src_nd_matrix_stride", 0, 65535), ("src_d_value", 1, 65535),
                             ("dst_nz_c0_stride", 1, 16384), ("dst_nz_n_stride", 1, 16384),
                             ("dst_nz_matrix_stride", 0, 16384)):
            check_range(what, name, getattr(self, name), lo, hi)
        if self.nop:
            return
        es = self.src.dtype.itemsize
        src_end = ((self.nd_num - 1) * self.src_nd_matrix_stride
                   + (self.n_value - 1) * self.src_d_value + self.d_value)
        self.src.check(src_end * es, what + " read")
        self.dst.check(self.dst_bytes, what + " write")

    @property
    def nop(self) -> bool:
        return not (self.nd_num and self.n_value and self.d_value)

    @property
    def blocks_per_row(self) -> int:
        return ceil_div(self.d_value * self.src.dtype.itemsize, C0_BYTES)

    @property
    def dst_bytes(self) -> int:
        if self.nop:
            return 0
        return ((self.nd_num - 1) * self.dst_nz_matrix_stride * self.dst.dtype.itemsize
                + (self.n_value - 1) * self.dst_nz_n_stride * C0_BYTES
                + (self.blocks_per_row - 1) * self.dst_nz_c0_stride * C0_BYTES + C0_BYTES)

    def gm_blocks(self) -> list[tuple[int, int, int, int]]:
        es = self.src.dtype.itemsize
        return [(self.src.addr + i * self.src_nd_matrix_stride * es, self.n_value,
                 self.d_value * es, self.src_d_value * es) for i in range(max(self.nd_num, 1))]

    def gm_geometry(self):
        return self.gm_blocks()[0] if not self.nop else (self.src.addr, 0, 0, 0)

    def gm_span(self) -> tuple[int, int]:
        if self.nop:
            return self.src.addr, self.src.addr
        spans = [(a, a + block_span(a, c, n, s)) for a, c, n, s in self.gm_blocks()]
        return min(lo for lo, _ in spans), max(hi for _, hi in spans)

    def charged_bytes(self, chip) -> int:
        if self.nop:
            return 0
        return sum(burst_bytes(*g, chip.gm_burst_bytes) for g in self.gm_blocks())

    @property
    def gm_write(self) -> bool:
        return False

    @property
    def rate_key(self) -> str:
        return "gm_to_l1_nd2nz_bytes_per_cycle"   # its own table, else the GM->L1 number

    def validate(self, chip) -> None:
        if not chip.has_gm_nd2nz:
            raise NpusimError(f"{self.name}: chip {chip.name!r} cannot convert ND to NZ on the "
                              "way into L1 (has_gm_nd2nz = false); convert with data_copy "
                              "block strides instead")
        GmMove.validate(self, chip)
        check_align(chip, self.dst, "l1_align_bytes", self.name)

    def execute(self) -> None:
        if self.nop:
            return
        es = self.src.dtype.itemsize
        uint = UINT_OF_SIZE[es]
        c0, nblk = C0_BYTES // es, self.blocks_per_row
        shape = (self.nd_num, self.n_value, self.d_value)
        src_end = ((self.nd_num - 1) * self.src_nd_matrix_stride
                   + (self.n_value - 1) * self.src_d_value + self.d_value)
        base = typed(self.src.store, self.src.addr, src_end, uint)
        rows = as_strided(base, shape=shape, strides=(self.src_nd_matrix_stride * es,
                                                      self.src_d_value * es, es))
        padded = np.zeros((self.nd_num, self.n_value, nblk * c0), uint)
        padded[:, :, :self.d_value] = rows
        dst = typed(self.dst.store, self.dst.addr, self.dst_bytes // es, uint)
        out = as_strided(dst, shape=(self.nd_num, self.n_value, nblk, c0),
                         strides=(self.dst_nz_matrix_stride * es, self.dst_nz_n_stride * C0_BYTES,
                                  self.dst_nz_c0_stride * C0_BYTES, es))
        out[...] = padded.reshape(out.shape)

    def reads(self) -> tuple:
        if self.nop:
            return ()
        return tuple((self.src.store, a, a + block_span(a, c, n, s))
                     for a, c, n, s in self.gm_blocks())

    def writes(self) -> tuple:
        return () if self.nop else (region(self.dst, self.dst_bytes),)

    def moved_bytes(self) -> int:
        if self.nop:
            return 0
        return self.nd_num * self.n_value * self.d_value * self.src.dtype.itemsize

    def path(self) -> str:
        return "GM->L1 (ND2NZ)"

    def operands(self) -> dict:
        return {"dst": repr(self.dst), "src": repr(self.src), "nd_num": self.nd_num,
                "n": self.n_value, "d": self.d_value, "src_d": self.src_d_value,
                "dst_c0_stride": self.dst_nz_c0_stride, "dst_n_stride": self.dst_nz_n_stride}
