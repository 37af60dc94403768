"""The TIK TransData core split (ops/transdata/tik_split.py) and the grouped gradWeight TransData
that runs on it (ops/transdata/groups.py): one UB buffer, an enlarged group's real groups in series
on one core (CANN 8.1.RC1 impl/dynamic/trans_data_groups.py)."""

import numpy as np
import pytest

from npusim import ops
from npusim.chip import load_chip
from npusim.ops.transdata.tik_split import axis_score, tik_lanes

# (loop count, cores, score) worked by hand from _get_mc_info_negative's arithmetic
SCORES = [(4, 48, 4), (47, 48, 47), (48, 48, 96), (49, 48, 49), (96, 48, 96), (100, 48, 52)]


@pytest.mark.parametrize("count, cores, score", SCORES)
def test_axis_score_follows_the_public_tik_tiling(count, cores, score):
    assert axis_score(count, cores) == score


def test_lanes_split_the_axis_with_the_best_score_in_contiguous_runs():
    groups_e = [(g, 0, 0, 0, 0) for g in range(4) for _ in range(16)]   # 4 groups x 16 passes
    assert tik_lanes(groups_e, 48) == [list(range(16 * g, 16 * g + 16)) for g in range(4)]
    d_wins = [(g, z, 0, 0, 0) for g in range(2) for z in range(3)]      # kD 3 beats G' 2
    assert tik_lanes(d_wins, 48) == [[0, 3], [1, 4], [2, 5]]
    tie = [(g, z, 0, 0, 0) for g in range(3) for z in range(3)]         # a tie: the first axis
    assert tik_lanes(tie, 48) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    fifty = [(0, z, 0, 0, 0) for z in range(50)]                         # 2 units a core
    lanes = tik_lanes(fifty, 48)
    assert len(lanes) == 25 and all(lane == [2 * i, 2 * i + 1] for i, lane in enumerate(lanes))


def grouped_kernel(groups, channels, chip="atlas-a2"):
    """The grouped TransData of a 1x1x1 depthwise-style gradWeight (numerics off)."""
    x = np.zeros((2, channels, 2, 8, 8), np.float16)
    w = np.zeros((channels, channels // groups, 1, 1, 1), np.float16)
    r = ops.convolution_backward(x, x, w, bias_sizes=(channels,), stride=(1,) * 3,
                                 padding=(0,) * 3, dilation=(1,) * 3, groups=groups,
                                 output_mask=(False, True, False), chip=chip,
                                 tiling={"dw_v2": False}, numerics=False, trace=False)
    return next(k for k in r.stats["kernels"] if k["name"] == "TransData(gradWeight.groups)")


def test_depthwise_groups_run_in_series_on_one_core_per_enlarged_group():
    """64 one-channel groups enlarge to 4 groups of 16: 4 cores, each 16 passes in series,
    every pass a GM read then a GM write that waits for it (two GM latencies at least)."""
    k = grouped_kernel(64, 64)
    assert k["cores"] == 4
    chip = load_chip("atlas-a2")
    assert k["body_cycles"] >= 16 * 2 * chip.gm_latency_cycles


def test_serial_passes_cost_more_than_spread_ones():
    """The same 64 groups as 4 groups of 16 channels (no enlargement: one pass a group) take
    fewer cycles than 64 one-channel groups in passes of one core per 16."""
    assert grouped_kernel(4, 64)["body_cycles"] < grouped_kernel(64, 64)["body_cycles"]
