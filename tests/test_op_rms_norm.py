"""aclnnRmsNorm and aclnnRmsNormGrad: results against the golden and PyTorch, argument rules,
tiling, modes and timing. Tolerances set before the first run: the output dtype's rounding
(fp32 1e-4, fp16 2e-3, bf16 8e-3); dx and dgamma with an absolute floor of rtol x max|ref|
(dx subtracts two terms of one size; dgamma sums over rows)."""

import numpy as np
import pytest
import torch

import npusim
from npusim import golden, ops
from npusim.dtypes import bfloat16
from npusim.errors import ParamError, TilingError
from op_check import assert_bit_equal, check_op

A2 = "atlas-a2"
RTOL = {"float32": 1e-4, "float16": 2e-3, "bfloat16": 8e-3}
DT = {"float32": np.float32, "float16": np.float16, "bfloat16": bfloat16}
PAIRS = [("float32", "float32"), ("float16", "float16"), ("bfloat16", "bfloat16"),
         ("float16", "float32"), ("bfloat16", "float32")]


def torch_rms_norm(x, gamma, *, epsilon=1e-6):
    dims = tuple(range(x.ndim - gamma.ndim, x.ndim))
    rstd = 1.0 / torch.sqrt((x * x).mean(dim=dims, keepdim=True) + epsilon)
    return {"yOut": x * rstd * gamma, "rstdOut": rstd}


def torch_rms_norm_grad(dy, x, rstd, gamma, epsilon=1e-6):
    """Autograd of the forward in float64 (rstd recomputed from x, as the forward made it)."""
    x = x.clone().requires_grad_(True)
    g = gamma.clone().requires_grad_(True)
    y = torch_rms_norm(x, g, epsilon=epsilon)["yOut"]
    dx, dg = torch.autograd.grad(y, (x, g), dy)
    return {"dxOut": dx, "dgammaOut": dg}


def rand(shape, dtype, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * scale).astype(DT[dtype])


def rstd_of(x, gdim=1, eps=1e-6):
    xf = np.asarray(x).astype(np.float64)
    axes = tuple(range(xf.ndim - gdim, xf.ndim))
    return (1.0 / np.sqrt((xf * xf).mean(axis=axes) + eps)).astype(np.float32)


def check_fwd(x, gamma, chip=A2, mode="timed", **options):
    return check_op(ops.rms_norm, golden.rms_norm, torch_rms_norm, (x, gamma), chip=chip,
                    mode=mode, rtol=RTOL[np.dtype(x.dtype).name if x.dtype != bfloat16
                                         else "bfloat16"], **options)


def check_grad(dy, x, rstd, gamma, mode="timed", **options):
    name = "bfloat16" if x.dtype == bfloat16 else np.dtype(x.dtype).name
    r = ops.rms_norm_grad(dy, x, rstd, gamma, mode=mode, **options)
    want = golden.rms_norm_grad(dy, x, rstd, gamma, block_dim=r.tiling.block_dim)
    for key in ("dxOut", "dgammaOut"):
        assert_bit_equal(r.outputs[key], want[key], key)
    to64 = [torch.from_numpy(np.asarray(a).astype(np.float64)) for a in (dy, x, rstd, gamma)]
    ref = torch_rms_norm_grad(*to64)
    for key, rtol in (("dxOut", RTOL[name]), ("dgammaOut", 1e-4)):
        want64 = ref[key].numpy()
        got = r.outputs[key].astype(np.float64)
        atol = rtol * float(np.abs(want64).max())
        assert np.all(np.abs(got - want64) <= rtol * np.abs(want64) + atol), key
    return r


# --- results ---------------------------------------------------------------------------------

def test_seed_example_forward():
    """aclnnRmsNorm's C example: x {2, 16} fp32 0..7 twice per row, gamma 0..7 twice."""
    x = np.tile(np.arange(8, dtype=np.float32), 4).reshape(2, 16)
    gamma = np.tile(np.arange(8, dtype=np.float32), 2)
    r = check_fwd(x, gamma)
    assert r.outputs["rstdOut"].shape == (2, 1)
    assert r.outputs["rstdOut"][0, 0] == pytest.approx(1 / np.sqrt(17.5 + 1e-6), rel=1e-6)


