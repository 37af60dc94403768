"""aclnnSiluBackward: results against the golden and PyTorch, argument rules, tiling, timing."""


import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import npusim
from npusim import golden, ops
from npusim.dtypes import bfloat16
from npusim.errors import ParamError, TilingError
from npusim.ops.silu.backward import SiluBackwardTiling, max_tile_length, silu_backward_tiling
from op_check import assert_bit_equal, check_op
from trace_check import check_trace

RTOL = {"float32": 1e-4, "float16": 1e-3, "bfloat16": 4e-3}
DTYPES = {"atlas-a2": ["float16", "float32", "bfloat16"], "atlas-training": ["float16", "float32"]}
CASES = [(chip, dt) for chip, dts in DTYPES.items() for dt in dts]


def torch_silu_backward(dy, x):
    x = x.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(torch.nn.functional.silu(x), x, dy)
    return {"gradInput": grad}


def check(dy, x, chip="atlas-a2", mode="timed", **options):
    rtol = RTOL[np.dtype(dy.dtype).name if dy.dtype != bfloat16 else "bfloat16"]
    return check_op(ops.silu_backward, golden.silu_backward, torch_silu_backward, (dy, x),
                    chip=chip, mode=mode, rtol=rtol, **options)


def inputs(shape, dtype, seed=0, scale=100.0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-scale, scale, shape).astype(dtype)
    dy = rng.uniform(-4, 4, shape).astype(dtype)
    return dy, x


def test_seed_example(chip_name):
    """The seed's C example: fp32 {2, 3}, self 1..6, gradOutput ones."""
    dy = np.ones((2, 3), np.float32)
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    r = check(dy, x, chip=chip_name)
    assert r.outputs["gradInput"][0, 0] == pytest.approx(0.9276705, rel=1e-6)
    assert r.cycles > 0


@pytest.mark.parametrize("chip,dtype", CASES)
@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_matches_golden_and_torch(chip, dtype, mode):
    check(*inputs((3, 5000), np.dtype(dtype) if dtype != "bfloat16" else bfloat16), chip=chip,
          mode=mode)


@pytest.mark.parametrize("chip,dtype", CASES)
def test_many_tiles_per_core_double_buffered(chip, dtype):
    dt = np.dtype(dtype) if dtype != "bfloat16" else bfloat16
    r = check(*inputs((300_001,), dt, seed=3, scale=8.0), chip=chip,
              tiling={"tile_length": 1024, "buffer_num": 2})
    assert r.tiling.block_dim == npusim.load_chip(chip).vector_core_count
    assert r.stats["instruction_counts"]["set_flag"] > 20 * r.tiling.block_dim


shapes = st.lists(st.integers(0, 9), min_size=0, max_size=5).filter(
    lambda s: int(np.prod(s)) <= 3000)


@settings(max_examples=40, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**31), chip=st.sampled_from(CASES),
       scale=st.sampled_from([1.0, 10.0, 100.0]))
def test_any_shape_and_values(shape, seed, chip, scale):
    chip_name, dtype = chip
    dt = np.dtype(dtype) if dtype != "bfloat16" else bfloat16
    r = check(*inputs(tuple(shape), dt, seed, scale), chip=chip_name)
    assert r.outputs["gradInput"].shape == tuple(shape)


@pytest.mark.parametrize("make", [
    lambda a, b: (a.T, b.T),                               # transposed: element bursts
    lambda a, b: (a[::2, 3:40], b[10:60, 50:87]),          # row slices with gaps
    lambda a, b: (a[::-1, ::3][:30, :30], b[:30, :30]),    # reversed rows, strided columns
    lambda a, b: (np.broadcast_to(a[0], (50, 100)), b[:50]),  # zero stride
], ids=["transposed", "sliced", "reversed", "broadcast"])
def test_non_contiguous_inputs_are_copied_by_a_kernel(chip_name, make):
    a, b = inputs((100, 100), np.float16, seed=5, scale=6.0)
    dy, x = make(a, b)
    r = check(dy, x, chip=chip_name)
    names = [k["name"] for k in r.stats["kernels"]]
    assert names[-1] == "SiluGrad" and any(n.startswith("Contiguous") for n in names)
    plain = ops.silu_backward(np.ascontiguousarray(dy), np.ascontiguousarray(x), chip=chip_name)
    assert r.cycles > plain.cycles
    gaps = r.chip.kernel_gap_cycles * (len(r.stats["kernels"]) - 1)   # the stream's gaps
    assert r.cycles == sum(k["cycles"] for k in r.stats["kernels"]) + gaps


