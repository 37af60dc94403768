"""aclnnMatmul (2-D) on the CATLASS-shaped kernel: the FC layer's three GEMMs and odd shapes
bit for bit against the golden and within the precision standard of torch; layouts of mat2;
float32 through USE_FP16; argument rules; tiling overrides; modes."""

import numpy as np
import pytest
import torch

from npusim import golden, ops
from npusim.dtypes import bfloat16
from npusim.errors import ParamError, TilingError
from op_check import assert_bit_equal, check_op


def torch_matmul(a, b, cube_math_type=1):
    return {"out": a @ b}


def golden_matmul(result):
    return lambda a, b, **params: golden.matmul(a, b, tiling=result.tiling, **params)


def check(a, b, cube_math_type=1, chip="atlas-a2", mode="timed", **options):
    """Bit for bit against the golden; against torch within one fp16 rounding of the result
    plus, per element, 2^-10 (fp16 inputs: the fp32 accumulation; fp32 inputs: their rounding
    to fp16 too) of sum |a||b| (the bound of a dot product that cancels)."""
    params = {"cube_math_type": cube_math_type}
    r = ops.matmul(a, b, chip=chip, mode=mode, **params, **options)
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    atol = (2 ** -10 if a.dtype == np.float16 else 2 ** -9) * float(mag.max(initial=0.0))
    check_op(lambda *x, **o: r, golden_matmul(r), torch_matmul, (a, b), chip=chip,
             params=params, rtol=1e-3, atol=atol)
    return r


