"""aclnnGroupedMatmul (single tensors, groupListType 0) on the CATLASS-shaped kernel: the
experts' forward GEMM, the input gradient (transposed weight) and the weight gradient (groupType
2) bit for bit against the golden and within torch's precision (per-group matmul in float64);
odd shapes and empty groups; CANN's block dealing; argument rules; tiling; modes."""

import numpy as np
import pytest
import torch

import npusim
from npusim import golden, ops
from npusim.dtypes import bfloat16
from npusim.errors import ParamError, TilingError
from npusim.ops.matmul.grouped_tiling import block_coord
from op_check import assert_bit_equal, assert_close, check_op

# set before the runs: the output's rounding (fp16 half an ulp 2^-11 < 1e-3, bf16 2^-9 <
# 4e-3) plus 2^-10 of sum |x||w| for the fp32 accumulation of a cancelling dot product
RTOL = {np.dtype(np.float16): 1e-3, np.dtype(bfloat16): 4e-3}


def torch_grouped(x, weight, group_list, *, group_type=0):
    ends = [int(v) for v in group_list.tolist()]
    if group_type == 0:
        y = torch.zeros(x.shape[0], weight.shape[2], dtype=torch.float64)
    else:
        y = torch.zeros(len(ends), x.shape[0], weight.shape[1], dtype=torch.float64)
    start = 0
    for e, end in enumerate(ends):
        if group_type == 0:
            y[start:end] = torch.matmul(x[start:end], weight[e])
        else:
            y[e] = torch.matmul(x[:, start:end], weight[start:end])
        start = end
    return {"y": y}


def check(x, weight, group_list, group_type=0, mode="timed", **options):
    """Bit for bit against the golden, within RTOL and the accumulation bound of torch."""
    params = {"group_type": group_type}
    r = ops.grouped_matmul(x, weight, group_list, mode=mode, **params, **options)
    ref = torch_grouped(*(torch.from_numpy(np.asarray(a).astype(np.float64))
                          for a in (x, weight)), torch.from_numpy(group_list), **params)
    mag = float(torch_grouped(*(torch.from_numpy(np.abs(np.asarray(a).astype(np.float64)))
                                for a in (x, weight)), torch.from_numpy(group_list),
                              **params)["y"].max()) if ref["y"].numel() else 0.0
    check_op(lambda *a, **o: r,
             lambda *a, **o: golden.grouped_matmul(*a, tiling=r.tiling, **o),
             None, (x, weight, group_list), params=params, rtol=RTOL[x.dtype])
    assert_close(r.outputs["y"], ref["y"].numpy(), RTOL[x.dtype], 2 ** -10 * mag, "y")
    return r