def test_seed_example_grad():
    """aclnnRmsNormGrad's C example: dy = x = 1..32 as {2, 1, 16}, rstd {2} = 1, 2, gamma 1..16
    (rstd is given, not x's: the kernel uses it as given, so only the golden checks)."""
    x = np.arange(1, 33, dtype=np.float32).reshape(2, 1, 16)
    gamma = np.arange(1, 17, dtype=np.float32)
    rstd = np.array([1.0, 2.0], np.float32)
    r = ops.rms_norm_grad(x, x, rstd, gamma)
    want = golden.rms_norm_grad(x, x, rstd, gamma, block_dim=r.tiling.block_dim)
    assert_bit_equal(r.outputs["dxOut"], want["dxOut"])
    assert_bit_equal(r.outputs["dgammaOut"], want["dgammaOut"])
    xr = x.reshape(2, 16) * rstd[:, None]
    assert np.allclose(r.outputs["dgammaOut"], (x.reshape(2, 16) * xr).sum(0), rtol=1e-6)


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: "-".join(p))
@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_forward_matches_golden_and_torch(pair, mode):
    x, gamma = rand((37, 1000), pair[0], 1), rand((1000,), pair[1], 2)
    check_fwd(x, gamma, mode=mode)


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: "-".join(p))
@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_grad_matches_golden_and_torch(pair, mode):
    x, gamma = rand((37, 1000), pair[0], 1), rand((1000,), pair[1], 2)
    check_grad(rand((37, 1000), pair[0], 3), x, rstd_of(x), gamma, mode=mode)


@pytest.mark.parametrize("xshape,gshape", [((3, 5, 7), (5, 7)), ((1, 9), (9,)), ((13,), (13,)),
                                           ((2, 3, 4, 33), (33,)), ((130, 24), (24,))])
def test_odd_shapes(xshape, gshape):
    x, gamma = rand(xshape, "float16", 4, 3.0), rand(gshape, "float16", 5)
    r = check_fwd(x, gamma)
    lead = len(xshape) - len(gshape)
    assert r.outputs["rstdOut"].shape == xshape[:lead] + (1,) * len(gshape)
    if len(xshape) >= 2:
        check_grad(rand(xshape, "float16", 6), x, rstd_of(x, len(gshape)), gamma)


def test_more_rows_than_a_batch_and_strided_input():
    x = rand((300, 64), "bfloat16", 7)
    check_fwd(x, rand((64,), "bfloat16", 8), tiling={"block_dim": 2, "row_factor": 16})
    xt = rand((64, 200), "float32", 9).T                    # strided: a Contiguous kernel
    r = check_fwd(xt, rand((64,), "float32", 10))
    assert any(k["name"].startswith("Contiguous") for k in r.stats["kernels"])
    check_grad(rand((300, 64), "bfloat16", 11), x, rstd_of(x), rand((64,), "bfloat16", 12),
               tiling={"block_dim": 5, "row_factor": 8})


def test_rstd_shapes_the_grad_takes():
    x, gamma = rand((4, 6, 32), "float32", 1), rand((32,), "float32", 2)
    dy, rstd = rand((4, 6, 32), "float32", 3), rstd_of(x)
    outs = [ops.rms_norm_grad(dy, x, r, gamma).outputs["dxOut"]
            for r in (rstd, rstd.reshape(4, 6, 1), rstd.reshape(-1))]
    assert_bit_equal(outs[1], outs[0])
    assert_bit_equal(outs[2], outs[0])


