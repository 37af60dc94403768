"""The cube instructions executed directly on simulated memories (no engine).

A GEMM goes GM (ND) -> DataCopyNd2Nz -> L1 (NZ) -> LoadData2D -> L0A (ZZ) / L0B (ZN) -> Mmad over
several k tiles -> Fixpipe -> GM (ND), and is compared bit for bit with goldens written here from
the documented order, independently of ``isa/cube.py``: per k0-step, exact sum (math.fsum) of
the products, one rounding to fp32, fp32 accumulation. Layout checks use the asc-devkit
reference models' index arithmetic, not the simulator's helpers.
"""

import math

import numpy as np
import pytest

import npusim
from npusim.dsl.context import CoreContext, recording
from npusim.dsl.core import DataCopyParams
from npusim.dsl.cube import (
    FixpipeConfig,
    FixpipeParams,
    HF32TransMode,
    LoadData2DParams,
    LoadData3DParams,
    MmadParams,
    Nd2NzParams,
    QuantMode,
    data_copy_l0c_to_ub,
    data_copy_nd2nz,
    fixpipe,
    load_data,
    load_data_3d,
    mmad,
    set_hf32_mode,
    set_hf32_trans_mode,
)
from npusim.dtypes import bfloat16
from npusim.engine.launch import PIPES
from npusim.engine.memory import Buffer, GlobalMemory, LocalTensor
from npusim.errors import MemoryAccessError, NpusimError
from npusim.isa.cube import Mmad
from npusim.isa.fixpipe import DataCopyNd2Nz, Fixpipe, FixpipeL1, L0cToUb
from npusim.isa.load import LoadData2D, LoadData3D

A2 = npusim.load_chip("atlas-a2")
TRAINING = npusim.load_chip("atlas-training")
SIZE_KEYS = {"L1": "l1_bytes", "L0A": "l0a_bytes", "L0B": "l0b_bytes", "L0C": "l0c_bytes",
             "UB": "ub_bytes"}