def rand(shape, dtype, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def ends(*sizes):
    return np.cumsum(sizes).astype(np.int64)


def kernels(r):
    return [k["name"] for k in r.stats["kernels"]]


@pytest.mark.parametrize("dtype", [np.float16, bfloat16])
@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_forward_matches_golden_and_torch(dtype, mode):
    x, w = rand((512, 96), dtype, 1), rand((4, 96, 272), dtype, 2)
    r = check(x, w, ends(128, 128, 128, 128), mode=mode)
    assert r.outputs["y"].shape == (512, 272) and r.outputs["y"].dtype == np.dtype(dtype)
    assert kernels(r) == ["GroupedMatmul"] and r.tiling.layout_b == "row"


def test_input_gradient_reads_the_transposed_weight_in_place():
    """dX = dY W^T per expert: the weight [E, K, N] passed as its transpose (ColumnMajor B)."""
    dy, w = rand((300, 80), bfloat16, 3), rand((3, 160, 80), bfloat16, 4)
    r = check(dy, w.transpose(0, 2, 1), ends(100, 0, 200))
    assert r.tiling.layout_b == "column" and kernels(r) == ["GroupedMatmul"]


@pytest.mark.parametrize("dtype", [np.float16, bfloat16])
def test_weight_gradient_groups_of_k(dtype):
    """dW_e = X_e^T dY_e: odd token counts (not whole fractals) and an expert with none."""
    x, dy = rand((301, 48), dtype, 5), rand((301, 40), dtype, 6)
    gl = ends(37, 0, 150, 100)
    r = check(x.T, dy, gl, group_type=2)
    assert r.outputs["y"].shape == (4, 48, 40) and not r.outputs["y"][1].any()
    assert r.tiling.layout_a == "column"


@pytest.mark.parametrize("m,k,n,sizes", [(45, 37, 19, (0, 20, 0, 25)), (1, 16, 1, (1,)),
                                         (200, 300, 260, (7, 0, 0, 150)),
                                         (70, 5, 3, (33, 34))])
def test_odd_shapes_empty_groups_and_rows_past_the_end(m, k, n, sizes):
    x, w = rand((m, k), np.float16, m + k), rand((len(sizes), k, n), np.float16, n)
    r = check(x, w, ends(*sizes))
    assert not r.outputs["y"][sum(sizes):].any()   # not written (CANN: not updated)


def test_diagonal_dealing_of_a_tall_group():
    """A group of more than 5 block rows is walked by MNBlockIdxCompute's diagonals."""
    x, w = rand((900, 32), np.float16, 7), rand((2, 32, 600), np.float16, 8)
    check(x, w, ends(100, 800), tiling={"l1_m": 64, "l1_n": 64, "block_dim": 5})


@pytest.mark.parametrize("dims", [(1, 16), (6, 7), (16, 28), (56, 16), (13, 11), (9, 9),
                                  (17, 3), (8, 8)])
def test_block_order_visits_every_block_once(dims):
    dim_m, dim_n = dims
    seen = [block_coord(r, dim_m, dim_n) for r in range(dim_m * dim_n)]
    assert sorted(seen) == [(i, j) for i in range(dim_m) for j in range(dim_n)]


def test_blocks_continue_across_groups():
    """Core i takes the running block numbers i mod cores across the groups (CANN's count):
    with shuffle_k each core starts its k walk at its own tile, so the rounding shows which
    core ran which block, and the golden deals them the same way."""
    x, w = rand((96, 160), np.float16, 9), rand((3, 160, 64), np.float16, 10)
    tiling = {"l1_m": 16, "l1_n": 32, "l1_k": 16, "l0_k": 16, "block_dim": 5, "shuffle_k": True}
    r = check(x, w, ends(16, 48, 32), tiling=tiling)
    plain = ops.grouped_matmul(x, w, ends(16, 48, 32), tiling={**tiling, "shuffle_k": False})
    assert not np.array_equal(plain.outputs["y"], r.outputs["y"])   # the order shows


def test_strided_x_goes_through_contiguous():
    x = rand((64, 96), np.float16, 11)[:, ::2]
    r = check(x, rand((2, 48, 32), np.float16, 12), ends(30, 34))
    assert kernels(r) == ["Contiguous(x)", "GroupedMatmul"]


def test_modes_jitter_and_numerics_off_agree():
    x, w = rand((256, 64), bfloat16, 13), rand((4, 64, 96), bfloat16, 14)
    gl = ends(10, 100, 46, 100)
    timed = ops.grouped_matmul(x, w, gl)
    functional = ops.grouped_matmul(x, w, gl, mode="functional")
    jittered = ops.grouped_matmul(x, w, gl, jitter=(3, 40.0))
    fast = ops.grouped_matmul(x, w, gl, numerics=False, trace=False, sanitize=False)
    assert_bit_equal(functional.outputs["y"], timed.outputs["y"])
    assert_bit_equal(jittered.outputs["y"], timed.outputs["y"])
    assert jittered.cycles > timed.cycles and fast.cycles == timed.cycles


def test_empty_x_runs_no_kernel():
    r = ops.grouped_matmul(np.ones((0, 8), np.float16), np.ones((2, 8, 4), np.float16),
                           np.zeros(2, np.int64))
    assert r.outputs["y"].shape == (0, 4) and r.cycles == 0


@pytest.mark.parametrize("sizes", [[128] * 8, [1024] + [0] * 7, [0, 500, 12, 0, 300, 200, 12, 0]])
def test_never_below_the_roofline(sizes):
    """Whatever the routing: not faster than the cube's peak nor than moving x, the experts'
    weights that get tokens and y once through HBM."""
    x, w = np.zeros((1024, 512), np.float16), np.zeros((8, 512, 512), np.float16)
    r = ops.grouped_matmul(x, w, ends(*sizes), numerics=False, trace=False)
    chip = npusim.load_chip("atlas-a2")
    used = sum(1 for s in sizes if s)
    nbytes = x.nbytes + used * w[0].nbytes + 1024 * 512 * 2
    bound = max(2 * 1024 * 512 * 512 / chip.peak_flops("float16"), nbytes / chip.hbm_bytes_per_s)
    assert bound * 1e6 <= r.time_us


# --- tiling ----------------------------------------------------------------------------------

@pytest.mark.parametrize("override", [{"l1_n": 128}, {"block_dim": 3}, {"shuffle_k": True},
                                      {"l1_k": 128, "l0_k": 32}])
def test_overrides_change_the_schedule_and_the_golden_follows(override):
    x, w = rand((200, 600), np.float16, 15), rand((2, 600, 300), np.float16, 16)
    r = check(x, w, ends(80, 120), tiling=override)
    for key, value in override.items():
        assert getattr(r.tiling, key) == value


def test_base_m_follows_cann_for_few_rows():
    r = ops.grouped_matmul(np.ones((40, 32), np.float16), np.ones((2, 32, 16), np.float16),
                           ends(20, 20))
    assert r.tiling.l1_m == 48 and r.tiling.l1_n == 256 and r.tiling.l0_k == 64


@pytest.mark.parametrize("override,match", [
    ({"l1_m": 100}, "aclnnGroupedMatmul .*l1_m = 100; a positive multiple of 16"),
    ({"block_dim": 99}, "block_dim = 99"),
    ({"k": 64}, "come from the arguments"),
    ({"dtype": "float32"}, "come from the arguments"),
    ({"l1_m": 512, "l1_n": 512}, "needs .* bytes of L1, which has 524288"),
    ({"nope": 1}, "unknown tiling field 'nope'"),
])
def test_bad_overrides_say_why(override, match):
    with pytest.raises(TilingError, match=match):
        ops.grouped_matmul(np.ones((4, 8), np.float16), np.ones((1, 8, 4), np.float16),
                           ends(4), tiling=override)


# --- argument rules --------------------------------------------------------------------------

X, W, GL = np.ones((8, 16), np.float16), np.ones((2, 16, 4), np.float16), ends(3, 5)


def raises(match, *args, code=161002, **kwargs):
    with pytest.raises(ParamError, match=match) as info:
        ops.grouped_matmul(*args, **kwargs)
    assert info.value.code == code


@pytest.mark.parametrize("args", [(None, W, GL), (X, None, GL), (X, W, None)])
def test_missing_is_161001(args):
    raises("is None", *args, code=161001)


def test_training_series_is_not_supported_and_inference_not_modelled():
    raises("not supported on atlas-training", X, W, GL, chip="atlas-training")
    raises("CANN runs it there, but npusim does not model", X, W, GL, chip="atlas-inference")


@pytest.mark.parametrize("dtype,match", [(np.float64, "dtype float64 is not supported"),
                                         (np.int32, "dtype int32 is not supported"),
                                         (np.float32, "float32 is not modelled")])
def test_dtypes(dtype, match):
    raises(match, X.astype(dtype), W.astype(dtype), GL)


def test_mixed_dtypes_and_group_list_dtype():
    raises("one dtype", X, W.astype(bfloat16), GL)
    raises("group_list dtype int32 is not supported; allowed: int64", X, W, GL.astype(np.int32))


@pytest.mark.parametrize("gl,match", [
    (np.array([5, 3], np.int64), "non-negative and non-decreasing"),
    (np.array([-1, 3], np.int64), "non-negative and non-decreasing"),
    (np.array([3, 9], np.int64), "last value 9 exceeds x's M = 8"),
    (np.array([8], np.int64), "group_list has 1 values, weight 2 groups"),
    (np.zeros((2, 1), np.int64), "group_list has 2 values|1-D"),
])
def test_group_list_rules(gl, match):
    raises(match, X, W, gl)


def test_at_most_1024_groups():
    raises("1 to 1024 groups", np.ones((1, 16), np.float16), np.ones((1025, 16, 4), np.float16),
           np.ones(1025, np.int64))


@pytest.mark.parametrize("gt", [1, 3, True, 0.0, "0"])
def test_bad_group_type(gt):
    raises("group_type = .*allowed: -1", X, W, GL, group_type=gt)


def test_group_type_minus_one_is_not_modelled():
    raises("group_type = -1 .* not modelled", X, W, GL, group_type=-1)


@pytest.mark.parametrize("x,w,match", [
    (np.ones((8, 12), np.float16), W, r"weight's K \(16\) must equal x's K \(12\)"),
    (np.ones((2, 8, 16), np.float16), W, "x 2-D"),
    (X, np.ones((16, 4), np.float16), "weight 3-D"),
    (np.ones((16, 8), np.float16).T, np.ones((2, 8, 4), np.float16), "x must not be transposed"),
    (X, np.ones((2, 16, 65536), np.float16), "last dimension as stored is 65536"),
])
def test_split_m_shapes(x, w, match):
    raises(match, x, w, GL)


@pytest.mark.parametrize("x,w,match", [
    (np.ones((4, 8), np.float16), np.ones((8, 5), np.float16), "x must be transposed"),
    (np.ones((8, 4), np.float16).T, np.ones((5, 8), np.float16).T, "weight must not be trans"),
    (np.ones((6, 4), np.float16).T, np.ones((8, 5), np.float16), r"weight's K \(8\) must "),
    (np.ones((8, 4), np.float16).T, np.ones((2, 8, 5), np.float16), "weight 2-D"),
    (np.ones((7, 4), np.float16).T, np.ones((7, 5), np.float16), "exceeds x's K = 7"),
])
def test_split_k_shapes(x, w, match):
    raises(match, x, w, GL, group_type=2)


def test_the_oracle_is_float64_per_group_matmul():
    y = torch_grouped(torch.ones(4, 2, dtype=torch.float64), torch.ones(2, 2, 3,
                                                                        dtype=torch.float64),
                      torch.tensor([1, 4]))["y"]
    assert y.dtype == torch.float64 and y.shape == (4, 3) and float(y[0, 0]) == 2.0