def test_empty_x():
    r = ops.rms_norm(np.zeros((0, 8), np.float16), np.ones(8, np.float16))
    assert r.outputs["yOut"].shape == (0, 8) and r.outputs["rstdOut"].shape == (0, 1)
    g = ops.rms_norm_grad(np.zeros((0, 8), np.float16), np.zeros((0, 8), np.float16),
                          np.zeros(0, np.float32), np.ones(8, np.float16))
    assert np.all(g.outputs["dgammaOut"] == 0) and g.outputs["dxOut"].shape == (0, 8)


def test_modes_give_identical_bytes_and_numerics_off_keeps_cycles():
    x, gamma = rand((50, 777), "bfloat16", 3), rand((777,), "bfloat16", 4)
    timed = ops.rms_norm(x, gamma)
    functional = ops.rms_norm(x, gamma, mode="functional")
    for key in ("yOut", "rstdOut"):
        assert_bit_equal(functional.outputs[key], timed.outputs[key], key)
    assert ops.rms_norm(x, gamma, numerics=False).cycles == timed.cycles
    dy, rstd = rand((50, 777), "bfloat16", 5), rstd_of(x)
    g1 = ops.rms_norm_grad(dy, x, rstd, gamma)
    g2 = ops.rms_norm_grad(dy, x, rstd, gamma, mode="functional")
    for key in ("dxOut", "dgammaOut"):
        assert_bit_equal(g2.outputs[key], g1.outputs[key], key)
    assert ops.rms_norm_grad(dy, x, rstd, gamma, numerics=False).cycles == g1.cycles


# --- argument rules --------------------------------------------------------------------------

def raises(code, match, fn, *args, **kwargs):
    with pytest.raises(ParamError, match=match) as info:
        fn(*args, **kwargs)
    assert info.value.code == code


def f32(*shape):
    return np.ones(shape, np.float32)


@pytest.mark.parametrize("which", [0, 1])
def test_forward_none_is_161001(which):
    args = [f32(2, 4), f32(4)]
    args[which] = None
    raises(161001, "is None", ops.rms_norm, *args)


@pytest.mark.parametrize("which", [0, 1, 2, 3])
def test_grad_none_is_161001(which):
    args = [f32(2, 4), f32(2, 4), f32(2), f32(4)]
    args[which] = None
    raises(161001, "is None", ops.rms_norm_grad, *args)


@pytest.mark.parametrize("chip,match", [("atlas-training", "not supported on atlas-training"),
                                        ("atlas-inference", "by npusim.*does not model")])
def test_other_products_are_161002(chip, match):
    raises(161002, match, ops.rms_norm, f32(2, 4), f32(4), chip=chip)
    raises(161002, match, ops.rms_norm_grad, f32(2, 4), f32(2, 4), f32(2), f32(4), chip=chip)


@pytest.mark.parametrize("xd,gd", [(np.float32, np.float16), (np.float16, bfloat16),
                                   (np.float64, np.float64), (np.int32, np.int32)])
def test_dtype_pairs_are_161002(xd, gd):
    raises(161002, "dtypes .* are not supported", ops.rms_norm, np.ones((2, 4), xd),
           np.ones(4, gd))
    raises(161002, "dtypes .* are not supported", ops.rms_norm_grad, np.ones((2, 4), xd),
           np.ones((2, 4), xd), f32(2), np.ones(4, gd))


@pytest.mark.parametrize("x,g,match", [
    (f32(2, 4), f32(5), "must equal the last 1 dims"),
    (f32(2, 4), f32(2, 2, 4), "allowed 1 to x's 2"),
    (f32(2, 0), f32(0), "gamma .* is empty"),
    (f32(*[1] * 9), f32(1), "allowed 1 to 8"),
])
def test_forward_shapes_are_161002(x, g, match):
    raises(161002, match, ops.rms_norm, x, g)


@pytest.mark.parametrize("eps", [-1.0, float("nan"), "1e-6", True])
def test_bad_epsilon_is_161002(eps):
    raises(161002, "epsilon", ops.rms_norm, f32(2, 4), f32(4), epsilon=eps)


