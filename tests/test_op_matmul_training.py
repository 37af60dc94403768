"""aclnnMatmul (2-D) on the Atlas training series: CANN's TransData + MatMulV2 route (the FC
layer's three GEMMs, in place transposes, odd shapes, the ND route of aligned fp16 shapes,
float32 through fp16 in / fp32 out) bit for bit against the golden and within the precision
standard of torch; argument rules; tiling overrides; modes."""

import numpy as np
import pytest
from test_op_matmul import check, fc, kernels

from npusim import ops
from npusim.dtypes import bfloat16
from npusim.errors import ParamError, TilingError
from op_check import assert_bit_equal

CHIP = "atlas-training"
NZ_ROUTE = ["TransData(self)", "TransData(mat2)", "MatMulV2", "TransData(out)"]


def run(a, b, **options):
    return check(a, b, chip=CHIP, **options)


def test_fc_forward_reads_w_transposed_in_place():
    x, w, _ = fc()
    r = run(x, w.T)
    assert kernels(r) == NZ_ROUTE
    assert r.tiling.trans_b and not r.tiling.trans_a and r.tiling.in_format == "NZ"
    assert r.outputs["out"].shape == (32, 1000) and r.outputs["out"].dtype == np.float16


def test_fc_grad_input():
    """dX = dY @ W: K = 1000 (62.5 fractals), mat2 plain."""
    _, w, dy = fc(seed=1)
    r = run(dy, w)
    assert kernels(r) == NZ_ROUTE and not r.tiling.trans_b


def test_fc_grad_weight_reads_dy_transposed_in_place():
    """dW = dY.T @ X: no Contiguous kernel, the transposed self loads with the transpose."""
    x, _, dy = fc(seed=2)
    r = run(dy.T, x)
    assert kernels(r) == NZ_ROUTE and r.tiling.trans_a
    plain = ops.matmul(np.ascontiguousarray(dy.T), x, chip=CHIP)
    assert kernels(plain) == NZ_ROUTE and not plain.tiling.trans_a
    assert_bit_equal(r.outputs["out"], plain.outputs["out"])


@pytest.mark.parametrize("m,k,n", [(7, 37, 19), (1, 15, 2), (130, 300, 260), (17, 5, 3),
                                   (33, 100, 50)])
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, True), (False, True)])
def test_odd_shapes(m, k, n, trans_a, trans_b):
    rng = np.random.default_rng(m * k + n)
    a = rng.standard_normal((k, m)).astype(np.float16).T if trans_a else \
        rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((n, k)).astype(np.float16).T if trans_b else \
        rng.standard_normal((k, n)).astype(np.float16)
    r = run(a, b)
    assert kernels(r) == NZ_ROUTE


@pytest.mark.parametrize("trans_b", [False, True])
def test_aligned_fp16_runs_matmul_on_nd(trans_b):
    rng = np.random.default_rng(8)
    a = rng.standard_normal((48, 96)).astype(np.float16)
    b = rng.standard_normal((64, 96)).astype(np.float16).T if trans_b else \
        rng.standard_normal((96, 64)).astype(np.float16)
    r = run(a, b)
    assert kernels(r) == ["MatMulV2"] and r.tiling.in_format == "ND"


def test_strided_mat2_is_made_contiguous():
    rng = np.random.default_rng(3)
    b = rng.standard_normal((64, 96)).astype(np.float16)[:, ::2]
    r = run(rng.standard_normal((20, 64)).astype(np.float16), b)
    assert kernels(r) == ["Contiguous(mat2)", *NZ_ROUTE]


@pytest.mark.parametrize("cmt", [1, 2])
def test_float32_is_fp16_in_fp32_out(cmt):
    """No Cast of the result: MatMulV2 writes fp32 (MatMulNzFp162Fp32)."""
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((33, 100)).astype(np.float32), \
        rng.standard_normal((100, 50)).astype(np.float32)
    r = run(a, b, cube_math_type=cmt)
    assert kernels(r) == ["Cast(self)", "Cast(mat2)", *NZ_ROUTE]
    assert r.outputs["out"].dtype == np.float32 and r.tiling.out_dtype == "float32"


def test_float32_aligned_still_takes_nz():
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal((32, 64)).astype(np.float32), \
        rng.standard_normal((64, 32)).astype(np.float32)
    r = run(a, b)
    assert kernels(r) == ["Cast(self)", "Cast(mat2)", *NZ_ROUTE]


SPLIT_ROUTE = ["TransData(self)", "TransData(mat2)", "MemSet(out.nz)", "MatMulV2",
               "TransData(out)", "Cast(out)"]


@pytest.mark.parametrize("m,k,n,trans_b", [(20, 2000, 30, True), (16, 512, 32, False),
                                           (1, 15, 1, False)])
