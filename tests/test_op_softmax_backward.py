"""aclnnSoftmaxBackward: results against the golden and PyTorch's autograd of softmax, argument
rules, tiling, modes. Tolerances set before the first run: the output dtype's rounding (fp32
1e-5, fp16 2e-3, bf16 8e-3) with an absolute floor of rtol x max|ref| (the result subtracts two
terms of one size)."""

import numpy as np
import pytest
import torch

from npusim import golden, ops
from npusim.dtypes import bfloat16
from npusim.errors import ParamError, TilingError
from op_check import check_op

RTOL = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 8e-3}
DT = {"float32": np.float32, "float16": np.float16, "bfloat16": bfloat16}
CHIPS = {"atlas-a2": ("float32", "float16", "bfloat16"), "atlas-training": ("float32", "float16")}
CASES = [(chip, dt) for chip, dts in CHIPS.items() for dt in dts]


def torch_softmax_backward(dy, y, dim=-1):
    """Autograd of softmax at the logits log(y), in float64: y (dy - sum(dy y))."""
    x = torch.log(y.clamp_min(1e-300)).requires_grad_(True)
    (grad,) = torch.autograd.grad(torch.softmax(x, dim), x, dy)
    return {"gradInput": grad}


def softmax_inputs(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    y = (e / e.sum(axis=-1, keepdims=True)).astype(DT[dtype])
    return rng.standard_normal(shape).astype(DT[dtype]), y


def check(dy, y, chip="atlas-a2", mode="timed", **options):
    name = "bfloat16" if dy.dtype == bfloat16 else np.dtype(dy.dtype).name
    ref = torch_softmax_backward(*(torch.from_numpy(np.asarray(a).astype(np.float64))
                                   for a in (dy, y)))["gradInput"].numpy()
    return check_op(ops.softmax_backward, golden.softmax_backward,
                    lambda *_a, **_k: {"gradInput": torch.from_numpy(ref)}, (dy, y),
                    chip=chip, mode=mode, rtol=RTOL[name],
                    atol=RTOL[name] * float(np.abs(ref).max()), **options)


@pytest.mark.parametrize("chip, dtype", CASES)
def test_router_gradient(chip, dtype):
    """The MoE router's shape, smaller: 512 tokens x 256 experts."""
    check(*softmax_inputs((512, 256), dtype), chip=chip)


@pytest.mark.parametrize("chip, dtype", CASES)
def test_odd_rows_and_columns(chip, dtype):
    """Rows not a multiple of the cores, a row of 70 (a 64-lane tail), 3-D."""
    check(*softmax_inputs((5, 7, 70), dtype), chip=chip, tiling={"block_dim": 3,
                                                                 "row_factor": 4})


def test_seed_example_and_one_element():
    """aclnnSoftmaxBackward's C example: gradOutput 0..7, output 1,1,1,2,2,2,3,3 as {4, 2},
    dim 0 (npusim models the last dim: the example's transpose, dim 1)."""
    dy = np.arange(8, dtype=np.float32).reshape(4, 2).T.copy()
    y = np.array([1, 1, 1, 2, 2, 2, 3, 3], np.float32).reshape(4, 2).T.copy()
    r = ops.softmax_backward(dy, y, 1)
    want = dy * y - (dy * y).sum(-1, keepdims=True) * y
    assert np.array_equal(r.outputs["gradInput"], want)
    one = ops.softmax_backward(np.ones((1, 1), np.float16), np.ones((1, 1), np.float16), 1)
    assert one.outputs["gradInput"][0, 0] == 0


def test_functional_mode_and_jitter_agree():
    dy, y = softmax_inputs((100, 300), "bfloat16")
    timed = check(dy, y)
    for options in ({"mode": "functional"}, {"jitter": (7, 30)}):
        other = ops.softmax_backward(dy, y, -1, **options)
        assert np.array_equal(other.outputs["gradInput"].view(np.uint16),
                              timed.outputs["gradInput"].view(np.uint16))


def test_empty_tensor_runs_no_kernel():
    r = ops.softmax_backward(np.zeros((0, 8), np.float16), np.zeros((0, 8), np.float16))
    assert r.outputs["gradInput"].shape == (0, 8)


def test_none_is_161001():
    with pytest.raises(ParamError) as err:
        ops.softmax_backward(None, np.ones(4, np.float16))
    assert err.value.code == 161001


@pytest.mark.parametrize("kw, words", [
    ({"dim": 2}, "dim = 2"), ({"dim": 0}, "last dim"), ({"chip": "atlas-inference"},
                                                        "not model"),
    ({"bf16_training": True}, "not supported"), ({"mixed": True}, "one dtype"),
    ({"int": True}, "not supported"),
])
def test_bad_arguments_are_161002(kw, words):
    dy, y = softmax_inputs((4, 8), "float16")
    dim, chip = kw.get("dim", -1), kw.get("chip", "atlas-a2")
    if kw.get("bf16_training"):
        dy, y, chip = dy.astype(bfloat16), y.astype(bfloat16), "atlas-training"
    if kw.get("mixed"):
        y = y.astype(np.float32)
    if kw.get("int"):
        dy, y = dy.astype(np.int32), y.astype(np.int32)
    with pytest.raises(ParamError, match=words) as err:
        ops.softmax_backward(dy, y, dim, chip=chip)
    assert err.value.code == 161002


@pytest.mark.parametrize("tiling, words", [({"row_factor": 0}, "row_factor"),
                                           ({"block_dim": 99}, "block_dim"),
                                           ({"row_factor": 255}, "UB")])
def test_bad_tiling(tiling, words):
    dy, y = softmax_inputs((300, 1000), "float32")
    with pytest.raises(TilingError, match=words):
        ops.softmax_backward(dy, y, tiling=tiling)
