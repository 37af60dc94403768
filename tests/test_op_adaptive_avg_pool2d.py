"""aclnnAdaptiveAvgPool2d (output size (1, 1)) and its backward: bit for bit against the
goldens, within the precision standard of torch, argument rules, tiling, modes."""

import numpy as np
import pytest
import torch
from elementwise_check import CASES, normal, rtol_of

from npusim import golden, ops
from npusim.dtypes import bfloat16
from npusim.errors import ParamError, TilingError
from op_check import assert_bit_equal, check_op

SHAPES = [(32, 256, 7, 7), (3, 5, 9, 11), (2, 3, 1, 1), (4, 10, 10), (1, 3, 13, 13)]


def torch_pool(x, output_size=(1, 1)):
    return {"out": torch.nn.functional.adaptive_avg_pool2d(x, output_size)}


def torch_pool_backward(dy, x):
    x = x.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(torch.nn.functional.adaptive_avg_pool2d(x, (1, 1)), x, dy)
    return {"out": grad}


def check_pool(x, chip="atlas-a2", mode="timed", **options):
    """One rounding of the result to the dtype, plus the fp32 scaling and halving-tree sum: at
    most 1 + log2(64) fp32 roundings of values no larger than the row's mean |x| (2^-20 of
    it bounds them), which matter where the mean cancels."""
    rows = np.abs(x.astype(np.float64)).reshape(-1, x.shape[-1] * x.shape[-2])
    atol = 2.0 ** -20 * float(rows.mean(axis=1).max(initial=0.0))
    return check_op(ops.adaptive_avg_pool2d, golden.adaptive_avg_pool2d, torch_pool, (x,),
                    params={"output_size": (1, 1)}, chip=chip, mode=mode, rtol=rtol_of(x),
                    atol=atol, **options)


def check_backward(dy, x, chip="atlas-a2", mode="timed", **options):
    """1 / (H x W) rounded to the dtype, then one rounded product: two roundings."""
    return check_op(ops.adaptive_avg_pool2d_backward, golden.adaptive_avg_pool2d_backward,
                    torch_pool_backward, (dy, x), chip=chip, mode=mode, rtol=2 * rtol_of(x),
                    **options)


@pytest.mark.parametrize("chip,dtype", CASES)
@pytest.mark.parametrize("shape", SHAPES)
def test_pool_matches_golden_and_torch(chip, dtype, shape):
    r = check_pool(normal(shape, dtype, seed=len(shape)), chip=chip)
    assert r.outputs["out"].shape == (*shape[:-2], 1, 1)
    assert [k["name"] for k in r.stats["kernels"]] == ["ReduceMean"]


@pytest.mark.parametrize("chip,dtype", [c for c in CASES if c[1] != "bfloat16"])
@pytest.mark.parametrize("shape", SHAPES)
def test_backward_matches_golden_and_torch(chip, dtype, shape):
    x = normal(shape, dtype, seed=1)
    dy = normal((*shape[:-2], 1, 1), dtype, seed=2)
    r = check_backward(dy, x, chip=chip)
    assert [k["name"] for k in r.stats["kernels"]] == ["Fill", "Mul"]
    assert r.workspace_bytes == x.nbytes


@pytest.mark.parametrize("mode", ["functional"])
def test_both_modes_and_jitter_agree(chip_name, mode):
    x = normal((6, 40, 7, 7), "float16", seed=3)
    dy = normal((6, 40, 1, 1), "float16", seed=4)
    for run, args in ((ops.adaptive_avg_pool2d, (x, (1, 1))),
                      (ops.adaptive_avg_pool2d_backward, (dy, x))):
        options = dict(chip=chip_name, tiling={"tile_rows": 16, "block_dim": 3})
        timed = run(*args, **options)
        assert_bit_equal(run(*args, mode=mode, **options).outputs["out"], timed.outputs["out"])
        jittered = run(*args, jitter=(5, 50.0), **options)
        assert_bit_equal(jittered.outputs["out"], timed.outputs["out"])


def test_strided_inputs_are_made_contiguous():
    x = normal((4, 9, 9, 6), "float32", seed=5).transpose(0, 3, 1, 2)
    r = check_pool(x)
    assert [k["name"] for k in r.stats["kernels"]] == ["Contiguous(self)", "ReduceMean"]


def test_empty():
    r = ops.adaptive_avg_pool2d(np.zeros((0, 3, 4, 4), np.float16), (1, 1))
    assert r.outputs["out"].shape == (0, 3, 1, 1) and r.cycles == 0
    r = ops.adaptive_avg_pool2d_backward(np.zeros((0, 3, 1, 1), np.float16),
                                         np.zeros((0, 3, 4, 4), np.float16))
    assert r.outputs["out"].shape == (0, 3, 4, 4) and r.cycles == 0


