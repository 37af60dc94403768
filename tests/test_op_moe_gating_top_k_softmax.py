"""aclnnMoeGatingTopKSoftmax (the MoE router) on the AIV cores: bit for bit against the golden in
both modes, within torch's precision (torch.softmax + torch.topk in float64), odd shapes,
argument rules, tiling, timing sanity."""

import numpy as np
import pytest
import torch

import npusim
from npusim import golden, ops
from npusim.dtypes import bfloat16
from npusim.errors import ParamError, TilingError
from op_check import assert_bit_equal, assert_close

# set before the runs: y within its dtype's rounding (fp32: a few fp32 roundings of the chain)
RTOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float16): 1e-3, np.dtype(bfloat16): 4e-3}


def rand(shape, dtype, seed, scale=3.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def check(x, k, mode="timed", **options):
    """Golden bit for bit; torch: the values within RTOL, each chosen expert's probability
    equal to the value reported (ties may be listed in another order), rowIdx exactly."""
    r = ops.moe_gating_top_k_softmax(x, k=k, mode=mode, **options)
    want = golden.moe_gating_top_k_softmax(x, k=k)
    for name, value in want.items():
        assert_bit_equal(r.outputs[name], value, name)
    p = torch.softmax(torch.from_numpy(np.asarray(x).astype(np.float64)), dim=-1)
    values, _ = torch.topk(p, k, dim=-1)
    rtol = RTOL[np.dtype(x.dtype)]
    assert_close(r.outputs["yOut"], values.numpy(), rtol, 1e-7, "yOut")
    chosen = torch.gather(p, -1, torch.from_numpy(r.outputs["expertIdxOut"].astype(np.int64)))
    assert_close(r.outputs["yOut"], chosen.numpy(), rtol, 1e-7, "yOut at expertIdxOut")
    rows = x.size // x.shape[-1]
    grid = np.arange(rows * k).reshape(k, rows).T.reshape(*x.shape[:-1], k)
    assert np.array_equal(r.outputs["rowIdxOut"], grid)
    assert r.outputs["expertIdxOut"].dtype == np.int32 and r.outputs["yOut"].dtype == x.dtype
    return r


@pytest.mark.parametrize("dtype", [np.float32, np.float16, bfloat16])
@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_router_matches_golden_and_torch(dtype, mode):
    check(rand((300, 64), dtype, 1), 8, mode=mode)


@pytest.mark.parametrize("shape,k", [((3, 7, 37), 5), ((5, 1), 1), ((50, 257), 16),
                                     ((2, 9, 300), 3), ((17, 8), 8)])
def test_odd_shapes(shape, k):
    check(rand(shape, np.float16, sum(shape) + k), k)


def test_deepseek_router_shape_and_modes_agree():
    x = rand((4096, 256), bfloat16, 2)
    timed = check(x, 8)
    functional = ops.moe_gating_top_k_softmax(x, k=8, mode="functional")
    jittered = ops.moe_gating_top_k_softmax(x, k=8, jitter=(2, 40.0))
    fast = ops.moe_gating_top_k_softmax(x, k=8, numerics=False, trace=False, sanitize=False)
    for name in timed.outputs:
        assert_bit_equal(functional.outputs[name], timed.outputs[name], name)
        assert_bit_equal(jittered.outputs[name], timed.outputs[name], name)
    assert jittered.cycles > timed.cycles and fast.cycles == timed.cycles


def test_strided_x_goes_through_contiguous():
    x = rand((64, 40), np.float32, 3).T
    r = check(x, 4)
    assert [k["name"] for k in r.stats["kernels"]] == ["Contiguous(x)", "MoeGatingTopKSoftmax"]


@pytest.mark.parametrize("override", [{"block_dim": 5}, {"row_factor": 3},
                                      {"block_dim": 1, "row_factor": 100}])
def test_overrides(override):
    r = check(rand((101, 32), bfloat16, 4), 6, tiling=override)
    for key, value in override.items():
        assert getattr(r.tiling, key) == value


@pytest.mark.parametrize("override,match", [
    ({"block_dim": 49}, "block_dim = 49; 1-48"), ({"row_factor": 0}, "row_factor = 0"),
    ({"k": 3}, "come from the arguments"), ({"nope": 1}, "unknown tiling field"),
])
def test_bad_overrides(override, match):
    with pytest.raises(TilingError, match=match):
        ops.moe_gating_top_k_softmax(np.ones((4, 8), np.float16), k=2, tiling=override)


def test_too_many_experts_for_ub_is_a_tiling_error():
    with pytest.raises(TilingError, match="bytes of UB, which has"):
        ops.moe_gating_top_k_softmax(np.ones((2, 20000), np.float32), k=2)


def test_time_grows_with_the_rows_once_every_core_is_busy():
    small = ops.moe_gating_top_k_softmax(np.zeros((2048, 256), bfloat16), k=8, numerics=False,
                                         trace=False).time_us
    large = ops.moe_gating_top_k_softmax(np.zeros((4096, 256), bfloat16), k=8, numerics=False,
                                         trace=False).time_us
    bound = 4096 * 256 * 2 / npusim.load_chip("atlas-a2").hbm_bytes_per_s * 1e6
    assert bound < large and large / small == pytest.approx(2.0, rel=0.15)


# --- argument rules --------------------------------------------------------------------------

def raises(match, *args, code=161002, **kwargs):
    with pytest.raises(ParamError, match=match) as info:
        ops.moe_gating_top_k_softmax(*args, **kwargs)
    assert info.value.code == code


def test_missing_x_is_161001():
    raises("x is None", None, k=1, code=161001)


@pytest.mark.parametrize("chip", ["atlas-training", "atlas-inference"])
def test_other_products_are_not_supported(chip):
    raises(f"not supported on {chip}", np.ones((2, 4), np.float16), k=1, chip=chip)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
def test_dtypes(dtype):
    raises("x dtype .* is not supported; allowed: float16, bfloat16, float32",
           np.ones((2, 4), dtype), k=1)


@pytest.mark.parametrize("shape", [(8,), (2, 2, 2, 2)])
def test_x_is_2d_or_3d(shape):
    raises("2-D or 3-D", np.ones(shape, np.float16), k=1)


@pytest.mark.parametrize("k,match", [(5, "k = 5; allowed 0 <= k <= the experts .4."),
                                     (-1, "k = -1"), (1.0, "an integer is required"),
                                     (True, "an integer is required"),
                                     (0, "k = 0 is not modelled")])
def test_k(k, match):
    raises(match, np.ones((2, 4), np.float16), k=k)


def test_k_at_most_1024():
    raises("k <= 1024", np.ones((1, 2000), np.float16), k=1025)


def test_finished_is_checked_then_not_modelled():
    x = np.ones((2, 4), np.float16)
    raises("finished int32 .*bool of shape", x, np.zeros(2, np.int32), k=1)
    raises(r"finished bool \(3,\): bool of shape \(2,\)", x, np.zeros(3, bool), k=1)
    raises("finished is not modelled", x, np.zeros(2, bool), k=1)


def test_the_oracle_is_float64_softmax_and_topk():
    p = torch.softmax(torch.tensor([[0.0, 1.0, 2.0]], dtype=torch.float64), dim=-1)
    values, idx = torch.topk(p, 2)
    assert values.dtype == torch.float64 and idx.tolist() == [[2, 1]]
