"""TransData NCHW -> NC1HWC0 by vnchwconv (TransDataTo5HD) for 16-bit data (issue 16)."""

import numpy as np
import pytest

from npusim.dtypes import bfloat16
from npusim.engine.sequence import OpRun
from npusim.ops.transdata.kernel import run_transdata
from npusim.ops.transdata.plan import plan_from_nd, plan_to_5hd


def to_5hd(chip, x, groups=1):
    n, c, d, h, w = x.shape
    c0 = 16 if x.dtype.itemsize == 2 else 8
    c1 = -(-(c // groups) // c0)
    run = OpRun(chip)
    src = run.gm.tensor("x", x.dtype, x.size, x.ravel())
    out = run.gm.tensor("x.5hd", x.dtype, n * groups * d * c1 * h * w * c0)
    plan = plan_to_5hd(run.chip, "TransData(x)", x.shape, groups, c0, x.dtype, x.dtype)
    run_transdata(run, plan, src, out)
    r = run.result({"y": (out, (n, groups, d, c1, h * w, c0))})
    return plan, r


def reference(x, groups, c0):
    n, c, d, h, w = x.shape
    cg = c // groups
    c1 = -(-cg // c0)
    y = np.zeros((n, groups, c1 * c0, d, h * w), x.dtype)
    y[:, :, :cg] = x.reshape(n, groups, cg, d, h * w)
    return y.reshape(n, groups, c1, c0, d, h * w).transpose(0, 1, 4, 2, 5, 3)


@pytest.mark.parametrize("chip", ["atlas-a2", "atlas-training", "atlas-inference"])
@pytest.mark.parametrize("shape,groups", [((2, 20, 1, 7, 9), 1), ((1, 32, 2, 5, 5), 2),
                                          ((1, 3, 1, 40, 41), 1)])
@pytest.mark.parametrize("dtype", [np.float16, bfloat16])
def test_16_bit_to_5hd_moves_by_vnchwconv(chip, shape, groups, dtype):
    x = (np.arange(np.prod(shape)) % 97 - 48).astype(dtype).reshape(shape)
    plan, r = to_5hd(chip, x, groups)
    assert plan.vnchwconv and not plan.tables
    counts = r.stats["instruction_counts"]
    assert counts["trans_data_to_5hd"] > 0 and "gather" not in counts
    n, c, d, h, w = shape
    want = reference(x, groups, 16).reshape(r.outputs["y"].shape)
    assert np.array_equal(r.outputs["y"].view(np.uint16), want.view(np.uint16))


def test_fp32_keeps_the_gather_path():
    x = np.arange(2 * 10 * 36, dtype=np.float32).reshape(2, 10, 1, 6, 6)
    plan, r = to_5hd("atlas-a2", x)
    assert not plan.vnchwconv and "gather" in r.stats["instruction_counts"]
    want = reference(x, 1, 8).reshape(r.outputs["y"].shape)
    assert np.array_equal(r.outputs["y"], want)


@pytest.mark.parametrize("chip", ["atlas-a2", "atlas-training"])
@pytest.mark.parametrize("shape,channels,groups", [((2, 1, 1, 49, 32), 20, 1),
                                                   ((1, 2, 2, 30, 16), 10, 2),
                                                   ((1, 1, 1, 700, 272), 260, 1)])
def test_16_bit_back_to_nchw_by_vnchwconv(chip, shape, channels, groups):
    """dx's (N, G, D, H*W, Nc16) -> (N, C, D, H*W), dropping the padding channels."""
    n, g, d, hw, nc16 = shape
    x = (np.arange(np.prod(shape)) % 89 - 44).astype(np.float16).reshape(shape)
    run = OpRun(chip)
    src = run.gm.tensor("nd", x.dtype, x.size, x.ravel())
    out = run.gm.tensor("y", x.dtype, n * channels * d * hw)
    plan = plan_from_nd(run.chip, "TransData(y)", shape, channels, groups, x.dtype, x.dtype)
    run_transdata(run, plan, src, out)
    r = run.result({"y": (out, (n, channels, d, hw))})
    assert plan.vnchwconv == "from_nd" and "gather" not in r.stats["instruction_counts"]
    cg = channels // groups
    want = x[..., :cg].transpose(0, 1, 4, 2, 3).reshape(n, channels, d, hw)
    assert np.array_equal(r.outputs["y"], want)
