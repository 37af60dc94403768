"""Which gradWeight kernel a 3-D convolution runs on Atlas A2 (ops/convolution/route.py, after
ops-nn's IsConv3DBackpropFilterV2), the MemSet the TBE kernel needs, and the start-up each kernel
pays by how CANN builds it (TBE / TIK or Ascend C: npusim/engine/kernel_costs.py)."""

import numpy as np
import pytest
import torch

from npusim import ops
from npusim.dtypes import bfloat16
from npusim.errors import TilingError


def conv3d(cin=5, cout=7, k=3, dtype=np.float16, dilation=1, groups=1, chip="atlas-a2",
           tiling=None, numerics=True):
    rng = np.random.default_rng(7)
    sp = 6
    x = rng.standard_normal((2, cin, sp, sp, sp)).astype(dtype)
    w = rng.standard_normal((cout, cin // groups, k, k, k)).astype(dtype)
    pad = dilation * (k - 1) // 2
    dy = rng.standard_normal((2, cout, sp, sp, sp)).astype(dtype)
    r = ops.convolution_backward(dy, x, w, bias_sizes=[cout], stride=[1] * 3, padding=[pad] * 3,
                                 dilation=[dilation] * 3, groups=groups,
                                 output_mask=(False, True, False), chip=chip, tiling=tiling,
                                 numerics=numerics, trace=False)
    return r, (x, w, dy, pad, dilation, groups)


def types(r) -> list:
    return [k["op_type"] for k in r.stats["kernels"]]


@pytest.mark.parametrize("kw, v2", [
    ({}, False),                                     # fp16 3x3x3, 7 channels: TBE
    ({"dilation": 2}, True),                         # dilation > 1
    ({"cin": 8, "cout": 8, "groups": 2}, True),      # groups > 1
    ({"dtype": np.float32}, True),                   # fp32 input
    ({"k": 1}, True),                                # basic block: kernel H x W = 1
    ({"cin": 64, "cout": 128, "dtype": bfloat16}, True),   # 3x3 with M, N >= 128
    ({"cin": 64, "cout": 112}, False),               # 3x3, gradOutput's channels 112 < 128
])
def test_aclnn_picks_the_kernel_ops_nn_picks(kw, v2):
    r, _ = conv3d(numerics=False, **kw)
    assert r.tiling.dw_v2 is v2
    if v2:   # V2 zeroes its own output: no MemSet before it (after it, with groups, the
        t = types(r)   # grouped TransData's: ops/transdata/groups.py)
        assert "MemSet" not in t[:t.index("Conv3DBackpropFilterV2")]
        assert ("MemSet" in t) == (kw.get("groups", 1) > 1)
    else:   # the TBE kernel adds atomically into a MemSet-zeroed output, always
        t = types(r)
        assert "Conv3DBackpropFilter" in t and t.index("MemSet") < t.index("Conv3DBackpropFilter")


@pytest.mark.parametrize("dw_v2", [True, False])
def test_either_kernel_gives_torchs_gradient(dw_v2):
    r, (x, w, dy, pad, dil, g) = conv3d(tiling={"dw_v2": dw_v2})
    want = torch.ops.aten.convolution_backward(
        torch.from_numpy(dy.astype(np.float32)), torch.from_numpy(x.astype(np.float32)),
        torch.from_numpy(w.astype(np.float32)), None, [1] * 3, [pad] * 3, [dil] * 3, False,
        [0] * 3, g, [False, True, False])[1].numpy()
    np.testing.assert_allclose(r.outputs["gradWeight"].astype(np.float32), want, rtol=2e-3,
                               atol=2e-2)


def test_dw_v2_errors_say_what_is_allowed():
    with pytest.raises(TilingError, match="deterministic = True .* dw_v2 = False"):
        conv3d(tiling={"deterministic": True, "dw_v2": False, "dw_k_parts": 2},
               numerics=False)
    with pytest.raises(TilingError, match="dw_v2 = True on atlas-training"):
        ops.convolution_backward(*(np.zeros((2, 4, 6, 6), np.float16) for _ in range(2)),
                                 np.zeros((4, 4, 3, 3), np.float16), bias_sizes=[4],
                                 stride=[1, 1], padding=[1, 1], dilation=[1, 1],
                                 chip="atlas-training", tiling={"dw_v2": True}, numerics=False)


def test_tbe_and_tik_kernels_pay_their_start_ups():
    r, _ = conv3d(numerics=False)
    c = r.chip
    kinds = {"TransData": "tik", "MemSet": "tik", "Conv3DBackpropFilter": "tbe"}
    for k in r.stats["kernels"]:
        impl = kinds.get(k["op_type"], "ascendc")
        assert k["impl"] == impl
        fixed = {"tik": c.tik_kernel_start_cycles, "tbe": c.tbe_kernel_start_cycles,
                 "ascendc": c.kernel_start_cycles}[impl]
        assert k["launch_cycles"] == fixed + c.kernel_start_per_block_cycles * k["blocks"]
    v2, _ = conv3d(numerics=False, tiling={"dw_v2": True})
    assert {k["op_type"]: k["impl"] for k in v2.stats["kernels"]}["Conv3DBackpropFilterV2"] \
        == "ascendc"