@pytest.mark.parametrize("shape", [(0,), (3, 0, 2), (0, 0)])
def test_empty_tensors(chip_name, shape):
    r = ops.silu_backward(np.zeros(shape, np.float16), np.zeros(shape, np.float16),
                          chip=chip_name)
    assert r.outputs["gradInput"].shape == shape and r.cycles == 0


def test_scalar_tensor(chip_name):
    check(np.array(2.0, np.float32), np.array(-0.5, np.float32), chip=chip_name)


# --- argument rules (the Python API; the aclnn API is in test_aclnn.py) ---------------------

def raises_param(code, match, *args, chip="atlas-a2"):
    with pytest.raises(ParamError, match=match) as info:
        ops.silu_backward(*args, chip=chip)
    assert info.value.code == code


@pytest.mark.parametrize("which", [0, 1])
def test_missing_tensor_is_161001(which):
    args = [np.ones(4, np.float32), np.ones(4, np.float32)]
    args[which] = None
    raises_param(161001, "is None", *args)


@pytest.mark.parametrize("chip,dtype", [("atlas-training", bfloat16), ("atlas-a2", np.float64),
                                        ("atlas-a2", np.int32), ("atlas-training", np.int8)])
def test_unsupported_dtype_is_161002(chip, dtype):
    a = np.ones(4, dtype)
    raises_param(161002, "dtype .* is not supported on .*allowed", a, a, chip=chip)


def test_mixed_dtypes_is_161002():
    raises_param(161002, "dtypes must be equal", np.ones(4, np.float16), np.ones(4, np.float32))


def test_different_shapes_is_161002():
    raises_param(161002, r"shapes must be equal; given gradOutput \(2, 3\), self \(3, 2\)",
                 np.ones((2, 3), np.float16), np.ones((3, 2), np.float16))


def test_not_an_array_is_161002():
    raises_param(161002, "not an array|npusim does not know", object(), np.ones(2, np.float16))


def test_unknown_chip_names_the_chips():
    with pytest.raises(npusim.NpusimError, match="atlas-a2.*atlas-training"):
        ops.silu_backward(np.ones(2, np.float16), np.ones(2, np.float16), chip="ascend-999")


# --- tiling ----------------------------------------------------------------------------------

def test_default_tiling_follows_the_ascend_c_host_code():
    chip = npusim.load_chip("atlas-a2")
    t = silu_backward_tiling(chip, 1000 * 16 + 3, np.float16)   # 1001 blocks of 16 fp16
    assert isinstance(t, SiluBackwardTiling)
    assert t.block_dim == 16                                      # ceil(16003 / 1024)
    assert (t.big_core_num, t.big_core_length, t.small_core_length) == (9, 1008, 992)
    assert t.buffer_num == 1 and t.tile_length == max_tile_length(chip, 2, 1) == 7552
    big = silu_backward_tiling(chip, 1 << 24, np.float32)
    assert big.block_dim == 48 and big.buffer_num == 2 and big.tile_length == 6144


@pytest.mark.parametrize("override", [{"tile_length": 1024}, {"buffer_num": 1},
                                      {"block_dim": 5}, {"block_dim": 7, "tile_length": 512}])
def test_overrides_change_the_schedule_not_the_answer(override):
    dy, x = inputs((100_000,), np.float16, seed=2, scale=10.0)
    r = check(dy, x, tiling=override)
    for key, value in override.items():
        assert getattr(r.tiling, key) == value
    if "block_dim" in override:
        assert len(r.stats["core_labels"]) == override["block_dim"]


