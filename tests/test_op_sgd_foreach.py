"""aclnnForeachAddListV2 and aclnnForeachMulScalarV2, the kernels torch_npu runs for
torch.optim.SGD's foreach step on Atlas A2: bit for bit against the golden, within the dtype's
rounding of torch's result, an SGD step against torch.optim.SGD, the split over cores, and the
argument rules."""

import numpy as np
import pytest
import torch
from elementwise_check import RTOL, normal, rtol_of

from npusim import golden, ops
from npusim.dtypes import bfloat16
from npusim.errors import ParamError, TilingError
from op_check import assert_bit_equal, assert_close, to_torch

DTYPES = ["float32", "float16", "bfloat16"]
ODD = (1, 17, 1000, 12345, 7)      # sizes that end mid-block and mid-tile


def lists(sizes, dtype, seed):
    return [normal((n,), dtype, seed + i, scale=2.0) for i, n in enumerate(sizes)]


def check_add(x1, x2, alpha, **options):
    r = ops.foreach_add_list_v2(x1, x2, alpha, **options)
    want = golden.foreach_add_list_v2(x1, x2, alpha)
    refs = torch._foreach_add([to_torch(a) for a in x1], [to_torch(b) for b in x2], alpha=alpha)
    for i, (a, b) in enumerate(zip(x1, x2, strict=True)):
        got = r.outputs[f"out[{i}]"]
        assert_bit_equal(got, want[f"out[{i}]"], f"out[{i}]")
        rtol = rtol_of(a)      # the sum rounded, and alpha * x2 rounded before it
        scale = np.abs(a.astype(np.float64)) + np.abs(alpha * b.astype(np.float64))
        assert_close(got, refs[i].numpy(), rtol, 2 * rtol * float(scale.max()), f"out[{i}]")
    return r


