"""Cube intrinsics of the kernel DSL, named as in Ascend C: mmad, load_data, fixpipe, ...

Parameter structs are keyword dataclasses with Ascend C's field names in snake_case
(``MmadParams(m=32, n=16, k=32)``); the instructions they lower to are in ``isa/cube.py``,
``isa/load.py`` and ``isa/fixpipe.py``, which document layouts, numerics and costs.

``set_hf32_mode`` / ``set_hf32_trans_mode`` set the core's HF32 state (a control register on the
chip); every ``mmad`` issued afterwards carries it. ``set_atomic_add`` (``npusim.dsl.core``) also
makes ``fixpipe`` to GM add instead of overwrite, as SetAtomicAdd does.

``mmad`` and ``load_data`` go through ``issue_keyed`` (``npusim/dsl/context.py``): a tile loop
issues the same one again and again, and each core builds and checks it once.
"""

from dataclasses import dataclass
from operator import attrgetter

from npusim.dsl.context import current, issue, issue_keyed
from npusim.dsl.core import DataCopyParams
from npusim.errors import NpusimError
from npusim.isa.cube import Mmad
from npusim.isa.fixpipe import DataCopyNd2Nz, Fixpipe, FixpipeL1, L0cToUb
from npusim.isa.load import InitConstValue, LoadData2D, LoadData3D


class HF32TransMode:
    """SetHF32TransMode values: ties to even, or (NEAREST_ZERO) ties away from zero."""

    NEAREST_EVEN = False
    NEAREST_ZERO = True


class QuantMode:
    """The QuantMode_t values FixPipe models (fp32 -> fp16 / bf16 with CAST_RINT, or none)."""

    NoQuant, F322F16, F322BF16 = "NoQuant", "F322F16", "F322BF16"


class FixpipeConfig:
    """Fixpipe output layout: CFG_ROW_MAJOR (NZ2ND, the default) or CFG_NZ."""

    CFG_ROW_MAJOR, CFG_NZ = "ROW_MAJOR", "NZ"


class BlockMode:
    """DataCopyEnhancedParams.blockMode for L0C -> UB copies."""

    BLOCK_MODE_MATRIX, BLOCK_MODE_VECTOR = "matrix", "vector"


@dataclass(frozen=True, kw_only=True)
class MmadParams:
    """Ascend C MmadParams. ``cmatrix_init_val`` True: C = A·B; False: C += A·B."""

    m: int = 0
    n: int = 0
    k: int = 0
    cmatrix_init_val: bool = True
    k_direction_align: bool = False


@dataclass(frozen=True, kw_only=True)
class LoadData2DParams:
    """Ascend C LoadData2DParams: indexes, strides and gaps in 512-byte fractals."""

    start_index: int = 0
    repeat_times: int = 0
    src_stride: int = 0
    dst_gap: int = 0
    if_transpose: bool = False


@dataclass(frozen=True, kw_only=True)
class LoadData3DParamsV2:
    """Ascend C LoadData3DParamsV2 (img2col); ``pad_list`` is [left, right, top, bottom]."""

    pad_list: tuple = (0, 0, 0, 0)
    l1_h: int = 0
    l1_w: int = 0
    channel_size: int = 0
    k_extension: int = 0
    m_extension: int = 0
    k_start_pt: int = 0
    m_start_pt: int = 0
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


LoadData3DParams = LoadData3DParamsV2


@dataclass(frozen=True, kw_only=True)
class FixpipeParamsV220:
    """Ascend C FixpipeParamsV220. ``src_stride``: Z-column height in rows (m rounded up to 16);
    ``dst_stride``: ND row length in elements (NZ2ND) or Z-column distance in 32-byte blocks."""

    n_size: int = 0
    m_size: int = 0
    src_stride: int = 0
    dst_stride: int = 0
    quant_pre: str = QuantMode.NoQuant
    relu_en: bool = False
    nd_num: int = 1
    src_nd_stride: int = 0
    dst_nd_stride: int = 0


FixpipeParams = FixpipeParamsV220


@dataclass(frozen=True, kw_only=True)
class Nd2NzParams:
    """Ascend C Nd2NzParams: element counts, except the dst_nz_c0/n strides (32-byte blocks)."""

    nd_num: int = 1
    n_value: int = 0
    d_value: int = 0
    src_nd_matrix_stride: int = 0
    src_d_value: int = 0
    dst_nz_c0_stride: int = 0
    dst_nz_n_stride: int = 0
    dst_nz_matrix_stride: int = 0


@dataclass(frozen=True, kw_only=True)
class DataCopyEnhancedParams:
    """Ascend C DataCopyEnhancedParams, as far as the L0C -> UB raw copy uses it."""

    block_mode: str = BlockMode.BLOCK_MODE_MATRIX


def set_hf32_mode(enable: bool) -> None:
    """SetHF32Mode: following mmads round fp32 inputs to HF32 (Atlas A2)."""
    current().hf32_mode = bool(enable)


def set_hf32_trans_mode(mode: bool) -> None:
    """SetHF32TransMode: HF32TransMode.NEAREST_EVEN (False) or NEAREST_ZERO (True)."""
    current().hf32_trans_mode = bool(mode)