def fc(dtype=np.float16, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((32, 2048)).astype(dtype)
    w = (rng.standard_normal((1000, 2048)) * 0.05).astype(dtype)
    dy = rng.standard_normal((32, 1000)).astype(dtype)
    return x, w, dy


def kernels(r):
    return [k["name"] for k in r.stats["kernels"]]


def test_fc_forward_reads_w_transposed_in_place():
    x, w, _ = fc()
    r = check(x, w.T)
    assert r.tiling.layout_b == "column" and kernels(r) == ["MatMul"]
    assert r.outputs["out"].shape == (32, 1000) and r.outputs["out"].dtype == np.float16


def test_fc_grad_input_k_not_a_whole_fractal():
    """dX = dY @ W: K = 1000 (62.5 fractals), mat2 RowMajor."""
    _, w, dy = fc(seed=1)
    r = check(dy, w)
    assert r.tiling.layout_b == "row" and kernels(r) == ["MatMul"]


def test_fc_grad_weight_transposed_self_is_made_contiguous():
    """dW = dY.T @ X: a transposed self goes through the Contiguous kernel."""
    x, _, dy = fc(seed=2)
    r = check(dy.T, x)
    assert kernels(r) == ["Contiguous(self)", "MatMul"]
    plain = ops.matmul(np.ascontiguousarray(dy.T), x)
    assert_bit_equal(r.outputs["out"], plain.outputs["out"])


@pytest.mark.parametrize("m,k,n", [(7, 37, 19), (1, 16, 1), (130, 300, 260), (17, 5, 3)])
@pytest.mark.parametrize("transposed", [False, True])
def test_odd_shapes(m, k, n, transposed):
    rng = np.random.default_rng(m * k + n)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((n, k)).astype(np.float16).T if transposed else \
        rng.standard_normal((k, n)).astype(np.float16)
    check(a, b)


def test_strided_mat2_is_made_contiguous():
    rng = np.random.default_rng(3)
    b = rng.standard_normal((64, 96)).astype(np.float16)[:, ::2]
    r = check(rng.standard_normal((20, 64)).astype(np.float16), b)
    assert kernels(r) == ["Contiguous(mat2)", "MatMul"]


def test_float32_with_use_fp16_casts_around_the_gemm():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((33, 100)).astype(np.float32), \
        rng.standard_normal((100, 50)).astype(np.float32)
    r = check(a, b, cube_math_type=2)
    assert kernels(r) == ["Cast(self)", "Cast(mat2)", "MatMul", "Cast(out)"]
    assert r.outputs["out"].dtype == np.float32


@pytest.mark.parametrize("cmt", [0, 1, 2, 3])
def test_fp16_takes_every_cube_math_type(cmt):
    rng = np.random.default_rng(5)
    check(rng.standard_normal((16, 32)).astype(np.float16),
          rng.standard_normal((32, 16)).astype(np.float16), cube_math_type=cmt)


def test_modes_and_jitter_agree(tmp_path):
    _, w, dy = fc(seed=6)
    timed = ops.matmul(dy, w, tiling={"l1_n": 128})
    functional = ops.matmul(dy, w, tiling={"l1_n": 128}, mode="functional")
    jittered = ops.matmul(dy, w, tiling={"l1_n": 128}, jitter=(3, 40.0))
    assert_bit_equal(functional.outputs["out"], timed.outputs["out"])
    assert_bit_equal(jittered.outputs["out"], timed.outputs["out"])
    assert jittered.cycles > timed.cycles


def test_k_zero_is_zeros_and_empty_is_empty():
    r = ops.matmul(np.ones((3, 0), np.float16), np.ones((0, 4), np.float16))
    assert kernels(r) == ["ZerosLike(out)"] and not r.outputs["out"].any()
    assert r.outputs["out"].shape == (3, 4)
    r = ops.matmul(np.ones((0, 5), np.float16), np.ones((5, 4), np.float16))
    assert r.outputs["out"].shape == (0, 4) and r.cycles == 0


# --- tiling ----------------------------------------------------------------------------------

@pytest.mark.parametrize("override", [{"l1_m": 64}, {"l1_n": 128, "l0_k": 32},
                                      {"block_dim": 3}, {"shuffle_k": False}])
def test_overrides_change_the_schedule(override):
    _, w, dy = fc(seed=7)
    r = check(dy, w, tiling=override)
    for key, value in override.items():
        assert getattr(r.tiling, key) == value


@pytest.mark.parametrize("override,match", [
    ({"l1_m": 100}, "aclnnMatmul .*l1_m = 100; a positive multiple of 16"),
    ({"block_dim": 99}, "aclnnMatmul .*block_dim = 99"),
    ({"k": 64}, "aclnnMatmul .*come from the matrices"),
    ({"l1_m": 512, "l1_n": 512}, "aclnnMatmul .*needs .* bytes of L1, which has 524288"),
])
def test_bad_overrides_say_why(override, match):
    _, w, dy = fc()
    with pytest.raises(TilingError, match=match):
        ops.matmul(dy, w, tiling=override)


# --- argument rules --------------------------------------------------------------------------

A16, B16 = np.ones((4, 8), np.float16), np.ones((8, 2), np.float16)


def raises(match, *args, code=161002, chip="atlas-a2", **kwargs):
    with pytest.raises(ParamError, match=match) as info:
        ops.matmul(*args, chip=chip, **kwargs)
    assert info.value.code == code


@pytest.mark.parametrize("args", [(None, B16), (A16, None)])
def test_missing_is_161001(args):
    raises("is None", *args, code=161001)


@pytest.mark.parametrize("chip", ["atlas-inference"])   # training: test_op_matmul_training.py
def test_products_other_than_a2_are_not_modelled(chip):
    raises(f"not modelled on {chip}.*FixPipe.*modelled products: atlas-a2", A16, B16,
           chip=chip)


@pytest.mark.parametrize("chip,dtype,match", [
    ("atlas-a2", np.float64, "dtype float64 is not supported"),
    ("atlas-a2", np.int32, "dtype int32 is not supported"),
    ("atlas-training", bfloat16, "allowed: float16, float32"),
])
def test_dtypes(chip, dtype, match):
    raises(match, A16.astype(dtype), B16.astype(dtype), chip=chip)


def test_float32_other_than_use_fp16_is_not_modelled_on_a2():
    raises("float32 with cube_math_type = 1 .* not modelled", A16.astype(np.float32),
           B16.astype(np.float32))


@pytest.mark.parametrize("cmt", [0, 3])
def test_float32_keep_dtype_or_hf32_is_refused_on_training(cmt):
    raises("no float32 or HFLOAT32 mode", A16.astype(np.float32), B16.astype(np.float32),
           chip="atlas-training", cube_math_type=cmt)


@pytest.mark.parametrize("cmt", [4, -1, True, 1.0])
def test_bad_cube_math_type(cmt):
    raises("cube_math_type = .*allowed: 0 .KEEP_DTYPE.", A16, B16, cube_math_type=cmt)


def test_mixed_dtypes():
    raises("dtypes must be equal", A16, B16.astype(np.float32))


def test_reduce_dimensions_must_match():
    raises(r"mat2's reduce dimension \(3\) must equal self's \(8\)", A16, np.ones((3, 2),
                                                                              np.float16))


def test_only_2d_is_modelled():
    raises("2-D operands only", np.ones((2, 4, 8), np.float16), B16)


def test_torch_is_used_in_float64():
    """The oracle: float64 matmul of the same inputs (not fp16 torch on CPU)."""
    a = torch.ones(2, 2, dtype=torch.float64)
    assert torch_matmul(a, a)["out"].dtype == torch.float64


@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_bfloat16_on_a2_is_the_bf16_gemm(mode):
    """bf16 operands run the CATLASS-shaped kernel in bf16 (no Cast kernels): bit-exact
    against the golden, within bf16's precision of torch's fp32 product."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((100, 200)).astype(bfloat16)
    b = rng.standard_normal((200, 72)).astype(bfloat16)
    res = ops.matmul(a, b, chip="atlas-a2", mode=mode)
    assert [k["op_type"] for k in res.stats["kernels"]] == ["MatMul"]
    want = golden.matmul(a, b, tiling=res.tiling)["out"]
    assert res.outputs["out"].dtype == a.dtype
    assert np.array_equal(res.outputs["out"].view(np.uint16), want.view(np.uint16))
    ref = torch.from_numpy(a.astype(np.float32)) @ torch.from_numpy(b.astype(np.float32))
    err = np.abs(res.outputs["out"].astype(np.float32) - ref.numpy())
    assert err.max() <= 2 ** -7 * np.abs(ref.numpy()).max()
