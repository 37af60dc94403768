"""The elementwise template (ops/elementwise/template.py): its tiling, overrides, both modes,
the sanitizer, the trace, and timing sanity, through relu, threshold_backward and add."""

import numpy as np
import pytest
from elementwise_check import CASES, normal
from hypothesis import given, settings
from hypothesis import strategies as st

import npusim
from npusim import golden, ops
from npusim.errors import TilingError
from npusim.ops.elementwise.computes import Add, Axpy, Relu, ThresholdGrad
from npusim.ops.elementwise.template import (
    ElementwiseTiling,
    elementwise_tiling,
    max_tile_length,
    ub_units,
)
from npusim.ops.silu.backward import UB_UNITS
from op_check import assert_bit_equal
from trace_check import check_trace


class SiluLike:
    """SiluGrad's needs (two inputs, five fp32 work tiles for 16-bit inputs, two for fp32)."""

    inputs = 2

    def work_bytes(self, dtype):
        return 4 * (5 if np.dtype(dtype).itemsize == 2 else 2)


@pytest.mark.parametrize("dtype,buffer_num", [(np.float16, 1), (np.float16, 2),
                                              (np.float32, 1), (np.float32, 2)])
def test_ub_units_are_silugrads_for_its_needs(dtype, buffer_num):
    assert ub_units(SiluLike(), dtype, buffer_num) == \
        UB_UNITS[np.dtype(dtype).itemsize, buffer_num]


def test_default_tiling_follows_the_host_rules():
    chip = npusim.load_chip("atlas-a2")
    t = elementwise_tiling(chip, "op", Add(), 1000 * 16 + 3, np.float16)
    assert isinstance(t, ElementwiseTiling)
    assert t.block_dim == 16 and (t.big_core_num, t.big_core_length) == (9, 1008)
    assert t.buffer_num == 1 and t.tile_length == max_tile_length(chip, Add(), np.float16, 1)
    assert t.tile_length == 196608 // 32 // 3 * 32 // 2        # three queues of fp16
    big = elementwise_tiling(chip, "op", Relu(), 1 << 24, np.float32)
    assert big.block_dim == 48 and big.buffer_num == 2
    assert big.tile_length == 196608 // 32 // 4 * 32 // 4      # 2 queues x 2 buffers


def test_work_space_counts_in_the_tile():
    chip = npusim.load_chip("atlas-a2")
    assert ub_units(ThresholdGrad(threshold=0.0), np.float16, 1) == 3 + 3   # thr + mask
    assert ub_units(ThresholdGrad(threshold=0.0), npusim.dtypes.bfloat16, 2) == 6 + 7
    assert ub_units(Axpy(alpha=2.0), np.float32, 2) == 6 + 1
    assert max_tile_length(chip, Relu(), np.float16, 2) == 196608 // 32 // 4 * 32 // 2


@pytest.mark.parametrize("run", [
    lambda x, **o: ops.relu(x, **o),
    lambda x, **o: ops.threshold_backward(x, x[::-1].copy(), 0.25, **o),
    lambda x, **o: ops.add(x, x[::-1].copy(), 0.5, **o),
], ids=["relu", "threshold_backward", "add"])
@pytest.mark.parametrize("override", [{"tile_length": 1024}, {"buffer_num": 1},
                                      {"block_dim": 5}, {"block_dim": 7, "tile_length": 512}])
def test_overrides_change_the_schedule_not_the_answer(run, override):
    x = normal((100_003,), "float16", seed=2)
    plain, r = run(x), run(x, tiling=override)
    for key, value in override.items():
        assert getattr(r.tiling, key) == value
    (name,) = plain.outputs
    assert_bit_equal(r.outputs[name], plain.outputs[name])
    if "block_dim" in override:
        assert len(r.stats["core_labels"]) == override["block_dim"]


@pytest.mark.parametrize("override,match", [
    ({"tile_len": 8}, "aclnnRelu: unknown tiling field 'tile_len'; fields: total_length"),
    ({"tile_length": 100_000}, "needs .* bytes of UB; atlas-a2 has 196608: at most 49152"),
    ({"tile_length": 1000}, "multiple of 16 elements"),
    ({"block_dim": 49}, "allowed 1 to 48"),
    ({"buffer_num": 3}, "allowed 1 or 2"),
    ({"big_core_num": 1}, "derived from the shape"),
    ({"tile_length": 2.5}, "an integer is required"),
])
def test_bad_overrides_say_why(override, match):
    with pytest.raises(TilingError, match=match):
        ops.relu(normal((100_000,), "float16"), tiling=override)