def test_split_k_route(m, k, n, trans_b):
    """K >= 8 max(M, N): MatMulV2 writes fp32 NZ, K cut across cores that add atomically into
    the output MemSet zeroed; TransData in fp32, then Cast (the golden: any landing order)."""
    rng = np.random.default_rng(k)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((n, k)).astype(np.float16).T if trans_b else \
        rng.standard_normal((k, n)).astype(np.float16)
    r = run(a, b)
    assert r.tiling.split_k and r.tiling.out_dtype == "float32" and r.tiling.out_format == "NZ"
    parts, nd = r.tiling.k_parts, r.tiling.in_format == "ND"   # ND: 16x512x32, aligned
    assert nd == ((m, k, n) == (16, 512, 32))
    assert kernels(r) == [x for x in SPLIT_ROUTE if not (x.startswith("MemSet") and parts == 1
                                                         or x[10:14] in ("self", "mat2") and nd)]
    if (m, k, n) == (20, 2000, 30):
        assert parts == 8 and r.tiling.block_dim == 32


def test_split_k_parts_override_and_fp32():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((20, 700)).astype(np.float32)
    b = rng.standard_normal((700, 40)).astype(np.float32)
    r = run(a, b, tiling={"k_parts": 3})
    assert r.tiling.k_parts == 3 and r.outputs["out"].dtype == np.float32
    assert kernels(r) == ["Cast(self)", "Cast(mat2)", *SPLIT_ROUTE[:-1]]


def test_k_parts_only_on_the_split_k_route():
    x, w, _ = fc()
    with pytest.raises(TilingError, match=r"k_parts = 2; 1-1 .*split-K route only"):
        ops.matmul(x, w.T, chip=CHIP, tiling={"k_parts": 2})


def test_modes_and_jitter_agree():
    _, w, dy = fc(seed=6)
    timed = ops.matmul(dy, w, chip=CHIP)
    functional = ops.matmul(dy, w, chip=CHIP, mode="functional")
    jittered = ops.matmul(dy, w, chip=CHIP, jitter=(3, 40.0))
    assert_bit_equal(functional.outputs["out"], timed.outputs["out"])
    assert_bit_equal(jittered.outputs["out"], timed.outputs["out"])
    assert jittered.cycles > timed.cycles


def test_k_zero_is_zeros_and_empty_is_empty():
    r = ops.matmul(np.ones((3, 0), np.float16), np.ones((0, 4), np.float16), chip=CHIP)
    assert kernels(r) == ["ZerosLike(out)"] and not r.outputs["out"].any()
    r = ops.matmul(np.ones((0, 5), np.float16), np.ones((5, 4), np.float16), chip=CHIP)
    assert r.outputs["out"].shape == (0, 4) and r.cycles == 0


# --- tiling ----------------------------------------------------------------------------------

@pytest.mark.parametrize("override", [{"base_m": 16, "base_n": 64}, {"base_k": 32, "l1_k": 64},
                                      {"block_m": 1, "block_n": 3}, {"base_n": 32}])
def test_overrides_change_the_schedule(override):
    x, w, dy = fc(seed=7)
    r = run(dy.T[:200], x[:, :300], tiling=override)
    for key, value in override.items():
        assert getattr(r.tiling, key) == value


@pytest.mark.parametrize("override,match", [
    ({"base_m": 100}, r"MatMulV2.*base_m = 100; a positive multiple of 16"),
    ({"block_m": 99}, r"MatMulV2.*block_m = 99"),
    ({"block_m": 2, "block_n": 63}, r"MatMulV2.*2 x 63 x 1 cores"),
    ({"k": 64}, r"MatMulV2.*come from the matrices"),
    ({"base_k": 64, "l1_k": 96}, r"l1_k = 96 is not a multiple of base_k = 64"),
    ({"base_m": 256, "base_n": 256, "base_k": 16, "l1_k": 16},
     r"MatMulV2.*bytes of L0C, which has 262144"),
])
def test_bad_overrides_say_why(override, match):
    x, w, _ = fc()
    with pytest.raises(TilingError, match=match):
        ops.matmul(x, w.T, chip=CHIP, tiling=override)


# --- argument rules on the training series --------------------------------------------------

A16, B16 = np.ones((4, 8), np.float16), np.ones((8, 2), np.float16)


def raises(match, *args, code=161002, **kwargs):
    with pytest.raises(ParamError, match=match) as info:
        ops.matmul(*args, chip=CHIP, **kwargs)
    assert info.value.code == code


@pytest.mark.parametrize("args", [(None, B16), (A16, None)])
def test_missing_is_161001(args):
    raises("is None", *args, code=161001)


def test_bfloat16_is_refused_as_documented():
    raises("dtype bfloat16 is not supported on atlas-training .*allowed: float16, float32",
           A16.astype(bfloat16), B16.astype(bfloat16))


@pytest.mark.parametrize("cmt", [0, 3])
def test_float32_keep_dtype_or_hf32_is_refused(cmt):
    raises("no float32 or HFLOAT32 mode", A16.astype(np.float32), B16.astype(np.float32),
           cube_math_type=cmt)


def test_reduce_dimensions_must_match():
    raises(r"mat2's reduce dimension \(3\) must equal self's \(8\)", A16,
           np.ones((3, 2), np.float16))


def test_inference_series_is_not_modelled():
    with pytest.raises(ParamError, match="not modelled on atlas-inference") as info:
        ops.matmul(A16, B16, chip="atlas-inference")
    assert info.value.code == 161002
