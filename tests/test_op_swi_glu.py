"""aclnnSwiGlu and aclnnSwiGluGrad: results against the golden and PyTorch, argument rules,
tiling, modes and timing. Tolerances set before the first run: the output dtype's rounding
(fp32 1e-4, fp16 2e-3, bf16 8e-3) with op_check's default floor."""

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


def torch_swi_glu(x, *, dim=-1):
    a, b = x.chunk(2, dim=dim)
    return {"out": torch.nn.functional.silu(a) * b}


def torch_swi_glu_grad(y_grad, x, *, dim=-1):
    x = x.clone().requires_grad_(True)
    (gx,) = torch.autograd.grad(torch_swi_glu(x, dim=dim)["out"], x, y_grad)
    return {"out": gx}


def rand(shape, dtype, seed=0, scale=3.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(DT[dtype])


def name(arr):
    return "bfloat16" if arr.dtype == bfloat16 else np.dtype(arr.dtype).name


def check_fwd(x, dim=-1, **options):
    return check_op(ops.swi_glu, golden.swi_glu, torch_swi_glu, (x,), params={"dim": dim},
                    rtol=RTOL[name(x)], **options)


def check_grad(y_grad, x, dim=-1, **options):
    return check_op(ops.swi_glu_grad, golden.swi_glu_grad, torch_swi_glu_grad, (y_grad, x),
                    params={"dim": dim}, rtol=RTOL[name(x)], **options)


def half(shape, dim):
    s = list(shape)
    s[dim] //= 2
    return tuple(s)


def test_seed_example_forward():
    """aclnnSwiGlu's C example: x {2, 32} fp32 0..63, dim -1."""
    x = np.arange(64, dtype=np.float32).reshape(2, 32)
    r = check_fwd(x)
    assert r.outputs["out"].shape == (2, 16)
    assert r.outputs["out"][0, 1] == pytest.approx(1 / (1 + np.exp(-1)) * 17, rel=1e-6)


def test_seed_example_grad():
    """aclnnSwiGluGrad's C example: yGrad {2, 16} = -2..29, x {2, 32} = -2..61."""
    y_grad = np.arange(-2, 30, dtype=np.float32).reshape(2, 16)
    x = np.arange(-2, 62, dtype=np.float32).reshape(2, 32)
    assert check_grad(y_grad, x).outputs["out"].shape == (2, 32)


@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_matches_golden_and_torch(dtype, mode):
    x = rand((37, 1000), dtype, 1)
    check_fwd(x, mode=mode)
    check_grad(rand((37, 500), dtype, 2), x, mode=mode)


@pytest.mark.parametrize("shape,dim", [((4, 6, 7), 1), ((130, 2), 0), ((1, 4096), -1),
                                       ((3, 5, 2, 9), -2), ((2,), 0), ((5, 3, 100), -1)])
def test_odd_shapes_and_dims(shape, dim):
    x = rand(shape, "bfloat16", 3)
    r = check_fwd(x, dim=dim)
    assert r.outputs["out"].shape == half(shape, dim)
    check_grad(rand(half(shape, dim), "bfloat16", 4), x, dim=dim)


def test_strided_input_and_overrides():
    x = rand((300, 64), "float16", 5).T                      # Contiguous kernel first
    r = check_fwd(x, dim=0)
    assert any(k["name"].startswith("Contiguous") for k in r.stats["kernels"])
    x = rand((200, 4000), "float32", 6)
    for override in ({"tile_length": 1024}, {"block_dim": 7, "buffer_num": 1}):
        r = check_fwd(x, tiling=override)
        for key, value in override.items():
            assert getattr(r.tiling, key) == value
        check_grad(rand((200, 2000), "float32", 7), x, tiling=override)


def test_empty_x_forward():
    r = ops.swi_glu(np.zeros((0, 8), np.float16))
    assert r.outputs["out"].shape == (0, 4) and r.cycles == 0


def test_modes_identical_and_numerics_off_keeps_cycles():
    x, g = rand((64, 3000), "bfloat16", 8), rand((64, 1500), "bfloat16", 9)
    for fn, args in ((ops.swi_glu, (x,)), (ops.swi_glu_grad, (g, x))):
        timed, functional = fn(*args), fn(*args, mode="functional")
        assert_bit_equal(functional.outputs["out"], timed.outputs["out"])
        assert fn(*args, numerics=False).cycles == timed.cycles


# --- argument rules --------------------------------------------------------------------------

def raises(code, match, fn, *args, **kwargs):
    with pytest.raises(ParamError, match=match) as info:
        fn(*args, **kwargs)
    assert info.value.code == code


def test_none_is_161001():
    raises(161001, "is None", ops.swi_glu, None)
    raises(161001, "is None", ops.swi_glu_grad, None, np.ones((2, 4), np.float32))
    raises(161001, "is None", ops.swi_glu_grad, np.ones((2, 2), np.float32), None)


@pytest.mark.parametrize("chip,match", [("atlas-training", "not supported on atlas-training"),
                                        ("atlas-inference", "by npusim.*does not model")])
def test_other_products_are_161002(chip, match):
    x = np.ones((2, 4), np.float32)
    raises(161002, match, ops.swi_glu, x, chip=chip)
    raises(161002, match, ops.swi_glu_grad, np.ones((2, 2), np.float32), x, chip=chip)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int8])
