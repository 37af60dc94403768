"""A stride above what LoadData3D takes (its strideH / strideW are 6 bits, 1 to 63): the cube
kernels re-lay the rows the windows reach (``ops/convolution/relay.py``) instead of refusing
(issue 16, item 3c). Every output bit-identical to the golden and within tolerance of torch
(``check``); what cannot be re-laid is one TilingError naming the stride and the window.
"""

import numpy as np
import pytest
from test_op_convolution_backward import check, make_case

from npusim import ops
from npusim.errors import TilingError
from npusim.ops.convolution.geometry import MapAxis
from npusim.ops.convolution.relay import relaid_view

CHIPS = ("atlas-a2", "atlas-training")
DW = dict(dw_k_parts=1)


def cfg2(s, p=(0, 0), d=(1, 1), **extra):
    return dict(stride=list(s), padding=list(p), dilation=list(d), **extra)


def test_relaid_view_copies_only_the_rows_the_windows_reach():
    """Stride 64, 3 taps, padding 2 on a 130-row map: output 0 reads padding for two taps,
    then rows 0, 62-64 and 126-128, packed 3 rows per output (LoadData3D stride 3)."""
    v = relaid_view(MapAxis(130, 130, 1, 64, 2, 3, 1), 0, 3, 0, 3)
    assert (v.rows, v.pad_lo, v.pad_hi, v.stride, v.dil) == (7, 2, 0, 3, 1)
    assert v.runs == ((0, 0, 1, 1), (1, 62, 3, 1), (4, 126, 3, 1))
    dil = relaid_view(MapAxis(300, 300, 1, 100, 0, 3, 40), 0, 3, 0, 3)
    assert dil.runs == ((0, 0, 3, 40), (3, 100, 3, 40), (6, 200, 3, 40)) and dil.dil == 1


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("s, p, d", [((64, 64), (0, 0), (1, 1)), ((1, 64), (1, 2), (1, 1)),
                                     ((70, 65), (3, 1), (2, 1)), ((64, 100), (0, 0), (1, 30))])
def test_dw_stride_above_63_runs_bit_exact(chip, s, p, d):
    cfg = cfg2(s, p, d, mask=[False, True, True])
    sp = (2 * s[0] + 3 * d[0], 2 * s[1] + 4 * d[1])
    r = check(chip, *make_case(np.float16, 2, 20, 24, sp, (3, 3), cfg), cfg, tiling=DW)
    assert r.outputs["gradWeight"] is not None


def test_dw_kernel_taller_than_the_stride_window_splits_into_row_blocks():
    """70 kernel rows at strideH 64: a re-laid window takes at most 63 taps (and no more than
    the stride + 1), so N blocks stay in one channel block and 63 rows."""
    cfg = cfg2((64, 1), (0, 0), (1, 1), mask=[False, True, False])
    r = check("atlas-a2", *make_case(np.float16, 1, 16, 16, (70 + 64, 5), (70, 2), cfg), cfg,
              tiling=DW)
    assert r.tiling.dw_step_kh == 63


def test_transposed_dw_stride_above_63_runs_bit_exact():
    cfg = cfg2((64, 64), (0, 0), (1, 1), transposed=True, output_padding=[0, 0],
               mask=[False, True, False])
    check("atlas-a2", *make_case(np.float16, 1, 16, 16, (3, 3), (2, 2), cfg), cfg, tiling=DW)


def test_windows_wider_than_the_stride_cannot_be_relaid():
    """3 taps with dilation 40 span 81 columns: wider than a strideW of 64 (+1)."""
    cfg = cfg2((1, 64), (0, 0), (1, 40), mask=[False, True, False])
    dy, x, w = make_case(np.float16, 1, 16, 16, (4, 300), (2, 3), cfg)
    with pytest.raises(TilingError, match="strideW = 64 .* 3 taps with dilation 40 span 81"):
        ops.convolution_backward(dy, x, w, bias_sizes=[16], stride=[1, 64], padding=[0, 0],
                                 dilation=[1, 40], output_mask=(False, True, False),
                                 numerics=False)


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("s, p, d", [((64, 64), (0, 0), (1, 1)), ((70, 1), (2, 1), (2, 1)),
                                     ((1, 100), (0, 3), (1, 30))])
def test_transposed_dx_stride_above_63_runs_bit_exact(chip, s, p, d):
    """A transposed convolution's gradInput is the forward convolution of gradOutput at its
    stride: above 63 the map rows its windows reach are re-laid, as dw's."""
    cfg = cfg2(s, p, d, transposed=True, output_padding=[0, 0])
    check(chip, *make_case(np.float16, 2, 20, 24, (3, 4), (3, 2), cfg), cfg, tiling=DW)
