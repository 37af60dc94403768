"""ConvolutionBackward over kernel sizes 1-255 on the default tiling (issue 17, item 1).

Small kernels run with numerics: every output bit-identical to the golden and within
tolerance of torch (float64). The largest run timing-only (numerics off), and 255 x 255 is
checked at the tiling (its run takes over a minute). Shapes the kernels truly cannot run give
one TilingError naming the shape, never an L1/UB error about a buffer the user never set.
"""

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_op_convolution_backward import check, make_case

from npusim import load_chip, ops
from npusim.errors import TilingError
from npusim.ops.convolution.args import check_convolution_backward
from npusim.ops.convolution.geometry import dw_problem, dx_problem
from npusim.ops.convolution.tiling import conv_tiling
from npusim.ops.convolution.tiling_fit import dw_l1_bytes, dx_l1_bytes

CHIPS = ("atlas-a2", "atlas-training")
ONE = dict(dw_k_parts=1)   # gradWeight without atomic adds: bit-exact to the golden


def cfg2(s=1, p=0, d=1, **extra):
    return dict(stride=[s, s], padding=[p, p], dilation=[d, d], **extra)


def fits_input(k, s=1, p=0, d=1, extra=2):
    return (k - 1) * d + 1 + extra - 2 * p


SQUARE = [1, 2, 3, 5, 7, 9, 11, 13, 16, 31]
RECT = [(1, 7), (7, 1), (3, 16), (16, 3), (5, 33), (49, 2), (2, 64)]
LINE = [1, 2, 3, 5, 9, 16, 31, 33, 49, 64, 127, 255]


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("k", SQUARE)
def test_square_kernels(chip, k):
    sp = (fits_input(k), fits_input(k) + 1)
    check(chip, *make_case(np.float16, 1, 3, 5, sp, (k, k), cfg2()), cfg2(), tiling=ONE)


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("k", RECT)
def test_rectangular_kernels(chip, k):
    sp = (fits_input(k[0]), fits_input(k[1]))
    check(chip, *make_case(np.float16, 1, 3, 5, sp, k, cfg2()), cfg2(), tiling=ONE)


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("k", LINE)
def test_1d_lengths(chip, k):
    cfg = dict(stride=[1], padding=[1], dilation=[1])
    check(chip, *make_case(np.float16, 1, 2, 3, (k + 3,), (k,), cfg), cfg, tiling=ONE)


STRIDED = [  # (n, cin, cout, spatial, kernel, cfg)
    (2, 3, 5, (8, 8), (7, 7), cfg2(2, 3)),                     # ResNet-50's stem
    (1, 3, 5, (12, 12), (6, 6), cfg2()),
    (1, 3, 5, (12, 12), (7, 7), cfg2()),
    (1, 2, 3, (19, 18), (9, 9), cfg2(2, 3, 2)),
    (1, 2, 3, (38, 37), (13, 13), cfg2(1, 0, 3)),
    (1, 2, 3, (24, 26), (16, 16), cfg2(3, 5)),
    (1, 40, 24, (13, 13), (11, 11), cfg2(1, 1)),                # several channel blocks
    (1, 3, 5, (6, 7), (9, 9), cfg2(2, 1, 1, transposed=True, output_padding=[1, 0])),
    (1, 2, 3, (6, 9, 9), (3, 9, 9), dict(stride=[1, 1, 1], padding=[1, 0, 0],
                                          dilation=[1, 1, 1])),
    (1, 2, 3, (9, 30), (9, 16), dict(stride=[1, 2], padding=[1, 2, 0, 3], dilation=[1, 1],
                                     groups=1)),
    # windows padded beyond LoadData3D's 255: the extra padding is zeros in L1
    (1, 2, 3, (257,), (49,), dict(stride=[1], padding=[40], dilation=[7])),
    (1, 2, 3, (337,), (49,), dict(stride=[2], padding=[0], dilation=[7])),
    (1, 3, 2, (10, 150), (3, 49), dict(stride=[1, 3], padding=[1, 2], dilation=[1, 3])),
    (1, 2, 3, (340, 4), (49, 2), dict(stride=[1, 1], padding=[0, 1], dilation=[7, 1])),
]


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("case", range(len(STRIDED)))
def test_strides_padding_dilation(chip, case):
    n, cin, cout, sp, k, cfg = STRIDED[case]
    if len(sp) == 3 and chip != "atlas-a2":
        pytest.skip("3D convolution is Atlas A2 only")
    check(chip, *make_case(np.float16, n, cin, cout, sp, k, cfg), cfg, tiling=ONE)