def check_mul(x, scalar, **options):
    r = ops.foreach_mul_scalar_v2(x, scalar, **options)
    want = golden.foreach_mul_scalar_v2(x, scalar)
    refs = torch._foreach_mul([to_torch(a) for a in x], scalar)
    for i, a in enumerate(x):
        got = r.outputs[f"out[{i}]"]
        assert_bit_equal(got, want[f"out[{i}]"], f"out[{i}]")
        # the scalar rounded to the dtype, then the product: two roundings
        assert_close(got, refs[i].numpy(), 2 * rtol_of(a), None, f"out[{i}]")
    return r


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_add_list_matches_golden_and_torch(dtype, mode):
    r = check_add(lists(ODD, dtype, 1), lists(ODD, dtype, 11), -0.37, mode=mode)
    assert [k["name"] for k in r.stats["kernels"]] == ["ForeachAddList"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_mul_scalar_matches_golden_and_torch(dtype, mode):
    r = check_mul(lists(ODD, dtype, 2), 0.9, mode=mode)
    assert [k["name"] for k in r.stats["kernels"]] == ["ForeachMulScalar"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_many_tiles_and_cores_across_tensor_ends(dtype):
    """Small tiles: a core's piece spans several tiles and crosses from one tensor to the next;
    bf16 also steps through its fp32 cast buffer several times a tile."""
    x1, x2 = lists((3000, 5, 4099, 64), dtype, 3), lists((3000, 5, 4099, 64), dtype, 13)
    r = check_add(x1, x2, 1e-4, tiling={"block_dim": 5, "tile_length": 512})
    assert r.tiling.block_dim == 5
    check_mul(x1, -2.5, tiling={"block_dim": 3, "tile_length": 256})


def test_single_element_and_one_core():
    check_add([np.array([1.5], np.float32)], [np.array([2.0], np.float32)], 0.25)
    check_mul([np.full((2, 3), 3.0, np.float16)], 0.5)


def test_split_follows_cann_block_rule():
    """AssignDataToEachCore: 113 fp32 elements are 15 blocks over 4 cores: 4, 4, 4, 3 blocks;
    the first core takes the whole first two tensors and 19 elements of the third."""
    r = ops.foreach_mul_scalar_v2(lists((10, 3, 100), "float32", 4), 2.0,
                                  tiling={"block_dim": 4}, mode="functional")
    t = r.tiling
    assert t.starts == ((0, 0), (2, 19), (2, 51), (2, 83))
    assert t.ends == ((2, 18), (2, 50), (2, 82), (2, 99))


def test_ub_share_is_cann_divide_ub_memory():
    """(UB - 3336 bytes of tiling data) / 6 for AddList fp32: 32192 bytes, 8048 elements; bf16:
    / 10 / 6, 64-byte aligned, 9 times that a queue buffer."""
    r = ops.foreach_add_list_v2([np.ones(100, np.float32)], [np.ones(100, np.float32)], 1.0,
                                mode="functional")
    assert (r.tiling.ub_bytes, r.tiling.tile_length) == (32192, 8048)
    b = np.ones(100, bfloat16)
    r = ops.foreach_add_list_v2([b], [b], 1.0, mode="functional")
    assert (r.tiling.ub_bytes, r.tiling.tile_length, r.tiling.cast_length) == (3200, 14400, 800)


def sgd_step_npu(params, grads, bufs, lr, momentum, weight_decay):
    """The four calls of torch's _multi_tensor_sgd (a step with momentum buffers)."""
    def outs(r, n):
        return [r.outputs[f"out[{i}]"] for i in range(n)]
    n = len(params)
    grads = outs(ops.foreach_add_list_v2(grads, params, weight_decay), n)
    bufs = outs(ops.foreach_mul_scalar_v2(bufs, momentum), n)
    bufs = outs(ops.foreach_add_list_v2(bufs, grads, 1.0), n)
    return outs(ops.foreach_add_list_v2(params, bufs, -lr), n), bufs


def test_sgd_step_matches_torch_optim_sgd():
    """torch.optim.SGD(lr, momentum=0.9, weight_decay=1e-4) on CPU fp32 tensors, second step
    (the momentum buffers exist): every parameter within two fp32 roundings of its magnitude
    (torch may fuse x + alpha * y where the kernels round twice)."""
    sizes = (2304, 64, 4097)
    params, grads, bufs = lists(sizes, "float32", 5), lists(sizes, "float32", 15), \
        lists(sizes, "float32", 25)
    tp = [torch.nn.Parameter(torch.from_numpy(p.copy())) for p in params]
    opt = torch.optim.SGD(tp, lr=0.1, momentum=0.9, weight_decay=1e-4, foreach=True)
    for t, g, b in zip(tp, grads, bufs, strict=True):
        t.grad = torch.from_numpy(g.copy())
        opt.state[t]["momentum_buffer"] = torch.from_numpy(b.copy())
    opt.step()
    new, new_bufs = sgd_step_npu(params, grads, bufs, 0.1, 0.9, 1e-4)
    for i, t in enumerate(tp):
        ref = t.detach().numpy()
        np.testing.assert_allclose(new[i], ref, rtol=2 * RTOL["float32"],
                                   atol=2 * RTOL["float32"] * float(np.abs(ref).max()))
        buf = opt.state[t]["momentum_buffer"].numpy()
        np.testing.assert_allclose(new_bufs[i], buf, rtol=2 * RTOL["float32"],
                                   atol=2 * RTOL["float32"] * float(np.abs(buf).max()))


# --- argument rules --------------------------------------------------------------------------

ONE = [np.ones(4, np.float32)]


def raises(code, match, fn, *args, **kwargs):
    with pytest.raises(ParamError, match=match) as info:
        fn(*args, **kwargs)
    assert info.value.code == code


@pytest.mark.parametrize("args", [(None, ONE, 1.0), (ONE, None, 1.0), (ONE, ONE, None),
                                  ([None], ONE, 1.0)])
def test_missing_is_161001(args):
    raises(161001, "is None", ops.foreach_add_list_v2, *args)


def test_missing_scalar_is_161001():
    raises(161001, "scalar is None", ops.foreach_mul_scalar_v2, ONE, None)


def test_atlas_training_is_161002():
    raises(161002, "not supported on atlas-training", ops.foreach_add_list_v2, ONE, ONE, 1.0,
           chip="atlas-training")
    raises(161002, "not supported on atlas-training", ops.foreach_mul_scalar_v2, ONE, 2.0,
           chip="atlas-training")


@pytest.mark.parametrize("x1,x2,match", [
    ([], [], "holds 0 tensors"),
    (ONE * 257, ONE * 257, "holds 257 tensors"),
    (ONE * 2, ONE, "must hold as many"),
    (ONE, [np.ones(5, np.float32)], "must be equal"),
    (ONE, [np.ones(4, np.float16)], "one dtype"),
    ([np.ones(4, np.int32)], [np.ones(4, np.int32)], "int32, int16, int8, uint8 are not "
                                                     "modelled"),
    ([np.ones((0, 3), np.float32)], [np.ones((0, 3), np.float32)], "empty tensors"),
    ([np.ones((1,) * 9, np.float32)], [np.ones((1,) * 9, np.float32)], "at most 8"),
    (np.ones(4, np.float32), ONE, "a list of tensors"),
])
def test_bad_lists_are_161002(x1, x2, match):
    raises(161002, match, ops.foreach_add_list_v2, x1, x2, 1.0)


@pytest.mark.parametrize("alpha", [True, "0.5", [1.0]])
def test_bad_scalar_is_161002(alpha):
    raises(161002, "a real number", ops.foreach_add_list_v2, ONE, ONE, alpha)


@pytest.mark.parametrize("tiling,match", [
    ({"block_dim": 0}, "allowed 1 to 1"), ({"tile_length": 12}, "multiple of 8"),
    ({"tile_length": 8056}, "up to 8048"), ({"starts": ()}, "derived from the tensors"),
])
def test_bad_tiling_is_a_tiling_error(tiling, match):
    with pytest.raises(TilingError, match=match):
        ops.foreach_add_list_v2(ONE, ONE, 1.0, tiling=tiling)