def mmad(c, a, b, params: MmadParams) -> None:
    """Mmad(dst, fm, filter, MmadParams): C (L0C) = / += A (L0A) · B (L0B)."""
    ctx = current()
    hf32 = getattr(ctx, "hf32_mode", False)
    values = (params.m, params.n, params.k, params.cmatrix_init_val, params.k_direction_align,
              hf32, getattr(ctx, "hf32_trans_mode", False),
              ctx.chip.hf32_mantissa_bits if hf32 else 0)
    issue_keyed(Mmad, (c, a, b), values, lambda: Mmad(c=c, a=a, b=b, **_named(_MMAD, values)))


_MMAD = ("m", "n", "k", "init", "k_direction_align", "hf32", "hf32_trans_mode",
         "hf32_mantissa_bits")


def load_data(dst, src, params) -> None:
    """LoadData L1 -> L0A/L0B with LoadData2DParams (fractals) or LoadData3DParamsV2 (img2col)."""
    if isinstance(params, LoadData2DParams):
        values = (params.start_index, params.repeat_times, params.src_stride, params.dst_gap,
                  params.if_transpose)
        issue_keyed(LoadData2D, (dst, src), values,
                    lambda: LoadData2D(dst=dst, src=src, **_named(_LOAD_2D, values)))
    elif isinstance(params, LoadData3DParamsV2):
        load_data_3d(dst, src, params)
    else:
        raise NpusimError(f"load_data: params must be LoadData2DParams or LoadData3DParamsV2, "
                          f"got {type(params).__name__}")


def load_data_3d(dst, src, params: LoadData3DParamsV2) -> None:
    """LoadData with LoadData3DParamsV2: img2col of an NC1HWC0 map in L1 into L0A/L0B."""
    values = _load_3d_values(params)
    pad = tuple(values[0])                          # pad_list first: keyed element by element
    issue_keyed(LoadData3D, (dst, src), (len(pad), *pad, *values[1:]),
                lambda: LoadData3D(dst=dst, src=src,
                                   **_named(_LOAD_3D, (pad, *values[1:]))))


def _named(names: tuple, values: tuple) -> dict:
    return dict(zip(names, values, strict=True))


_LOAD_2D = ("start_index", "repeat_times", "src_stride", "dst_gap", "if_transpose")
_LOAD_3D = tuple(LoadData3DParamsV2.__dataclass_fields__)
_load_3d_values = attrgetter(*_LOAD_3D)


def fixpipe(dst, src, params: FixpipeParamsV220,
            config: str = FixpipeConfig.CFG_ROW_MAJOR) -> None:
    """Fixpipe L0C -> GM (NZ2ND by default, or CFG_NZ) or L0C -> L1 (CFG_NZ only)."""
    common = dict(dst=dst, src=src, m_size=params.m_size, n_size=params.n_size,
                  src_stride=params.src_stride, dst_stride=params.dst_stride,
                  quant_pre=params.quant_pre, relu_en=params.relu_en)
    if config not in (FixpipeConfig.CFG_ROW_MAJOR, FixpipeConfig.CFG_NZ):
        raise NpusimError(f"fixpipe: config {config!r}; allowed CFG_ROW_MAJOR, CFG_NZ")
    if dst.kind == "L1":
        if config != FixpipeConfig.CFG_NZ:
            raise NpusimError("fixpipe: L0C->L1 keeps NZ; pass config=FixpipeConfig.CFG_NZ")
        issue(FixpipeL1(**common))
        return
    issue(Fixpipe(**common, nz2nd=config == FixpipeConfig.CFG_ROW_MAJOR, nd_num=params.nd_num,
                  src_nd_stride=params.src_nd_stride, dst_nd_stride=params.dst_nd_stride,
                  atomic=getattr(current(), "atomic", False)))


def data_copy_l0c_to_ub(dst, src, params: DataCopyParams,
                        enhanced: DataCopyEnhancedParams | None = None) -> None:
    """DataCopy CO1 -> CO2 on coupled cores (Atlas training): a raw copy in fractal units."""
    mode = (enhanced or DataCopyEnhancedParams()).block_mode
    issue(L0cToUb(dst=dst, src=src, block_count=params.block_count, block_len=params.block_len,
                  src_stride=params.src_stride, dst_stride=params.dst_stride, block_mode=mode))


def data_copy_nd2nz(dst, src, params: Nd2NzParams) -> None:
    """DataCopy GM -> L1 with Nd2NzParams: ND to NZ on the way (Atlas A2)."""
    issue(DataCopyNd2Nz(dst=dst, src=src, nd_num=params.nd_num, n_value=params.n_value,
                        d_value=params.d_value, src_nd_matrix_stride=params.src_nd_matrix_stride,
                        src_d_value=params.src_d_value, dst_nz_c0_stride=params.dst_nz_c0_stride,
                        dst_nz_n_stride=params.dst_nz_n_stride,
                        dst_nz_matrix_stride=params.dst_nz_matrix_stride))


@dataclass(frozen=True, kw_only=True)
class InitConstValueParams:
    """Ascend C InitConstValueParams: repeats of ``block_num`` 32-byte blocks, ``dst_gap``
    blocks apart, filled with ``init_value``."""

    repeat_times: int = 1
    block_num: int = 1
    dst_gap: int = 0
    init_value: float = 0


def init_const_value(dst, params: InitConstValueParams) -> None:
    """InitConstValue: fill L1 with a constant on MTE2 (zeroing before a stride expansion)."""
    issue(InitConstValue(dst=dst, repeat_times=params.repeat_times, block_num=params.block_num,
                         dst_gap=params.dst_gap, init_value=params.init_value))