@pytest.mark.parametrize("override,match", [
    ({"tile_len": 8}, "unknown tiling field 'tile_len'; fields: total_length"),
    ({"tile_length": 100_000}, "needs .* bytes of UB; atlas-a2 has 196608: at most 7552"),
    ({"tile_length": 1000}, "multiple of 16 elements"),
    ({"tile_length": 0}, "multiple of 16 elements"),
    ({"block_dim": 49}, "allowed 1 to 48"),
    ({"block_dim": 0}, "allowed 1 to 48"),
    ({"buffer_num": 3}, "allowed 1 or 2"),
    ({"big_core_num": 1}, "derived from the shape"),
    ({"tile_length": 2.5}, "an integer is required"),
])
def test_bad_overrides_say_why(override, match):
    with pytest.raises(TilingError, match=match):
        ops.silu_backward(*inputs((100_000,), np.float16), tiling=override)


def test_override_past_ub_on_training_names_its_size():
    with pytest.raises(TilingError, match="atlas-training has 262144"):
        ops.silu_backward(*inputs((4096,), np.float32), chip="atlas-training",
                          tiling={"tile_length": 20_000})


# --- modes, jitter, trace --------------------------------------------------------------------

def test_modes_and_jitter_give_identical_bytes(chip_name, tmp_path):
    dy, x = inputs((40, 999), np.float16, seed=9, scale=12.0)
    dy = dy.T                                    # include the Contiguous kernel
    timed = ops.silu_backward(dy, x.T, chip=chip_name, tiling={"tile_length": 512})
    functional = ops.silu_backward(dy, x.T, chip=chip_name, mode="functional",
                                   tiling={"tile_length": 512})
    jittered = ops.silu_backward(dy, x.T, chip=chip_name, jitter=(7, 60.0),
                                 tiling={"tile_length": 512})
    assert_bit_equal(functional.outputs["gradInput"], timed.outputs["gradInput"])
    assert_bit_equal(jittered.outputs["gradInput"], timed.outputs["gradInput"])
    assert jittered.cycles > timed.cycles
    check_trace(timed, tmp_path / "silu.json")


def test_numerics_off_keeps_the_cycles():
    dy, x = inputs((70_000,), np.float16, seed=4)
    on = ops.silu_backward(dy, x)
    off = ops.silu_backward(dy, x, numerics=False)
    assert on.cycles == off.cycles


@pytest.mark.parametrize("chip,cycles", [("atlas-a2", 16339), ("atlas-training", 16709)])
def test_pinned_cycles(chip, cycles):
    """One exact cycle count per chip for 1M fp16 elements; update deliberately."""
    dy, x = inputs((1 << 20,), np.float16)
    assert ops.silu_backward(dy, x, chip=chip, numerics=False).cycles == cycles


# --- timing ----------------------------------------------------------------------------------

def hbm_bound_us(chip: str, n: int, itemsize: int) -> float:
    c = npusim.load_chip(chip)
    return 3 * n * itemsize / c.hbm_bytes_per_s * 1e6


def timed_us(chip, n, dtype=np.float16, **tiling):
    a = np.zeros(n, dtype)
    return ops.silu_backward(a, a, chip=chip, numerics=False, trace=False,
                             tiling=tiling or None).time_us


def test_32m_fp16_on_a2_within_one_and_a_half_rooflines():
    n = 32 << 20
    t, bound = timed_us("atlas-a2", n), hbm_bound_us("atlas-a2", n, 2)
    assert bound <= t <= 1.5 * bound, (t, bound)


def test_a2_beats_training():
    n = 4 << 20
    assert timed_us("atlas-a2", n) < timed_us("atlas-training", n)


def test_time_is_linear_once_every_core_is_busy(chip_name):
    """The time past the kernel's fixed start-up (a TBE kernel's, about 4 us on the A2) doubles
    with the data."""
    small, large = (silu_run(chip_name, n) for n in (4 << 20, 8 << 20))
    assert large / small == pytest.approx(2.0, rel=0.08)


def silu_run(chip, n) -> float:
    """Cycles of SiluBackward on ``n`` fp16 elements, less its kernels' start-ups."""
    a = np.zeros(n, np.float16)
    r = ops.silu_backward(a, a, chip=chip, numerics=False, trace=False)
    return r.cycles - sum(k["launch_cycles"] for k in r.stats["kernels"])


def test_double_buffering_beats_single(chip_name):
    n = 2 << 20
    assert timed_us(chip_name, n, buffer_num=2) < timed_us(chip_name, n, buffer_num=1)