def test_bad_override_names_the_operator():
    a = normal((4096,), "float32")
    with pytest.raises(TilingError, match="aclnnAdd: .*atlas-training has 262144"):
        ops.add(a, a, chip="atlas-training", tiling={"tile_length": 40_000})
    with pytest.raises(TilingError, match="aclnnThresholdBackward: buffer_num"):
        ops.threshold_backward(a, a, tiling={"buffer_num": 0})


def test_many_tiles_double_buffer_and_modes_agree(chip_name, tmp_path):
    dy, x = normal((50, 999), "float16", seed=9).T, normal((999, 50), "float16", seed=10)
    options = dict(chip=chip_name, tiling={"tile_length": 512, "buffer_num": 2})
    timed = ops.threshold_backward(dy, x, **options)
    functional = ops.threshold_backward(dy, x, mode="functional", **options)
    jittered = ops.threshold_backward(dy, x, jitter=(7, 60.0), **options)
    assert timed.tiling.buffer_num == 2
    assert timed.stats["instruction_counts"]["set_flag"] > 10 * timed.tiling.block_dim
    assert_bit_equal(functional.outputs["gradInput"], timed.outputs["gradInput"])
    assert_bit_equal(jittered.outputs["gradInput"], timed.outputs["gradInput"])
    assert jittered.cycles > timed.cycles
    check_trace(timed, tmp_path / "tb.json")


def test_numerics_off_keeps_the_cycles():
    a = normal((70_000,), "float16", seed=4)
    assert ops.add(a, a, 2.0).cycles == ops.add(a, a, 2.0, numerics=False).cycles


# --- timing ----------------------------------------------------------------------------------

def timed_us(chip, n, op="relu", dtype=np.float16, **tiling):
    a = np.zeros(n, dtype)
    args = {"relu": (a,), "threshold_backward": (a, a), "add": (a, a)}[op]
    return getattr(ops, op)(*args, chip=chip, numerics=False, trace=False,
                            tiling=tiling or None).time_us


@pytest.mark.parametrize("op,tensors", [("relu", 2), ("threshold_backward", 3), ("add", 3)])
def test_never_below_the_hbm_bound_and_within_two_of_it(chip_name, op, tensors):
    n = 16 << 20
    chip = npusim.load_chip(chip_name)
    bound = tensors * n * 2 / chip.hbm_bytes_per_s * 1e6
    t = timed_us(chip_name, n, op)
    assert bound <= t <= 2 * bound, (t, bound)


def test_time_is_linear_once_every_core_is_busy(chip_name):
    """Each doubling adds twice the time the one before added (the TBE kernel's fixed
    start-up, 7.25 us on atlas-a2, is the intercept)."""
    t4, t8, t16 = (timed_us(chip_name, n << 20, "add") for n in (4, 8, 16))
    assert (t16 - t8) / (t8 - t4) == pytest.approx(2.0, rel=0.08)


def test_double_buffering_beats_single(chip_name):
    n = 8 << 20
    assert timed_us(chip_name, n, "add", tile_length=8192, buffer_num=2) < \
        timed_us(chip_name, n, "add", tile_length=8192, buffer_num=1)


shapes = st.lists(st.integers(0, 9), min_size=0, max_size=5).filter(
    lambda s: int(np.prod(s)) <= 3000)


@settings(max_examples=30, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**31), chip=st.sampled_from(CASES),
       op=st.sampled_from(["relu", "threshold_backward", "add"]),
       scalar=st.sampled_from([0.0, 1.0, -0.5, 2.5]))
def test_any_shape_matches_the_golden(shape, seed, chip, op, scalar):
    chip_name, dtype = chip
    a, b = normal(tuple(shape), dtype, seed), normal(tuple(shape), dtype, seed + 1)
    a, b = np.asarray(a), np.asarray(b)
    args, params = {"relu": ((a,), {}), "threshold_backward": ((a, b), {"threshold": scalar}),
                    "add": ((a, b), {"alpha": scalar})}[op]
    r = getattr(ops, op)(*args, chip=chip_name, **params)
    (name, want), = getattr(golden, op)(*args, **params).items()
    assert_bit_equal(r.outputs[name], want, name)