def test_dtype_is_161002(dtype):
    raises(161002, "dtype .* is not supported", ops.swi_glu, np.ones((2, 4), dtype))


@pytest.mark.parametrize("x,dim,match", [
    (np.ones((2, 3), np.float32), -1, "odd"),
    (np.ones((2, 4), np.float32), 2, r"allowed an integer in \[-2, 1\]"),
    (np.ones((2, 4), np.float32), -3, "allowed an integer"),
    (np.ones((2, 4), np.float32), 1.0, "allowed an integer"),
    (np.array(1.0, np.float32), 0, "at least 1 dim"),
])
def test_shape_and_dim_are_161002(x, dim, match):
    raises(161002, match, ops.swi_glu, x, dim=dim)


@pytest.mark.parametrize("y,x,match", [
    (np.ones((2, 3), np.float32), np.ones((2, 4), np.float32), "must be x's shape"),
    (np.ones((2, 2), np.float16), np.ones((2, 4), np.float32), "yGrad dtype float16"),
    (np.ones((0, 2), np.float32), np.ones((0, 4), np.float32), "not empty"),
])
def test_grad_rules_are_161002(y, x, match):
    raises(161002, match, ops.swi_glu_grad, y, x)


@pytest.mark.parametrize("override,match", [
    ({"tile_length": 100}, "multiple of 16"),
    ({"tile_length": 1 << 20}, "at most"),
    ({"block_dim": 49}, "allowed 1 to 48"),
    ({"block_dim": 0}, "allowed 1 to 48"),        # fuzzer seed 26335: a division by zero
    ({"block_dim": -3}, "allowed 1 to 48"),
    ({"buffer_num": 3}, "allowed 1 or 2"),
    ({"chunks": 2}, "derived from the shape"),
    ({"tile": 2}, "unknown tiling field"),
])
def test_bad_overrides_say_why(override, match):
    with pytest.raises(TilingError, match=match):
        ops.swi_glu(np.ones((100, 512), np.float16), tiling=override)
    with pytest.raises(TilingError, match=match):
        ops.swi_glu_grad(np.ones((17, 1), np.float16), np.ones((17, 2), np.float16),
                         tiling=override)


# --- timing ----------------------------------------------------------------------------------

def test_never_below_the_roofline_and_double_buffering_helps():
    chip = npusim.load_chip(A2)
    x = np.zeros((2048, 8192), bfloat16)
    double = ops.swi_glu(x, numerics=False, trace=False)
    single = ops.swi_glu(x, numerics=False, trace=False, tiling={"buffer_num": 1})
    bound = 1.5 * x.nbytes / chip.hbm_bytes_per_s * 1e6
    assert bound <= double.time_us < single.time_us
    assert double.time_us <= 1.5 * bound
    g = ops.swi_glu_grad(np.zeros((2048, 4096), bfloat16), x, numerics=False, trace=False)
    assert g.time_us >= 2.5 * x.nbytes / chip.hbm_bytes_per_s * 1e6


def test_time_is_linear_once_every_core_is_busy():
    small = ops.swi_glu(np.zeros((1024, 8192), bfloat16), numerics=False, trace=False).time_us
    large = ops.swi_glu(np.zeros((2048, 8192), bfloat16), numerics=False, trace=False).time_us
    assert large / small == pytest.approx(2.0, rel=0.1)


@pytest.mark.parametrize("bad", [[1], "x", 1.5])
def test_tiling_not_a_dict_is_a_tiling_error(bad):
    with pytest.raises(TilingError, match="tiling overrides must be a dict"):
        ops.swi_glu(np.ones((4, 8), np.float16), tiling=bad)
    with pytest.raises(TilingError, match="tiling overrides must be a dict"):
        ops.swi_glu_grad(np.ones((4, 4), np.float16), np.ones((4, 8), np.float16), tiling=bad)


@pytest.mark.parametrize("seed", range(6))
def test_random_shapes(seed):
    rng = np.random.default_rng(100 + seed)
    shape = tuple(int(v) for v in rng.integers(1, 9, rng.integers(1, 4)))
    dim = int(rng.integers(-len(shape), len(shape)))
    shape = tuple(2 * v if i == dim % len(shape) else v for i, v in enumerate(shape))
    dtype = ["float32", "float16", "bfloat16"][seed % 3]
    x = rand(shape, dtype, seed)
    check_fwd(x, dim=dim)
    check_grad(rand(half(shape, dim), dtype, seed + 50), x, dim=dim)