@pytest.mark.parametrize("chip, cmt", [("atlas-a2", 0), ("atlas-training", 1)])
def test_fp32_large_kernel(chip, cmt):
    """fp32 (C0 = 8 on the A2's fp32 cube; fp16 cube and a Cast in TransData on training)."""
    cfg = cfg2(1, 1, cmt=cmt)
    check(chip, *make_case(np.float32, 1, 3, 5, (13, 14), (11, 11), cfg), cfg, tiling=ONE)


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("k", [(64, 9), (127, 3), (3, 127), (255, 5)])
def test_huge_kernels_timing_only(chip, k):
    dy, x, w = make_case(np.float16, 1, 2, 3, (fits_input(k[0]), fits_input(k[1])), k, cfg2())
    r = ops.convolution_backward(dy, x, w, bias_sizes=[3], stride=[1, 1], padding=[0, 0],
                                 dilation=[1, 1], chip=chip, numerics=False, trace=False)
    assert r.cycles > 0 and r.outputs["gradWeight"].shape == w.shape


def tiling_of(chip, shape, k, tiling=None, **cfg):
    x, w = np.zeros(shape, np.float16), np.zeros((3, shape[1], *k), np.float16)
    out = [(n - kk) + 1 for n, kk in zip(shape[2:], k, strict=True)]
    dy = np.zeros((shape[0], 3, *out), np.float16)
    nsp = len(k)
    spec = check_convolution_backward(
        chip, dy, x, w, bias_sizes=[3], stride=[1] * nsp, padding=[0] * nsp,
        dilation=[1] * nsp, transposed=False, output_padding=[0] * nsp, groups=1,
        output_mask=(True, True, True), cube_math_type=1)
    dx = dx_problem(spec.n, 1, spec.cin, spec.cout, spec.axes, False)
    dw = dw_problem(spec.n, 1, spec.cin, spec.cout, spec.axes, False)
    return dx, dw, conv_tiling(chip, dx, dw, 16, 2, 3, tiling)


@pytest.mark.parametrize("chip", CHIPS)
def test_255_square_tiling_fits(chip):
    """255 x 255 (the seed's A2 maximum): the derived tiling fits L1 (running it takes a
    minute, so it is checked here at the tiling)."""
    c = load_chip(chip)
    dx, dw, t = tiling_of(c, (1, 2, 257, 257), (255, 255))
    assert t.dx_step_kh < 255 and t.dw_step_kh > 0
    assert t.l1_buffers * sum(dx_l1_bytes(dx, t, 16, 2)) <= c.l1_bytes
    assert t.l1_buffers * sum(dw_l1_bytes(dw, t, 16, 2)) <= c.l1_bytes


def test_default_keeps_the_whole_kernel_when_it_fits():
    """Shapes that ran before keep their tiling: all kernel rows, base_n 256."""
    _, _, t = tiling_of(load_chip("atlas-a2"), (2, 32, 28, 28), (3, 3))
    assert (t.dx_step_kh, t.dw_step_kh, t.base_n, t.dx_base_n) == (3, 0, 256, 256)


def test_stem_shrinks_dx_base_n_to_the_channels():
    """dx's blocks shrink to the 3 input channels (16 columns); dw keeps 256-column blocks."""
    _, _, t = tiling_of(load_chip("atlas-a2"), (2, 3, 8, 8), (7, 7))
    assert (t.dx_base_n, t.base_n, t.dx_step_kh) == (16, 256, 7)


def test_overriding_one_field_derives_the_others():
    """dx_base_n = 256 on the stem with B1 reloaded per task: the kernel rows per chunk are
    derived to fit L1; with B1 kept (the default) all 7 rows fit beside two A1 buffers;
    base_n = 64 alone: dx_base_n follows it (a 64-column block of all taps fits)."""
    c = load_chip("atlas-a2")
    dx, _, t = tiling_of(c, (2, 3, 8, 8), (7, 7), {"dx_base_n": 256, "dx_b1_keep": False})
    assert t.dx_base_n == 256 and t.dx_step_kh < 7
    assert t.l1_buffers * sum(dx_l1_bytes(dx, t, 16, 2)) <= c.l1_bytes
    dx, _, t = tiling_of(c, (2, 3, 8, 8), (7, 7), {"dx_base_n": 256})
    a1, b1 = dx_l1_bytes(dx, t, 16, 2)
    assert t.dx_b1_keep and t.dx_step_kh == 7 and t.l1_buffers * a1 + b1 <= c.l1_bytes
    dx, _, t = tiling_of(c, (2, 3, 8, 8), (7, 7), {"base_n": 64})
    assert (t.base_n, t.dx_base_n, t.dx_step_kh) == (64, 64, 7)
    assert t.l1_buffers * sum(dx_l1_bytes(dx, t, 16, 2)) <= c.l1_bytes


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("fields", [{"dx_step_kh": 1}, {"dx_step_kh": 2, "dw_step_kh": 1},
                                    {"dw_step_kh": 3, "base_n": 32}, {"dw_step_kh": 7}])
