"""The dw core split: K parts chosen so the busiest core holds the fewest (block, slice) pairs
(issue 29: CANN's dw tiling splits the reduction together with M and N to fill the cores)."""

import numpy as np
import pytest

from npusim import ops
from npusim.ops.common import ceil_div


def dw_tiling(x, dy, w, dtype=np.float16, pad=1, dilation=1, chip="atlas-a2", tiling=None):
    make = [np.zeros(s, dtype) for s in (dy, x, w)]
    r = ops.convolution_backward(*make, bias_sizes=(w[0],), stride=(1,) * 3, padding=(pad,) * 3,
                                 dilation=(dilation,) * 3, output_mask=(False, True, False),
                                 chip=chip, tiling={"dw_v2": False} | (tiling or {}),
                                 numerics=False, trace=False)
    return r.tiling, r


def busiest(blocks, slices, parts, cores=24):
    return ceil_div(blocks * parts, cores) * ceil_div(slices, parts)


# cann-bench #20 (30 dw blocks, 28 slices) and #3 (35 blocks, 16 slices) on 24 cube cores
CASES = {"20": ((2, 128, 16, 64, 64), (2, 256, 14, 62, 62), (256, 128, 3, 3, 3), 1, 2, 30, 28),
         "3": ((2, 64, 8, 64, 64), (2, 128, 8, 64, 64), (128, 64, 5, 5, 5), 2, 1, 35, 16)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_other_split_leaves_the_busiest_core_less(case):
    x, dy, w, pad, dil, blocks, slices = CASES[case]
    t, _ = dw_tiling(x, dy, w, pad=pad, dilation=dil)
    best = min(busiest(blocks, slices, k) for k in range(1, slices + 1))
    assert busiest(blocks, slices, t.dw_k_parts) == best
    assert all(busiest(blocks, slices, k) > best for k in range(1, t.dw_k_parts))


def test_split_of_20_fills_the_cores_where_blocks_alone_left_them_uneven():
    """30 blocks alone: the busiest core does 2 blocks x 28 slices = 56 pairs (mean 35); split
    in 4 parts: 120 tasks, 5 a core of 7 slices = 35 pairs, the mean."""
    x, dy, w, pad, dil, blocks, slices = CASES["20"]
    t, r = dw_tiling(x, dy, w, pad=pad, dilation=dil)
    assert (t.dw_k_parts, t.dw_block_dim) == (4, 24)
    assert busiest(blocks, slices, 4) == blocks * slices / 24 == 35
    kernel = next(k for k in r.stats["kernels"] if k["op_type"] == "Conv3DBackpropFilter")
    assert kernel["atomic_add_bytes"] > 0   # the K parts' partial sums meet in GM


def test_one_part_when_the_blocks_already_fill_the_cores():
    """cann-bench #10: 3 kd x 2 M x 4 N = 24 blocks on 24 cores; any split only adds atomics."""
    t, r = dw_tiling((5, 97, 7, 43, 43), (5, 195, 5, 41, 41), (195, 97, 3, 3, 3), dilation=2)
    assert (t.dw_k_parts, t.dw_block_dim) == (1, 24)
    kernel = next(k for k in r.stats["kernels"] if k["op_type"] == "Conv3DBackpropFilter")
    assert kernel["atomic_add_bytes"] == 0