def up(x: int, a: int) -> int:
    return -(-x // a) * a


class Core:
    """The on-chip buffers of one core, and tensors carved from them."""

    def __init__(self, chip):
        self.chip = chip
        self.bufs = {b: Buffer(b, "core0", getattr(chip, key)) for b, key in SIZE_KEYS.items()}

    def t(self, buf: str, addr: int, dtype, count: int, exact: bool = False) -> LocalTensor:
        """A tensor of ``count`` elements; ``exact`` ends its allocation right there."""
        dt = np.dtype(dtype)
        limit = addr + count * dt.itemsize if exact else self.bufs[buf].size
        return LocalTensor(self.bufs[buf], addr, dt, count, limit, buf)


def run(chip, *insts) -> None:
    for inst in insts:
        inst.validate(chip)
        inst.execute()


# ---- goldens ------------------------------------------------------------------------------

def hf32_golden(x: np.ndarray, bits: int, ties_away: bool) -> np.ndarray:
    """fp32 -> ``bits`` mantissa bits by float64 arithmetic (not bit tricks)."""
    x64 = x.astype(np.float64)
    _, e = np.frexp(x64)
    q = np.ldexp(1.0, np.maximum(e - 1, -126) - bits)
    r = x64 / q
    r = np.sign(r) * np.floor(np.abs(r) + 0.5) if ties_away else np.rint(r)
    return (r * q).astype(np.float32)


def mmad_golden(a, b, k0: int, exact: bool = True, acc=None) -> np.ndarray:
    """C = acc + A·B in the documented order; ``exact`` sums each step with math.fsum."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    m, k = a.shape
    n = b.shape[1]
    out = np.zeros((m, n), np.float32) if acc is None else acc.astype(np.float32).copy()
    for s in range(0, k, k0):
        part = np.empty((m, n), np.float32)
        for i in range(m):
            for j in range(n):
                terms = [a64[i, t] * b64[t, j] for t in range(s, min(s + k0, k))]
                if exact:
                    total = math.fsum(terms)
                else:
                    total = terms[0]
                    for term in terms[1:]:
                        total += term
                part[i, j] = total
        out = (out + part).astype(np.float32)
    return out


def im2col_golden(x_chw, fh, fw, stride, dilation, pads, pad_value=0.0) -> np.ndarray:
    """Rows: output positions (ho, wo); columns (c, kh, kw): the plain loop definition."""
    c, h, w = x_chw.shape
    left, right, top, bottom = pads
    ho = (h + top + bottom - dilation[0] * (fh - 1) - 1) // stride[0] + 1
    wo = (w + left + right - dilation[1] * (fw - 1) - 1) // stride[1] + 1
    out = np.full((ho * wo, c, fh, fw), pad_value, x_chw.dtype)
    for oh in range(ho):
        for ow in range(wo):
            for kh in range(fh):
                for kw in range(fw):
                    ih = oh * stride[0] - top + kh * dilation[0]
                    iw = ow * stride[1] - left + kw * dilation[1]
                    if 0 <= ih < h and 0 <= iw < w:
                        out[oh * wo + ow, :, kh, kw] = x_chw[:, ih, iw]
    return out


def k_order(cols, c0: int):
    """im2col_golden's (c, kh, kw) columns reordered to the cube's (c1, kh, kw, c0)."""
    n, c, fh, fw = cols.shape
    return cols.reshape(n, c // c0, c0, fh, fw).transpose(0, 1, 3, 4, 2).reshape(n, -1)


# ---- the GEMM through the instructions ----------------------------------------------------

def gemm(chip, a, b, *, b_transposed, k_tile, out_dtype=np.float32, quant="NoQuant",
         hf32=False, ties_away=False, a_start_shift=0):
    """C = A·B on ``chip`` through the cube instructions; returns C as read from GM."""
    m, k = a.shape
    n = b.shape[1]
    dt = a.dtype
    c0 = 32 // dt.itemsize
    mp, npad, kp = up(m, 16), up(n, 16), up(k, 16)
    gm = GlobalMemory()
    a_gm = gm.tensor("a", dt, m * k, a)
    b_nd = b.T if b_transposed else b
    b_gm = gm.tensor("b", dt, k * n, b_nd)
    c_gm = gm.tensor("c", out_dtype, m * n)
    gm.load_inputs()
    core = Core(chip)
    l1a = core.t("L1", 0, dt, mp * kp)
    l1b = core.t("L1", mp * kp * dt.itemsize, dt, kp * npad)
    rows, cols = (n, k) if b_transposed else (k, n)
    run(chip, DataCopyNd2Nz(dst=l1a, src=a_gm, n_value=m, d_value=k, src_d_value=k,
                            dst_nz_c0_stride=mp),
        DataCopyNd2Nz(dst=l1b, src=b_gm, n_value=rows, d_value=cols, src_d_value=cols,
                      dst_nz_c0_stride=up(rows, 16)))
    l0c = core.t("L0C", 0, np.float32, mp * npad)
    m1, n1 = mp // 16, npad // 16
    for t, k_lo in enumerate(range(0, k, k_tile)):
        kt = min(k_tile, k - k_lo)
        k1t = -(-kt // c0)
        l0a, l0b = core.t("L0A", 0, dt, mp * k1t * c0), core.t("L0B", 0, dt, k1t * c0 * npad)
        for i in range(m1):
            run(chip, LoadData2D(dst=l0a[i * k1t * 16 * c0], src=l1a,
                                 start_index=(k_lo // c0) * m1 + i + a_start_shift,
                                 repeat_times=k1t, src_stride=m1))
        if b_transposed:   # L1 fractal (nn, kk) sits at kk*n1 + nn: already ZN
            run(chip, LoadData2D(dst=l0b, src=l1b, start_index=(k_lo // c0) * n1,
                                 repeat_times=k1t * n1, src_stride=1))
        else:              # L1 fractal (kk, nn) at nn*kp1 + kk, transposed into ZN
            for kk in range(k1t):
                run(chip, LoadData2D(dst=l0b[kk * n1 * 256], src=l1b, start_index=k_lo // 16 + kk,
                                     repeat_times=n1, src_stride=kp // 16, if_transpose=True))
        run(chip, Mmad(c=l0c, a=l0a, b=l0b, m=m, n=n, k=kt, init=t == 0, hf32=hf32,
                       hf32_trans_mode=ties_away,
                       hf32_mantissa_bits=chip.hf32_mantissa_bits if hf32 else 0))
    run(chip, Fixpipe(dst=c_gm, src=l0c, m_size=m, n_size=n, src_stride=mp, dst_stride=n,
                      quant_pre=quant))
    return c_gm.array(m * n).reshape(m, n).copy()


def inputs(dtype, m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype))


def magnitude(a, b) -> np.ndarray:
    return np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))


GEMM_CASES = [  # dtype, (m, n, k), b transposed, k tile
    (np.float16, (64, 32, 96), False, 32),
    (np.float16, (33, 47, 70), False, 32),
    (np.float16, (33, 47, 70), True, 48),
    (bfloat16, (48, 32, 80), False, 32),
    (bfloat16, (33, 47, 70), False, 32),
    (np.float32, (40, 32, 64), True, 24),
    (np.float32, (33, 47, 70), True, 16),
]


@pytest.mark.parametrize("dtype,shape,b_t,k_tile", GEMM_CASES)
def test_gemm_bit_exact_fp32_out(dtype, shape, b_t, k_tile):
    m, n, k = shape
    a, b = inputs(dtype, m, n, k)
    c = gemm(A2, a, b, b_transposed=b_t, k_tile=k_tile)
    k0 = 32 // np.dtype(dtype).itemsize
    golden = mmad_golden(a, b, k0, exact=np.dtype(dtype).itemsize == 2)
    assert c.view(np.uint32).tolist() == golden.view(np.uint32).tolist()
    truth = a.astype(np.float64) @ b.astype(np.float64)
    assert np.all(np.abs(c - truth) <= 1e-3 * magnitude(a, b))


@pytest.mark.parametrize("dtype,shape,b_t,k_tile", GEMM_CASES[:5])
def test_gemm_fp16_and_bf16_out(dtype, shape, b_t, k_tile):
    m, n, k = shape
    a, b = inputs(dtype, m, n, k, seed=1)
    golden = mmad_golden(a, b, 16)
    truth = a.astype(np.float64) @ b.astype(np.float64)
    c16 = gemm(A2, a, b, b_transposed=b_t, k_tile=k_tile, out_dtype=np.float16, quant="F322F16")
    assert c16.view(np.uint16).tolist() == golden.astype(np.float16).view(np.uint16).tolist()
    assert np.all(np.abs(c16 - truth) <= 1e-3 * magnitude(a, b))
    cbf = gemm(A2, a, b, b_transposed=b_t, k_tile=k_tile, out_dtype=bfloat16, quant="F322BF16")
    assert cbf.view(np.uint16).tolist() == golden.astype(bfloat16).view(np.uint16).tolist()
    assert np.all(np.abs(cbf.astype(np.float64) - truth) <= 4e-3 * magnitude(a, b))


@pytest.mark.parametrize("shape", [(32, 32, 64), (33, 47, 70)])
@pytest.mark.parametrize("ties_away", [False, True])
def test_gemm_hf32(shape, ties_away):
    m, n, k = shape
    a, b = inputs(np.float32, m, n, k, seed=2)
    c = gemm(A2, a, b, b_transposed=True, k_tile=32, hf32=True, ties_away=ties_away)
    bits = A2.hf32_mantissa_bits
    ah, bh = hf32_golden(a, bits, ties_away), hf32_golden(b, bits, ties_away)
    assert c.view(np.uint32).tolist() == mmad_golden(ah, bh, 8).view(np.uint32).tolist()
    truth = a.astype(np.float64) @ b.astype(np.float64)
    assert np.all(np.abs(c - truth) <= 1e-3 * magnitude(a, b))
    assert not np.array_equal(c, gemm(A2, a, b, b_transposed=True, k_tile=32))


def test_gemm_with_a_wrong_fractal_offset_is_wrong():
    a, b = inputs(np.float16, 32, 32, 64)
    good = gemm(A2, a, b, b_transposed=False, k_tile=32)
    bad = gemm(A2, a, b, b_transposed=False, k_tile=32, a_start_shift=1)
    assert np.array_equal(good, mmad_golden(a, b, 16))
    assert not np.allclose(bad, good)


def test_hf32_rounding_ties():
    bits = A2.hf32_mantissa_bits
    tie = np.array([1 + 2.0 ** -(bits + 1), -(1 + 3 * 2.0 ** -(bits + 1))], np.float32)
    core = Core(A2)
    for ties_away, want in ((False, [1.0, -(1 + 2 * 2.0 ** -bits)]),
                            (True, [1 + 2.0 ** -bits, -(1 + 2 * 2.0 ** -bits)])):
        assert hf32_golden(tie, bits, ties_away).tolist() == want
        a = np.zeros((2, 8), np.float32)
        a[:, 0] = tie
        b = np.zeros((8, 16), np.float32)
        b[0, 0] = 1.0
        a_t, b_t = core.t("L0A", 0, np.float32, 256), core.t("L0B", 0, np.float32, 128)
        a_t.array()[:16] = a.reshape(-1)               # ZZ: row i of the 16 x 8 fractal
        b_t.array()[:128] = b.T.reshape(-1)
        c = core.t("L0C", 0, np.float32, 256)
        run(A2, Mmad(c=c, a=a_t, b=b_t, m=2, n=16, k=8, hf32=True, hf32_trans_mode=ties_away,
                     hf32_mantissa_bits=bits))
        assert c.array()[[0, 16]].tolist() == want


def test_mmad_int8_and_accumulate():
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (16, 64), dtype=np.int8)
    b = rng.integers(-128, 128, (64, 16), dtype=np.int8)
    core = Core(A2)
    a_t, b_t = core.t("L0A", 0, np.int8, 16 * 64), core.t("L0B", 0, np.int8, 64 * 16)
    a_t.array()[:] = a.reshape(16, 2, 32).transpose(1, 0, 2).reshape(-1)     # ZZ, k0 = 32
    b_t.array()[:] = b.reshape(2, 32, 16).transpose(0, 2, 1).reshape(-1)     # ZN
    c = core.t("L0C", 0, np.int32, 256)
    c.array()[:] = 7
    run(A2, Mmad(c=c, a=a_t, b=b_t, m=16, n=16, k=64, init=False))
    assert np.array_equal(c.array().reshape(16, 16), 7 + a.astype(np.int32) @ b.astype(np.int32))


def test_mmad_gemv_reads_a_as_a_vector():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((1, 40)).astype(np.float16)
    b = rng.standard_normal((40, 16)).astype(np.float16)
    core = Core(A2)
    a_t, b_t = core.t("L0A", 0, np.float16, 48), core.t("L0B", 0, np.float16, 48 * 16)
    a_t.array()[:40] = a[0]
    bp = np.zeros((48, 16), np.float16)
    bp[:40] = b
    b_t.array()[:] = bp.reshape(3, 16, 16).transpose(0, 2, 1).reshape(-1)
    c = core.t("L0C", 0, np.float32, 256)
    run(A2, Mmad(c=c, a=a_t, b=b_t, m=1, n=16, k=40))
    assert np.array_equal(c.array()[:16], mmad_golden(a, b, 16)[0])


def test_mmad_odd_shape_leaves_padding_and_ignores_padded_inputs():
    core = Core(A2)
    a_t, b_t = core.t("L0A", 0, np.float16, 512), core.t("L0B", 0, np.float16, 512)
    a_t.array()[:] = 1.0                       # the padded rows and k columns hold 1 too
    b_t.array()[:] = 2.0
    c = core.t("L0C", 0, np.float32, 256)
    c.array()[:] = -5.0
    run(A2, Mmad(c=c, a=a_t, b=b_t, m=3, n=5, k=20))
    full = c.array().reshape(16, 16)
    assert np.all(full[:3, :5] == 40.0) and np.all(full[3:] == -5.0) and np.all(full[:, 5:] == -5)


# ---- loads -------------------------------------------------------------------------------

def test_load2d_strides_gaps_and_transpose():
    core = Core(A2)
    src = core.t("L1", 0, np.float16, 8 * 256)
    src.array()[:] = np.arange(8 * 256) % 2048
    dst = core.t("L0A", 0, np.float16, 12 * 256)
    run(A2, LoadData2D(dst=dst, src=src, start_index=1, repeat_times=3, src_stride=2, dst_gap=1))
    frac = src.array().reshape(8, 16, 16)
    out = dst.array().reshape(12, 16, 16)
    for r, s in enumerate((1, 3, 5)):              # reference model load2d.py's addresses
        assert np.array_equal(out[2 * r], frac[s])
    assert np.all(out[1] == 0)
    dst_b = core.t("L0B", 0, np.float16, 4 * 256)
    run(A2, LoadData2D(dst=dst_b, src=src, repeat_times=2, src_stride=0, if_transpose=True))
    assert np.array_equal(dst_b.array().reshape(4, 16, 16)[1], frac[0].T)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_load3d_img2col_to_l0a(dtype):
    c0 = 32 // np.dtype(dtype).itemsize
    c, h, w, fh, fw = 2 * c0, 9, 11, 3, 2
    pads, stride, dil = (1, 2, 1, 0), (2, 2), (2, 2)
    x = np.random.default_rng(5).standard_normal((c, h, w)).astype(dtype)
    core = Core(A2)
    src = core.t("L1", 0, dtype, c * h * w)
    src.array()[:] = x.reshape(c // c0, c0, h, w).transpose(0, 2, 3, 1).reshape(-1)  # NC1HWC0
    cols = k_order(im2col_golden(x, fh, fw, stride, dil, pads, pad_value=0.5), c0)
    m_start, m_ext, k_start, k_ext = 1, 15, c0, cols.shape[1] - c0    # 18 positions in all
    dst = core.t("L0A", 0, dtype, up(m_ext, 16) * k_ext)
    run(A2, LoadData3D(dst=dst, src=src, l1_h=h, l1_w=w, channel_size=c, k_extension=k_ext,
                       m_extension=m_ext, k_start_pt=k_start, m_start_pt=m_start,
                       pad_list=pads, stride_h=2, stride_w=2, filter_h=fh, filter_w=fw,
                       dilation_filter_h=2, dilation_filter_w=2, pad_value=0.5))
    zz = dst.array().reshape(up(m_ext, 16) // 16, k_ext // c0, 16, c0)
    got = zz.transpose(0, 2, 1, 3).reshape(up(m_ext, 16), k_ext)[:m_ext]
    assert np.array_equal(got, cols[m_start:m_start + m_ext, k_start:])


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_load3d_to_l0b_and_transposed_l0a_match_reference_model(dtype):
    c0 = 32 // np.dtype(dtype).itemsize
    c, h, w = 3 * c0, 8, 8
    x = np.random.default_rng(6).standard_normal((c, h, w)).astype(dtype)
    core = Core(A2)
    src = core.t("L1", 0, dtype, c * h * w)
    src.array()[:] = x.reshape(c // c0, c0, h, w).transpose(0, 2, 3, 1).reshape(-1)
    params = dict(l1_h=h, l1_w=w, channel_size=c, k_extension=2 * c0, m_extension=32,
                  m_start_pt=16, filter_h=2, filter_w=2)
    cols = k_order(im2col_golden(x, 2, 2, (1, 1), (1, 1), (0, 0, 0, 0)), c0)
    sub = cols[16:48, :2 * c0]                       # positions x channels
    # load3d.py: src_fractal_z [k1, m1, 16, c0] (m1: 16 positions) ...
    fz = sub.reshape(32 // 16, 16, 2, c0).transpose(2, 0, 1, 3)
    if np.dtype(dtype).itemsize == 2:
        want_b = fz.transpose(1, 0, 3, 2)           # move_to_l0b, b16
        want_a = fz.transpose(0, 1, 3, 2)           # move_to_l0a with en_transpose, b16
    else:                                             # _process_b32_transpose
        t = fz.transpose(1, 2, 0, 3).reshape(2, 16, 2 * c0)
        t = np.pad(t, ((0, 0), (0, 0), (0, (-2 * c0) % 16))).reshape(2, 2, 8, -1)
        want_b = t.transpose(0, 1, 3, 2)
        want_a = want_b.reshape(2, 2, -1, 16, 8).transpose(2, 0, 1, 3, 4)
    dst_b = core.t("L0B", 0, dtype, want_b.size)
    run(A2, LoadData3D(dst=dst_b, src=src, **params))
    assert np.array_equal(dst_b.array(), want_b.reshape(-1))
    dst_a = core.t("L0A", 0, dtype, want_a.size)
    run(A2, LoadData3D(dst=dst_a, src=src, en_transpose=True, **params))
    assert np.array_equal(dst_a.array(), want_a.reshape(-1))


# ---- moves out of L0C and into L1 --------------------------------------------------------

def cce_nd2nz(src, nd_num, n, d, snm, sd, dc0, dn, dnm, dst_len, es):
    """The CCE copy_gm_to_cbuf_multi_nd2nz loop, in elements (c0 = 32 B)."""
    c0 = 32 // es
    dst = np.zeros(dst_len, src.dtype)
    for i in range(nd_num):
        for j in range(n):
            for kb in range(-(-d // c0)):
                block = src[i * snm + j * sd + kb * c0:][:min(c0, d - kb * c0)]
                at = i * dnm + j * dn * c0 + kb * dc0 * c0
                dst[at:at + len(block)] = block
                dst[at + len(block):at + c0] = 0
    return dst


def test_nd2nz_multi_matrix_and_zero_pad():
    rng = np.random.default_rng(7)
    src = rng.integers(1, 100, 400).astype(np.float16)
    gm = GlobalMemory()
    g = gm.tensor("x", np.float16, 400, src)
    gm.load_inputs()
    core = Core(A2)
    dst = core.t("L1", 0, np.float16, 4096)
    dst.array()[:] = -1
    p = dict(nd_num=2, n_value=5, d_value=21, src_nd_matrix_stride=150, src_d_value=25,
             dst_nz_c0_stride=8, dst_nz_n_stride=1, dst_nz_matrix_stride=512)
    inst = DataCopyNd2Nz(dst=dst, src=g, **p)
    run(A2, inst)
    want = cce_nd2nz(src, 2, 5, 21, 150, 25, 8, 1, 512, 4096, 2)
    written = want != 0
    assert np.array_equal(dst.array()[written], want[written])
    assert np.all(dst.array()[:2 * 8 * 16].reshape(2, 8, 16)[1, :5, 5:] == 0)
    assert inst.moved_bytes() == 2 * 5 * 21 * 2


def test_fixpipe_nz_to_l1_relu_nd_num_and_atomic():
    core = Core(A2)
    vals = np.random.default_rng(8).standard_normal(2 * 4 * 256).astype(np.float32)
    l0c = core.t("L0C", 0, np.float32, vals.size)
    l0c.array()[:] = vals
    nz = vals[:4 * 256].reshape(2, 32, 16)          # two Z columns of 32 rows
    logical = nz.transpose(1, 0, 2).reshape(32, 32)
    l1 = core.t("L1", 0, np.float16, 2048)
    run(A2, FixpipeL1(dst=l1, src=l0c, m_size=32, n_size=32, src_stride=32, dst_stride=64,
                      quant_pre="F322F16", relu_en=True))
    got = l1.array().reshape(-1, 16)
    want = np.maximum(nz, 0).astype(np.float16)
    assert np.array_equal(got[:32], want[0]) and np.array_equal(got[64:96], want[1])
    gm = GlobalMemory()
    out = gm.tensor("out", np.float32, 2 * 40 * 32)
    gm.load_inputs()
    out.array()[:] = 1.0
    run(A2, Fixpipe(dst=out, src=l0c, m_size=32, n_size=20, src_stride=32, dst_stride=20,
                    nd_num=2, src_nd_stride=4, dst_nd_stride=1280, atomic=True))
    res = out.array().reshape(2, 1280)
    second = vals[1024:].reshape(2, 32, 16).transpose(1, 0, 2).reshape(32, 32)
    assert np.array_equal(res[0, :640].reshape(32, 20), 1 + logical[:, :20])
    assert np.array_equal(res[1, :640].reshape(32, 20), 1 + second[:, :20])
    assert np.all(res[:, 640:] == 1.0)


def test_training_matmul_through_l0c_to_ub():
    rng = np.random.default_rng(9)
    a = rng.standard_normal((32, 32)).astype(np.float16)
    b = rng.standard_normal((32, 32)).astype(np.float16)
    core = Core(TRAINING)
    l1a, l1b = core.t("L1", 0, np.float16, 1024), core.t("L1", 2048, np.float16, 1024)
    l1a.array()[:] = a.reshape(32, 2, 16).transpose(1, 0, 2).reshape(-1)   # NZ, as a kernel
    l1b.array()[:] = b.reshape(32, 2, 16).transpose(1, 0, 2).reshape(-1)   # would build it
    l0a, l0b = core.t("L0A", 0, np.float16, 1024), core.t("L0B", 0, np.float16, 1024)
    l0c, ub = core.t("L0C", 0, np.float32, 1024), core.t("UB", 0, np.float32, 1024)
    insts = [LoadData2D(dst=l0a[i * 512], src=l1a, start_index=i, repeat_times=2, src_stride=2)
             for i in range(2)]
    insts += [LoadData2D(dst=l0b[kk * 512], src=l1b, start_index=kk, repeat_times=2,
                         src_stride=2, if_transpose=True) for kk in range(2)]
    insts += [Mmad(c=l0c, a=l0a, b=l0b, m=32, n=32, k=32),
              L0cToUb(dst=ub, src=l0c, block_count=1, block_len=4)]
    run(TRAINING, *insts)
    c = ub.array().reshape(2, 32, 16).transpose(1, 0, 2).reshape(32, 32)
    assert np.array_equal(c, mmad_golden(a, b, 16))


def test_l0c_to_ub_vector_mode_gaps():
    core = Core(TRAINING)
    l0c = core.t("L0C", 0, np.float32, 4 * 256)
    l0c.array()[:] = np.arange(1024)
    ub = core.t("UB", 0, np.float32, 1024)
    run(TRAINING, L0cToUb(dst=ub, src=l0c, block_count=3, block_len=2, src_stride=1,
                          dst_stride=2, block_mode="vector"))
    got = ub.array()
    for i in range(3):                    # 32 elements per block; src step 32 + 256, dst 32 + 16
        assert np.array_equal(got[i * 48:i * 48 + 32], np.arange(i * 288, i * 288 + 32))


# ---- costs -------------------------------------------------------------------------------

def test_mmad_costs():
    core = Core(A2)
    for name in ("L0A", "L0B", "L0C"):            # room for the 128 KB fp32 A of this shape
        core.bufs[name] = Buffer(name, "core0", 1 << 20)

    def mm(dtype, hf32=False):
        t = core.t
        return Mmad(c=t("L0C", 0, np.float32, 128 * 64), a=t("L0A", 0, dtype, 1),
                    b=t("L0B", 0, dtype, 1), m=128, n=64, k=256, hf32=hf32,
                    hf32_mantissa_bits=11 if hf32 else 0)
    f16 = mm(np.float16)
    assert f16.head(A2) == A2.head_cycles == 6
    assert f16.body(A2) == 8 * 4 * 16 == 512
    assert mm(bfloat16).body(A2) == 512
    assert mm(np.float32).body(A2) == 8 * 4 * 32 * A2.b32_cycles_per_fractal == 4 * 512
    assert mm(np.float32, hf32=True).body(A2) == 8 * 4 * 32 * A2.hf32_cycles_per_fractal
    odd = Mmad(c=core.t("L0C", 0, np.float32, 1), a=core.t("L0A", 0, np.float16, 1),
               b=core.t("L0B", 0, np.float16, 1), m=17, n=1, k=33)
    assert odd.body(A2) == 2 * 3 * 1


def test_load_costs():
    core = Core(A2)
    src = core.t("L1", 0, np.float16, 64 * 256)
    la = LoadData2D(dst=core.t("L0A", 0, np.float16, 1), src=src, repeat_times=16)
    lb = LoadData2D(dst=core.t("L0B", 0, np.float16, 1), src=src, repeat_times=16)
    # Atlas A2: the measured table's rate at 8 KiB (msKPP L1_TO_L0A/L0B), the 28-cycle
    # start-up only when MTE1 was idle (the head)
    assert not A2.load2d_startup_per_instruction
    for load, key in ((la, "l1_to_l0a_bytes_per_cycle"), (lb, "l1_to_l0b_bytes_per_cycle")):
        assert (load.head(A2), load.body(A2)) == (28, 8192 / A2.rate(key, 8192))
    assert 200 < A2.rate("l1_to_l0a_bytes_per_cycle", 8192) < 256
    assert 100 < A2.rate("l1_to_l0b_bytes_per_cycle", 8192) < 128
    # Atlas training: no table, the model's number
    assert not TRAINING.load2d_startup_per_instruction
    assert (la.head(TRAINING), la.body(TRAINING)) == (
        TRAINING.load2d_startup_cycles, 16 * 512 / TRAINING.l1_to_l0a_bytes_per_cycle)
    l3 = LoadData3D(dst=core.t("L0A", 0, np.float16, 1), src=src, l1_h=8, l1_w=8,
                    channel_size=32, k_extension=32, m_extension=40)
    assert l3.moved_bytes() == 3 * 2 * 512
    assert (l3.head(A2), l3.body(A2)) == (50, 3 * 2 * 512 / A2.load3d_bytes_per_cycle)
    l3b = LoadData3D(dst=core.t("L0B", 0, np.float16, 1), src=src, l1_h=8, l1_w=8,
                     channel_size=32, k_extension=32, m_extension=40)
    assert l3b.body(A2) == 3 * 2 * 512 / A2.load3d_l0b_bytes_per_cycle
    assert A2.sources["mte.load3d_l0b_bytes_per_cycle"] != A2.sources["mte.load3d_bytes_per_cycle"]


def test_fixpipe_and_move_costs():
    core = Core(A2)
    gm = GlobalMemory()
    out = gm.tensor("out", np.float32, 32 * 32)
    x = gm.tensor("x", np.float16, 33 * 70)
    gm.load_inputs()
    l0c = core.t("L0C", 0, np.float32, 32 * 32)
    fp = Fixpipe(dst=out, src=l0c, m_size=32, n_size=32, src_stride=32, dst_stride=32)
    assert (fp.head(A2), fp.body(A2)) == (20, 4096 / A2.rate("l0c_to_gm_bytes_per_cycle", 4096))
    odd = Fixpipe(dst=out, src=l0c, m_size=3, n_size=20, src_stride=16, dst_stride=32)
    assert odd.charged_bytes(A2) == 3 * 128      # each 80-byte row in one 128-byte burst
    to_l1 = FixpipeL1(dst=core.t("L1", 0, np.float16, 1024), src=l0c, m_size=32, n_size=32,
                      src_stride=32, dst_stride=32, quant_pre="F322F16")
    assert (to_l1.head(A2), to_l1.body(A2)) == (20, 32 * 32 / A2.fixpipe_elements_per_cycle)
    dense = DataCopyNd2Nz(dst=core.t("L1", 0, np.float16, 48 * 80), src=x, n_value=33,
                          d_value=70, src_d_value=70, dst_nz_c0_stride=48)
    assert dense.charged_bytes(A2) == up(33 * 140, 128)     # contiguous rows: one span
    nd = DataCopyNd2Nz(dst=core.t("L1", 0, np.float16, 48 * 80), src=x, n_value=28, d_value=70,
                       src_d_value=80, dst_nz_c0_stride=48)
    starts = x.addr + 160 * np.arange(28)
    bursts = sum((-(-(s + 140) // 128)) - s // 128 for s in starts) * 128
    assert nd.charged_bytes(A2) == bursts
    assert (nd.head(A2), nd.body(A2)) == (
        200, bursts / A2.rate("gm_to_l1_nd2nz_bytes_per_cycle", bursts))   # its own table
    tcore = Core(TRAINING)
    ub = L0cToUb(dst=tcore.t("UB", 0, np.float32, 1024), src=tcore.t("L0C", 0, np.float32, 1),
                 block_len=4)
    assert (ub.head(TRAINING), ub.body(TRAINING)) == (10, 4096 / 256)


# ---- validation and bounds ---------------------------------------------------------------

def test_chip_refusals():
    core, tcore = Core(A2), Core(TRAINING)
    gm = GlobalMemory()
    out = gm.tensor("out", np.float32, 256)
    gm.load_inputs()
    fp = Fixpipe(dst=out, src=tcore.t("L0C", 0, np.float32, 256), m_size=16, n_size=16,
                 src_stride=16, dst_stride=16)
    with pytest.raises(NpusimError, match="has_fixpipe"):
        fp.validate(TRAINING)
    to_ub = L0cToUb(dst=core.t("UB", 0, np.float32, 256), src=core.t("L0C", 0, np.float32, 256),
                    block_len=1)
    with pytest.raises(NpusimError, match="has_l0c_to_ub"):
        to_ub.validate(A2)
    nd = DataCopyNd2Nz(dst=tcore.t("L1", 0, np.float32, 256), src=out, n_value=16, d_value=16,
                       src_d_value=16, dst_nz_c0_stride=16)
    with pytest.raises(NpusimError, match="has_gm_nd2nz"):
        nd.validate(TRAINING)
    for dtype, name in ((np.float32, "float32"), (bfloat16, "bfloat16")):
        mm = Mmad(c=tcore.t("L0C", 0, np.float32, 256), a=tcore.t("L0A", 0, dtype, 1),
                  b=tcore.t("L0B", 0, dtype, 1), m=16, n=16, k=16)
        with pytest.raises(NpusimError, match=f"'{name}'.*allowed: float16, int8"):
            mm.validate(TRAINING)
        mm.validate(A2)
    hf = Mmad(c=tcore.t("L0C", 0, np.float32, 256), a=tcore.t("L0A", 0, np.float32, 1),
              b=tcore.t("L0B", 0, np.float32, 1), m=16, n=16, k=8, hf32=True,
              hf32_mantissa_bits=11)
    with pytest.raises(NpusimError, match="hfloat32"):
        hf.validate(TRAINING)
    ld = LoadData2D(dst=tcore.t("L0A", 0, np.float32, 1), src=tcore.t("L1", 0, np.float32, 1),
                    repeat_times=1)
    with pytest.raises(NpusimError, match="float32 data cannot be loaded"):
        ld.validate(TRAINING)


def test_alignment_and_range_refusals():
    core = Core(A2)
    mm = Mmad(c=core.t("L0C", 0, np.float32, 256), a=core.t("L0A", 256, np.float16, 1),
              b=core.t("L0B", 0, np.float16, 1), m=16, n=16, k=16)
    with pytest.raises(NpusimError, match="operand a .* not 512-byte aligned"):
        mm.validate(A2)
    ld = LoadData2D(dst=core.t("L0B", 32, np.float16, 1), src=core.t("L1", 0, np.float16, 1),
                    repeat_times=1)
    with pytest.raises(NpusimError, match="512-byte aligned"):
        ld.validate(A2)
    with pytest.raises(NpusimError, match="m = 4096 out of range; allowed 0..4095"):
        Mmad(c=core.t("L0C", 0, np.float32, 1), a=core.t("L0A", 0, np.float16, 1),
             b=core.t("L0B", 0, np.float16, 1), m=4096, n=16, k=16)
    with pytest.raises(NpusimError, match="float16 x float16 -> float16 not supported"):
        Mmad(c=core.t("L0C", 0, np.float16, 1), a=core.t("L0A", 0, np.float16, 1),
             b=core.t("L0B", 0, np.float16, 1), m=16, n=16, k=16)
    with pytest.raises(NpusimError, match="if_transpose needs a b16 type"):
        LoadData2D(dst=core.t("L0B", 0, np.float32, 1), src=core.t("L1", 0, np.float32, 1),
                   repeat_times=1, if_transpose=True)
    with pytest.raises(NpusimError, match="does not convert float32 -> float16"):
        FixpipeL1(dst=core.t("L1", 0, np.float16, 1), src=core.t("L0C", 0, np.float32, 1),
                  m_size=16, n_size=16, src_stride=16, dst_stride=16)


def test_overruns_are_memory_access_errors():
    core = Core(A2)
    with pytest.raises(MemoryAccessError, match="mmad write of C"):
        Mmad(c=core.t("L0C", 0, np.float32, 255, exact=True), a=core.t("L0A", 0, np.float16, 1),
             b=core.t("L0B", 0, np.float16, 1), m=16, n=16, k=16)
    with pytest.raises(MemoryAccessError, match="load_data read"):
        LoadData2D(dst=core.t("L0A", 0, np.float16, 1),
                   src=core.t("L1", 0, np.float16, 4 * 256, exact=True),
                   start_index=1, repeat_times=2, src_stride=3)
    gm = GlobalMemory()
    out = gm.tensor("out", np.float32, 16 * 16)
    gm.load_inputs()
    with pytest.raises(MemoryAccessError, match="fixpipe write"):
        Fixpipe(dst=out, src=core.t("L0C", 0, np.float32, 512), m_size=16, n_size=16,
                src_stride=16, dst_stride=17)


# ---- the DSL ------------------------------------------------------------------------------

def test_dsl_cube_calls_issue_the_instructions():
    core = Core(A2)
    ctx = CoreContext(A2, "aic0", "aic", 0, 1, buffers=core.bufs, pipes=PIPES["aic"],
                      eager=True)
    rng = np.random.default_rng(10)
    a, b = rng.standard_normal((16, 8)).astype(np.float32), rng.standard_normal((8, 16))
    b = b.astype(np.float32)
    gm = GlobalMemory()
    a_gm, b_gm = gm.tensor("a", np.float32, 128, a), gm.tensor("b", np.float32, 128, b.T)
    c_gm = gm.tensor("c", np.float16, 256)
    gm.load_inputs()
    l1a, l1b = core.t("L1", 0, np.float32, 128), core.t("L1", 512, np.float32, 128)
    l0a, l0b = core.t("L0A", 0, np.float32, 128), core.t("L0B", 0, np.float32, 128)
    l0c = core.t("L0C", 0, np.float32, 256)
    with recording(ctx):
        data_copy_nd2nz(l1a, a_gm, Nd2NzParams(n_value=16, d_value=8, src_d_value=8,
                                               dst_nz_c0_stride=16, dst_nz_n_stride=1))
        data_copy_nd2nz(l1b, b_gm, Nd2NzParams(n_value=16, d_value=8, src_d_value=8,
                                               dst_nz_c0_stride=16, dst_nz_n_stride=1))
        load_data(l0a, l1a, LoadData2DParams(repeat_times=1))
        load_data(l0b, l1b, LoadData2DParams(repeat_times=1))
        set_hf32_mode(True)
        set_hf32_trans_mode(HF32TransMode.NEAREST_ZERO)
        mmad(l0c, l0a, l0b, MmadParams(m=16, n=16, k=8))
        fixpipe(c_gm, l0c, FixpipeParams(m_size=16, n_size=16, src_stride=16, dst_stride=16,
                                         quant_pre=QuantMode.F322F16))
    kinds = [type(i).__name__ for i in ctx.stream]
    assert kinds == ["DataCopyNd2Nz"] * 2 + ["LoadData2D"] * 2 + ["Mmad", "Fixpipe"]
    mm = ctx.stream[4]
    assert (mm.hf32, mm.hf32_trans_mode, mm.hf32_mantissa_bits) == (True, True, 11)
    bits = A2.hf32_mantissa_bits
    want = mmad_golden(hf32_golden(a, bits, True), hf32_golden(b, bits, True), 8)
    assert np.array_equal(c_gm.array().reshape(16, 16), want.astype(np.float16))


def test_dsl_load3d_fixpipe_l1_and_training_copy():
    core = Core(A2)
    ctx = CoreContext(A2, "aic0", "aic", 0, 1, buffers=core.bufs, pipes=PIPES["aic"])
    src, dst = core.t("L1", 0, np.float16, 2048), core.t("L0A", 0, np.float16, 2048)
    with recording(ctx):
        load_data(dst, src, LoadData3DParams(l1_h=4, l1_w=4, channel_size=16, k_extension=16,
                                             m_extension=16, pad_list=[1, 1, 1, 1]))
        load_data_3d(dst, src, LoadData3DParams(l1_h=4, l1_w=4, channel_size=16,
                                                k_extension=16, m_extension=16))
        fixpipe(core.t("L1", 4096, np.float32, 256), core.t("L0C", 0, np.float32, 256),
                FixpipeParams(m_size=16, n_size=16, src_stride=16, dst_stride=2),
                config=FixpipeConfig.CFG_NZ)
        with pytest.raises(NpusimError, match="CFG_NZ"):
            fixpipe(core.t("L1", 0, np.float32, 256), core.t("L0C", 0, np.float32, 256),
                    FixpipeParams(m_size=16, n_size=16, src_stride=16, dst_stride=2))
    assert [type(i).__name__ for i in ctx.stream] == ["LoadData3D", "LoadData3D", "FixpipeL1"]
    assert ctx.stream[0].pad_list == (1, 1, 1, 1)
    tcore = Core(TRAINING)
    tctx = CoreContext(TRAINING, "core0", "core", 0, 1, buffers=tcore.bufs,
                       pipes=PIPES["core"])
    with recording(tctx):
        data_copy_l0c_to_ub(tcore.t("UB", 0, np.float32, 256), tcore.t("L0C", 0, np.float32, 256),
                            DataCopyParams(block_count=1, block_len=1))
        with pytest.raises(NpusimError, match="has no FixPipe unit"):
            fixpipe(GlobalMemory().tensor("c", np.float32, 256),
                    tcore.t("L0C", 0, np.float32, 256),
                    FixpipeParams(m_size=16, n_size=16, src_stride=16, dst_stride=16))
    assert type(tctx.stream[0]).__name__ == "L0cToUb"


def wide_values(rng, shape, dtype, spread: int) -> np.ndarray:
    """Values of ``dtype`` whose exponents spread over ``spread`` binades (zeros included)."""
    mant = rng.uniform(-1, 1, shape)
    exps = rng.integers(-spread // 2, spread // 2 + 1, shape)
    x = np.ldexp(mant, exps)
    x[rng.random(shape) < 0.1] = 0.0
    with np.errstate(over="ignore"):
        return x.astype(dtype).astype(np.float64)


@pytest.mark.parametrize("dtype,bits,spread", [
    (np.float16, 11, 4), (np.float16, 11, 40), (bfloat16, 8, 6), (bfloat16, 8, 200),
    (np.float32, 24, 2), (np.float32, 24, 60)])
@pytest.mark.parametrize("specials", [False, True])
def test_step_sums_match_the_ordered_sum(dtype, bits, spread, specials):
    """The BLAS shortcut of Mmad's step sums gives the bits of the in-order float64 sum, both
    where it can prove the sums exact and where it falls back element by element."""
    from npusim.isa.cube import _sequential, step_sums

    rng = np.random.default_rng(spread)
    a3 = wide_values(rng, (3, 40, 16), dtype, spread)
    b3 = wide_values(rng, (3, 16, 24), dtype, spread)
    if specials:   # the rows and columns they touch take the in-order path
        a3[0, 0, 3], b3[1, 2, 5] = np.inf, np.nan
    with np.errstate(invalid="ignore", over="ignore"):
        got, want = step_sums(a3, b3, bits), _sequential(a3, b3)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint64), want[~nan].view(np.uint64))


@pytest.mark.parametrize("dtype", [np.float16, bfloat16, np.float32])
def test_exponent_spans_read_in_the_narrow_dtype_match_float64(dtype):
    """Mmad reads the exponent spans of its operands in their own dtype (fewer bytes); they are
    those of the widened float64 values, for every bit pattern (zeros, subnormals, inf, nan)."""
    from npusim.isa.cube import _slice_span

    rng = np.random.default_rng(4)
    width = np.uint16 if np.dtype(dtype).itemsize == 2 else np.uint32
    raw = rng.integers(0, np.iinfo(width).max, (6, 24, 16), dtype=np.uint64).astype(width)
    raw[rng.random(raw.shape) < 0.5] = 0
    x = raw.view(dtype)
    with np.errstate(invalid="ignore"):     # nan bit patterns
        wide = x.astype(np.float64)
        for axis in (1, 2, (1, 2)):
            assert np.array_equal(_slice_span(x, axis, 11), _slice_span(wide, axis, 11))


@pytest.mark.parametrize("dtype,bits", [(np.float16, 11), (bfloat16, 8)])
def test_sixteen_bit_spans_read_from_tables_match_slice_span(dtype, bits):
    """The table lookup Mmad uses for fp16 / bf16 operands gives _slice_span's spans of every
    step's rows of A and columns of B, for every bit pattern (zeros and subnormals included);
    where inf or nan lies in the slice both are at least 999."""
    from npusim.isa.cube import _slice_span, _spans16

    rng = np.random.default_rng(5)
    raw_a = rng.integers(0, 1 << 16, (24, 40), dtype=np.uint64).astype(np.uint16)
    raw_b = rng.integers(0, 1 << 16, (40, 20), dtype=np.uint64).astype(np.uint16)
    for raw in (raw_a, raw_b):
        raw[rng.random(raw.shape) < 0.5] = 0
        raw[rng.random(raw.shape) < 0.3] &= np.uint16(0x83FF)   # many subnormals (fp16)
    raw_a[:5] = 0                                                 # all-zero rows
    a, b = raw_a.view(dtype), raw_b.view(dtype)
    ra, rb = _spans16(a, b, 2, 16, bits)
    with np.errstate(invalid="ignore"):
        want_a = _slice_span(a[:, :32].T.reshape(2, 16, 24), 1, bits)
        want_b = _slice_span(b[:32].reshape(2, 16, 20), 1, bits)
    assert (want_a == 0).any()
    for got, want in ((ra, want_a), (rb, want_b)):
        special = want == 999
        assert special.any()
        assert np.array_equal(got[~special], want[~special])
        assert (got[special] >= 999).all()


@pytest.mark.parametrize("specials", [False, True])
def test_step_sums_pair_search_by_step_gives_the_same_bits(monkeypatch, specials):
    """Past PAIR_LIMIT candidate pairs the inexact elements are searched step by step: the
    same elements, the same bits as the in-order sum."""
    import npusim.isa.cube as cube

    monkeypatch.setattr(cube, "PAIR_LIMIT", 0)
    rng = np.random.default_rng(7)
    a3 = wide_values(rng, (3, 40, 16), np.float16, 40)
    b3 = wide_values(rng, (3, 16, 24), np.float16, 40)
    if specials:
        a3[0, 0, 3], b3[1, 2, 5] = np.inf, np.nan
    with np.errstate(invalid="ignore", over="ignore"):
        got, want = cube.step_sums(a3, b3, 11), cube._sequential(a3, b3)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint64), want[~nan].view(np.uint64))


@pytest.mark.parametrize("field,value,allowed", [
    ("l1_h", 32768, "0..32767"), ("channel_size", -1, "0..65535"), ("m_start_pt", 40000,
    "0..32767"), ("stride_w", 0, "1..63"), ("filter_h", 256, "0..255"),
    ("dilation_filter_w", 0, "1..255"), ("pad_list", (0, 0, 256, 0), "0..255")])
def test_load3d_out_of_range_parameter_is_named(field, value, allowed):
    """Every LoadData3DParamsV2 field out of its range is refused with its name and range."""
    core = Core(A2)
    params = dict(l1_h=4, l1_w=4, channel_size=16, k_extension=16, m_extension=16)
    params[field] = value
    name = "pad_list entry" if field == "pad_list" else field
    with pytest.raises(NpusimError, match=f"{name} = {value if field != 'pad_list' else 256} "
                                          f"out of range; allowed {allowed}"):
        LoadData3D(dst=core.t("L0A", 0, np.float16, 256), src=core.t("L1", 0, np.float16, 256),
                   **params)
    with pytest.raises(NpusimError, match="pad_list needs 4 entries"):
        LoadData3D(dst=core.t("L0A", 0, np.float16, 256), src=core.t("L1", 0, np.float16, 256),
                   l1_h=4, l1_w=4, channel_size=16, k_extension=16, m_extension=16,
                   pad_list=(0, 0, 0))


@pytest.mark.parametrize("dtype,spread", [(np.float16, 4), (np.float16, 40), (bfloat16, 200)])
@pytest.mark.parametrize("init", [True, False])
def test_whole_fractal_mmad_path_gives_the_general_paths_bits(dtype, spread, init):
    """fp16 / bf16 Mmad on whole fractals reads A, B and C straight from their L0 layouts;
    its C has the bits of the general path (operands read as m x k and k x n matrices), with
    wide exponent spreads (inexact step sums), zeros, inf and nan."""
    rng = np.random.default_rng(spread)
    core = Core(A2)
    m, n, k = 32, 48, 64
    l0a, l0b = core.t("L0A", 0, dtype, m * k), core.t("L0B", 0, dtype, k * n)
    l0c = core.t("L0C", 0, np.float32, m * n)
    l0a.array().view(np.uint16)[:] = wide_values(rng, m * k, dtype, spread).astype(dtype).view(
        np.uint16)
    l0b.array().view(np.uint16)[:] = wide_values(rng, k * n, dtype, spread).astype(dtype).view(
        np.uint16)
    l0a.array()[5], l0b.array()[77] = np.inf, np.nan
    l0c.array()[:] = wide_values(rng, m * n, np.float32, 20)
    mm = Mmad(c=l0c, a=l0a, b=l0b, m=m, n=n, k=k, init=init)
    assert mm.whole_fractals16
    old = np.zeros((m, n), np.float32) if init else read_nz(l0c, m, n)
    with np.errstate(invalid="ignore", over="ignore"):
        want = mm._accumulate(mm.operand_a(), mm.operand_b(), old)
        mm.execute()
    got = read_nz(l0c, m, n)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def read_nz(t, m: int, n: int) -> np.ndarray:
    """The m x n fp32 matrix in NZ at tensor ``t``."""
    return t.array(m * n).reshape(n // 16, m, 16).transpose(1, 0, 2).reshape(m, n)