def test_kernel_row_overrides_stay_bit_exact(chip, fields):
    """Several gradOutput channel blocks (Cout = 40): dx_step_k1 is derived as 1."""
    cfg = cfg2(2, 3)
    r = check(chip, *make_case(np.float16, 2, 3, 40, (8, 8), (7, 7), cfg), cfg,
              tiling={**ONE, **fields})
    assert r.tiling.dx_step_kh == 7 or r.tiling.dx_step_k1 == 1


@settings(max_examples=12, deadline=None)
@given(kh=st.sampled_from([1, 2, 3, 5, 9, 13]), kw=st.sampled_from([1, 2, 3, 5, 9, 13]),
       s=st.integers(1, 3), d=st.integers(1, 3), p=st.integers(0, 2),
       chip=st.sampled_from(CHIPS), fields=st.sampled_from([
           {}, {"dx_step_kh": 1}, {"dw_step_kh": 1}, {"dx_step_kh": 2, "dw_step_kh": 2},
           {"narrow": True}, {"base_n": 16}]))
def test_kernel_rows_any_geometry(kh, kw, s, d, p, chip, fields):
    cfg = cfg2(s, p, d)
    sp = ((kh - 1) * d + 2, (kw - 1) * d + 3)
    check(chip, *make_case(np.float16, 1, 3, 20, sp, (kh, kw), cfg), cfg,
          tiling={**ONE, **{f: min(v, kh) if f.endswith("_kh") else v
                            for f, v in fields.items()}})


@pytest.mark.parametrize("fields, says", [
    ({"dx_step_kh": 0}, "dx_step_kh = 0: 1 to 7 kernel rows (kH = 7;"),
    ({"dx_step_kh": 3, "dx_step_k1": 2}, "dx_step_kh = 3 < kH = 7 needs dx_step_k1 = 1"),
    ({"dw_step_kh": 8}, "dw_step_kh = 8: 0 (N blocks across channel blocks) or 1 to 7 "
                        "kernel rows"),
    ({"dx_base_n": 512}, "dx_base_n = 512: a positive multiple of 16, at most base_n = 256"),
    ({"dx_base_n": 0}, "dx_base_n = 0: a positive multiple of 16"),   # fuzzer seed 148282
    ({"dw_k_parts": -1}, "dw_k_parts = -1: at least 1"),             # fuzzer seed 132360
    ({"dx_block_dim": 0}, "dx_block_dim = 0: at least 1"),
])
def test_kernel_row_fields_checked(fields, says):
    dy, x, w = make_case(np.float16, 2, 3, 40, (8, 8), (7, 7), cfg2(2, 3))
    with pytest.raises(TilingError, match=says.replace("(", r"\(").replace(")", r"\)")):
        ops.convolution_backward(dy, x, w, bias_sizes=[40], stride=[2, 2], padding=[3, 3],
                                 dilation=[1, 1], tiling=fields, numerics=False)


@pytest.mark.parametrize("fields", [{"dx_base_n": 0}, {"dw_k_parts": -1}, {"dx_block_dim": 0}])
def test_counts_checked_on_an_empty_batch(fields):
    """An empty batch has no dX or dW problem to check a field against, but a count below 1
    is still refused (it reached the golden's reshape, fuzzer seed 132360)."""
    dy, x, w = make_case(np.float16, 2, 3, 40, (8, 8), (7, 7), cfg2(2, 3))
    with pytest.raises(TilingError, match="at least 1|positive multiple"):
        ops.convolution_backward(dy[:0], x[:0], w, bias_sizes=[40], stride=[2, 2],
                                 padding=[3, 3], dilation=[1, 1], tiling=fields)