@pytest.mark.parametrize("args,match", [
    ((f32(2, 4), np.ones((2, 4), np.float16), f32(2), f32(4)), "dy dtype float32 must equal"),
    ((f32(2, 5), f32(2, 4), f32(2), f32(4)), "dy shape"),
    ((f32(2, 4), f32(2, 4), f32(3), f32(4)), "rstd shape"),
    ((f32(2, 4), f32(2, 4), np.ones(2, np.float16), f32(4)), "rstd dtype"),
    ((f32(4), f32(4), f32(1), f32(4)), "allowed 2 to 8"),
])
def test_grad_rules_are_161002(args, match):
    raises(161002, match, ops.rms_norm_grad, *args)


# --- tiling ----------------------------------------------------------------------------------

def test_default_tiling_follows_cann():
    t = ops.rms_norm(f32(512, 128), f32(128), numerics=False).tiling
    assert (t.block_factor, t.block_dim, t.row_factor, t.ub_factor) == (11, 47, 64, 128)


@pytest.mark.parametrize("fn,override,match", [
    ("rms_norm", {"block_dim": 49}, "allowed 1 to 48"),
    ("rms_norm", {"block_dim": 40}, "leaves the last core no rows"),
    ("rms_norm", {"row_factor": 12}, "multiple of 8"),
    ("rms_norm", {"buffer_num": 3}, "allowed 1 or 2"),
    ("rms_norm", {"ub_factor": 64}, "derived from the shape"),
    ("rms_norm", {"tile": 1}, "unknown tiling field"),
    ("rms_norm_grad", {"buffer_num": 2}, "allowed 1$"),
])
def test_bad_overrides_say_why(fn, override, match):
    args = (f32(100, 64), f32(64)) if fn == "rms_norm" else (f32(100, 64), f32(100, 64),
                                                              f32(100), f32(64))
    with pytest.raises(TilingError, match=match):
        getattr(ops, fn)(*args, tiling=override)


def test_a_row_past_ub_names_the_largest():
    with pytest.raises(TilingError, match="at most .* elements fit .*SplitD"):
        ops.rms_norm(f32(2, 40000), f32(40000), numerics=False)


# --- timing ----------------------------------------------------------------------------------

def test_never_below_the_roofline_and_double_buffering_helps():
    chip = npusim.load_chip(A2)
    x, gamma = np.zeros((4096, 4096), bfloat16), np.zeros(4096, bfloat16)
    single = ops.rms_norm(x, gamma, numerics=False, trace=False)
    double = ops.rms_norm(x, gamma, numerics=False, trace=False, tiling={"buffer_num": 2})
    bound = 2 * x.nbytes / chip.hbm_bytes_per_s * 1e6
    assert single.time_us >= bound and double.time_us >= bound
    assert double.time_us < single.time_us
    grad = ops.rms_norm_grad(x, x, np.ones(4096, np.float32), gamma, numerics=False,
                             trace=False)
    assert grad.time_us >= 3 * x.nbytes / chip.hbm_bytes_per_s * 1e6


@pytest.mark.parametrize("bad", [[1], "x", 1.5])
def test_tiling_not_a_dict_is_a_tiling_error(bad):
    with pytest.raises(TilingError, match="tiling overrides must be a dict"):
        ops.rms_norm(f32(4, 8), f32(8), tiling=bad)
    with pytest.raises(TilingError, match="tiling overrides must be a dict"):
        ops.rms_norm_grad(f32(4, 8), f32(4, 8), f32(4), f32(8), tiling=bad)


@pytest.mark.parametrize("seed", range(6))
def test_random_shapes(seed):
    rng = np.random.default_rng(200 + seed)
    shape = tuple(int(v) for v in rng.integers(1, 40, rng.integers(2, 4)))
    gdim = int(rng.integers(1, len(shape)))
    pair = PAIRS[seed % len(PAIRS)]
    x, gamma = rand(shape, pair[0], seed, 2.0), rand(shape[len(shape) - gdim:], pair[1], seed + 1)
    check_fwd(x, gamma)
    check_grad(rand(shape, pair[0], seed + 2), x, rstd_of(x, gdim), gamma)