@pytest.mark.parametrize("override", [{"tile_rows": 8}, {"block_dim": 5}, {"buffer_num": 1}])
def test_overrides_change_the_schedule_not_the_answer(override):
    x = normal((8, 100, 7, 7), "float16", seed=6)
    dy = normal((8, 100, 1, 1), "float16", seed=7)
    for run, args in ((ops.adaptive_avg_pool2d, (x, (1, 1))),
                      (ops.adaptive_avg_pool2d_backward, (dy, x))):
        plain, r = run(*args), run(*args, tiling=override)
        assert_bit_equal(r.outputs["out"], plain.outputs["out"])
        for key, value in override.items():
            assert getattr(r.tiling, key) == value


@pytest.mark.parametrize("override,match", [
    ({"tile_rows": 0}, "tile_rows = 0"), ({"tile_rows": 5000}, "tile_rows = 5000"),
    ({"block_dim": 49}, "block_dim = 49"), ({"buffer_num": 3}, "buffer_num = 3"),
    ({"row_len": 7}, "follows from the shape"),
])
def test_bad_overrides_say_why(override, match):
    x = normal((8, 100, 7, 7), "float16")
    with pytest.raises(TilingError, match="aclnnAdaptiveAvgPool2d: .*" + match):
        ops.adaptive_avg_pool2d(x, (1, 1), tiling=override)
    with pytest.raises(TilingError, match="aclnnAdaptiveAvgPool2dBackward: .*"):
        ops.adaptive_avg_pool2d_backward(x[..., :1, :1].copy(), x, tiling=override)


# --- argument rules --------------------------------------------------------------------------

X = np.ones((2, 3, 4, 4), np.float16)
DY = np.ones((2, 3, 1, 1), np.float16)


def raises(run, match, *args, code=161002, chip="atlas-a2"):
    with pytest.raises(ParamError, match=match) as info:
        run(*args, chip=chip)
    assert info.value.code == code


def test_missing_is_161001():
    raises(ops.adaptive_avg_pool2d, "self is None", None, (1, 1), code=161001)
    raises(ops.adaptive_avg_pool2d, "outputSize is None", X, None, code=161001)
    raises(ops.adaptive_avg_pool2d_backward, "gradOutput is None", None, X, code=161001)
    raises(ops.adaptive_avg_pool2d_backward, "self is None", DY, None, code=161001)


@pytest.mark.parametrize("size,match", [((2, 2), "models .1, 1. only"), ((0, 1), "greater"),
                                        ((1,), "two integers"), ((1, 1.0), "two integers"),
                                        (3, "two integers")])
def test_output_size_rules(size, match):
    raises(ops.adaptive_avg_pool2d, match, X, size)


@pytest.mark.parametrize("shape", [(4, 4), (1, 2, 3, 4, 5)])
def test_dims_must_be_3_or_4(shape):
    raises(ops.adaptive_avg_pool2d, "allowed 3", np.ones(shape, np.float16), (1, 1))
    raises(ops.adaptive_avg_pool2d_backward, "allowed 3", np.ones(shape, np.float16),
           np.ones(shape, np.float16))


@pytest.mark.parametrize("chip,dtype", [("atlas-training", bfloat16), ("atlas-a2", np.float64),
                                        ("atlas-a2", np.int32)])
def test_pool_dtypes(chip, dtype):
    raises(ops.adaptive_avg_pool2d, "dtype .* is not supported", X.astype(dtype), (1, 1),
           chip=chip)


def test_backward_rules():
    raises(ops.adaptive_avg_pool2d_backward, "bfloat16 is not modelled", DY.astype(bfloat16),
           X.astype(bfloat16))
    raises(ops.adaptive_avg_pool2d_backward, "must share", DY.astype(np.float32), X)
    raises(ops.adaptive_avg_pool2d_backward, "must share", np.ones((2, 4, 1, 1), np.float16), X)
    raises(ops.adaptive_avg_pool2d_backward, "H and W of 1", np.ones((2, 3, 2, 2), np.float16),
           X)


def test_zero_h_or_w_is_refused():
    raises(ops.adaptive_avg_pool2d, "must not be 0", np.ones((2, 3, 0, 4), np.float16), (1, 1))
    raises(ops.adaptive_avg_pool2d_backward, "must not be 0", DY,
           np.ones((2, 3, 4, 0), np.float16))


def test_inference_series_is_not_modelled():
    raises(ops.adaptive_avg_pool2d, "not modelled on atlas-inference", X, (1, 1),
           chip="atlas-inference")
    raises(ops.adaptive_avg_pool2d_backward, "not modelled on atlas-inference", DY, X,
           chip="atlas-inference")