LONG = [  # 1-D rows wider than L1: narrow chunks (only the columns a block reaches)
    (1, 1, 4, (16000,), (10,), dict(stride=[5], padding=[0], dilation=[1])),
    (1, 2, 3, (1, 20000), (1, 5), dict(stride=[1, 3], padding=[0, 2], dilation=[1, 1])),
]


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("case", range(len(LONG)))
def test_long_rows_run_narrow(chip, case):
    n, cin, cout, sp, k, cfg = LONG[case]
    r = check(chip, *make_case(np.float16, n, cin, cout, sp, k, cfg), cfg, tiling=ONE)
    assert r.tiling.narrow


@pytest.mark.parametrize("chip", CHIPS)
def test_narrow_override_stays_bit_exact(chip):
    cfg = dict(stride=[2], padding=[40], dilation=[7])
    check(chip, *make_case(np.float16, 2, 3, 5, (700,), (49,), cfg), cfg,
          tiling={**ONE, "narrow": True, "base_m": 64, "dw_step_k": 128})


def test_kernel_taller_than_img2col_takes_on_training():
    """Atlas training has no 255 limit on the weight: 300 kernel rows run in chunks of at most
    255 (LoadData3D's filter limit); 300 kernel columns are refused naming the shape."""
    cfg = dict(stride=[1, 1], padding=[1, 0], dilation=[1, 1])
    r = check("atlas-training", *make_case(np.float16, 1, 2, 3, (302, 3), (300, 2), cfg), cfg,
              tiling=ONE)
    assert r.tiling.dx_step_kh <= 255 and 0 < r.tiling.dw_step_kh <= 255
    cfg = dict(stride=[1], padding=[0], dilation=[1])
    dy, x, w = make_case(np.float16, 1, 2, 3, (305,), (300,), cfg)
    with pytest.raises(TilingError, match="a weight 300 taps wide .* cannot run: LoadData3D "
                       "takes at most 255 kernel columns"):
        ops.convolution_backward(dy, x, w, bias_sizes=[3], **cfg, output_padding=[0],
                                 chip="atlas-training", numerics=False)


def test_shape_that_cannot_run_says_so_in_terms_of_the_shape():
    """A map row wider than L1 (2-D: more than one output row), a 1-D window wider than L1
    and a gradWeight window padded beyond LoadData3D's 255 (no Atlas A2 range limits the
    padding on Atlas training): one clear error each, naming the shape."""
    cfg = dict(stride=[1, 1], padding=[0, 0], dilation=[1, 1])
    dy, x, w = make_case(np.float16, 1, 2, 3, (3, 40000), (2, 3), cfg)
    with pytest.raises(TilingError, match="gradInput of this shape cannot run on atlas-a2: "
                       "gradInput 3 x 40000, weight 2 x 3, .* 79996 map positions"):
        ops.convolution_backward(dy, x, w, bias_sizes=[3], **cfg, numerics=False)
    with pytest.raises(TilingError, match="gradWeight of this shape cannot run on atlas-a2: "
                       "grad 2 x 39998, feature 3 x 40000, kernel 2 x 3"):
        ops.convolution_backward(dy, x, w, bias_sizes=[3], **cfg, numerics=False,
                                 output_mask=(False, True, True))
    cfg = dict(stride=[1], padding=[0], dilation=[255])
    dy, x, w = make_case(np.float16, 1, 2, 3, (64800,), (255,), cfg)
    with pytest.raises(TilingError, match="of this shape cannot run on atlas-a2: .* dilation "
                       "1 x 255: .* 64898 map positions"):
        ops.convolution_backward(dy, x, w, bias_sizes=[3], **cfg, output_padding=[0],
                                 numerics=False)
    cfg = dict(stride=[1], padding=[300], dilation=[1])
    dy, x, w = make_case(np.float16, 1, 2, 3, (5,), (3,), cfg)
    with pytest.raises(TilingError, match="gradWeight of this shape cannot run: .* 300 columns"
                       " of padding .* LoadData3D pads at most 255"):
        ops.convolution_backward(dy, x, w, bias_sizes=[3], **cfg, output_padding=[0],
                                 numerics=False, chip="atlas-training")


def test_stem_through_the_command():
    """The issue's reproduction: ResNet-50's stem on atlas-a2 through ``npusim run``."""
    out = subprocess.run([sys.executable, "-m", "npusim", "run", "convolution_backward",
                          "--chip", "atlas-a2", "--shape", "2x3x8x8", "--param", "weight=5x7x7",
                          "--param", "padding=3", "--param", "stride=2", "--tiling",
                          "dw_k_parts=1"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    for name in ("gradInput", "gradWeight", "gradBias"):
        assert f"{name}: bit-identical to the golden" in out.stdout
    assert "dx_step_kh=7" in out.stdout and "dx_base_n=16" in out.stdout
