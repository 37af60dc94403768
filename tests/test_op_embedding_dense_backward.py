"""aclnnEmbeddingDenseBackward: golden and PyTorch, argument rules, variants, timing, jitter."""

import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import npusim.aclnn as acl
from npusim import golden, ops
from npusim.cases.embedding_dense_backward import emb_indices
from npusim.dtypes import bfloat16
from npusim.errors import (
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    NpusimError,
    ParamError,
    TilingError,
)
from npusim.ops.embedding.tiling import embedding_tiling, max_v2_chunk
from op_check import assert_bit_equal, assert_close

RTOL = {"float32": 1e-4, "float16": 2e-3, "bfloat16": 1.6e-2}
GRAD_DTYPES = {"atlas-a2": ("float32", "float16", "bfloat16"),
               "atlas-training": ("float32", "float16")}
VARIANTS = {"atlas-a2": ("sorted", "deterministic", "small_dim", "v1"),
            "atlas-training": ("v1",)}
SINGLE_WRITER = {("deterministic", False), ("deterministic", True), ("v1", True)}
INDEX_DTYPES = ("int64", "int32", "int16", "int8", "uint8", "bool", "float32", "float16",
                "float64")


def dtype_of(name):
    return bfloat16 if name == "bfloat16" else np.dtype(name)


def torch_reference(grad, indices, num_weights, padding_idx, scale):
    g = torch.from_numpy(np.asarray(grad).astype(np.float64))
    idx = torch.from_numpy(np.trunc(np.asarray(indices).astype(np.float64)).astype(np.int64))
    return torch.ops.aten.embedding_dense_backward(g, idx, num_weights, padding_idx,
                                                   scale).numpy()


def run_and_check(grad, indices, *, num_weights, padding_idx=-1, scale=False,
                  chip="atlas-a2", mode="timed", exact=None, **options):
    """Run; bit-exact against the golden (always in functional mode and for single-writer
    variants, else when ``exact``); within the precision standard of torch in float64."""
    r = ops.embedding_dense_backward(grad, indices, num_weights=num_weights,
                                     padding_idx=padding_idx, scale_grad_by_freq=scale,
                                     chip=chip, mode=mode, **options)
    out = r.outputs["out"]
    assert out.shape == (num_weights, grad.shape[-1]) and out.dtype == grad.dtype
    want = golden.embedding_dense_backward(grad, indices, num_weights=num_weights,
                                           padding_idx=padding_idx, scale_grad_by_freq=scale,
                                           chip=r.chip, tiling=r.tiling)
    if exact is None:
        exact = mode == "functional" or (r.tiling.variant, scale) in SINGLE_WRITER
    if exact:
        assert_bit_equal(out, want, "out")
    ref = torch_reference(grad, indices, num_weights, padding_idx, scale)
    name = "bfloat16" if grad.dtype == bfloat16 else grad.dtype.name
    repeats = max(1, int(np.bincount(np.asarray(indices, np.float64).astype(np.int64)
                                     .reshape(-1)).max()) if indices.size else 1)
    rtol = RTOL[name]
    atol = RTOL[name] * float(np.abs(grad).astype(np.float64).max(initial=0)) * repeats ** 0.5
    assert_close(out, ref, rtol, atol, "out")
    return r


def data(shape, num_weights, *, dtype="float32", dist="zipf", seed=0, integer=False):
    rng = np.random.default_rng(seed)
    rows = int(np.prod(shape[:-1]))
    idx = emb_indices(rng, rows, num_weights, dist).reshape(shape[:-1])
    g = rng.integers(-8, 9, shape) if integer else rng.standard_normal(shape)
    return g.astype(dtype_of(dtype)), idx


# --- the seed example, variants, dtypes --------------------------------------------------

def test_seed_example(chip_name):
    """grad [[1,2,3],[4,5,6]], indices [1,2], numWeights 4, paddingIdx 0."""
    grad = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    r = run_and_check(grad, np.array([1, 2], np.int64), num_weights=4, padding_idx=0,
                      chip=chip_name)
    assert r.outputs["out"].tolist() == [[0, 0, 0], [1, 2, 3], [4, 5, 6], [0, 0, 0]]
    assert r.cycles > 0


def test_seed_example_aclnn(chip_name):
    """The seed's C example through npusim.aclnn, with its statuses."""
    acl.aclrtSetDevice(0, chip=chip_name)
    try:
        grad = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
        out = np.zeros((4, 3), np.float32)
        ret, size, executor = acl.aclnnEmbeddingDenseBackwardGetWorkspaceSize(
            acl.Tensor(grad), acl.Tensor(np.array([1, 2], np.int64)), 4, 0, False,
            acl.Tensor(out))
        assert ret == acl.ACL_SUCCESS
        ret, workspace = acl.aclrtMalloc(size) if size else (acl.ACL_SUCCESS, None)
        _, stream = acl.aclrtCreateStream()
        assert acl.aclnnEmbeddingDenseBackward(workspace, size, executor, stream) == 0
        assert acl.aclrtSynchronizeStream(stream) == acl.ACL_SUCCESS
        assert out.tolist() == [[0, 0, 0], [1, 2, 3], [4, 5, 6], [0, 0, 0]]
        ret, _, _ = acl.aclnnEmbeddingDenseBackwardGetWorkspaceSize(
            None, acl.Tensor(np.array([1, 2])), 4, 0, False, acl.Tensor(out))
        assert ret == ACLNN_ERR_PARAM_NULLPTR
        ret, _, _ = acl.aclnnEmbeddingDenseBackwardGetWorkspaceSize(
            acl.Tensor(grad), acl.Tensor(np.array([1, 2])), 5, 0, False, acl.Tensor(out))
        assert ret == ACLNN_ERR_PARAM_INVALID and "out has shape" in acl.aclGetRecentErrMsg()
        ret, _, _ = acl.aclnnEmbeddingDenseBackwardGetWorkspaceSize(
            acl.Tensor(grad), acl.Tensor(np.array([1, 2])), 4, 0, False,
            acl.Tensor(out.astype(np.float16)))
        assert ret == ACLNN_ERR_PARAM_INVALID and "differs from grad" in acl.aclGetRecentErrMsg()
        ret, _, _ = acl.aclnnEmbeddingDenseBackwardGetWorkspaceSize(
            acl.Tensor(grad), acl.Tensor(np.array([1, 2])), 4, 0, False, None)
        assert ret == ACLNN_ERR_PARAM_NULLPTR
    finally:
        acl.aclrtSetDevice(0)


VARIANT_CASES = [(chip, v, dt, scale) for chip, vs in VARIANTS.items() for v in vs
                 for dt in GRAD_DTYPES[chip] for scale in (False, True)]


@pytest.mark.parametrize("chip,variant,dtype,scale", VARIANT_CASES)
def test_variants_against_golden_and_torch(chip, variant, dtype, scale):
    """Zipf-skewed indices (long runs, straddling cores), padding hit, flushes of 10 rows."""
    grad, idx = data((3, 70, 24), 13, dtype=dtype, seed=len(variant))
    for mode in ("functional", "timed"):
        run_and_check(grad, idx, num_weights=13, padding_idx=int(idx.flat[5]), scale=scale,
                      chip=chip, mode=mode, variant=variant, tiling={"block_dim": 5})


@pytest.mark.parametrize("chip", ["atlas-a2", "atlas-training"])
def test_both_modes_identical_when_sums_are_exact(chip):
    """Integer grads sum exactly in any order: timed (time-ordered atomics) and functional
    (core order) give the same bits, and the golden's."""
    grad, idx = data((300, 40), 9, integer=True, seed=3)
    for variant in VARIANTS[chip]:
        outs = [run_and_check(grad, idx, num_weights=9, chip=chip, mode=mode, exact=True,
                              variant=variant).outputs["out"] for mode in ("timed",
                                                                           "functional")]
        assert_bit_equal(outs[0], outs[1], variant)


@pytest.mark.parametrize("chip", ["atlas-a2", "atlas-training"])
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_every_index_dtype(chip, index_dtype):
    """Each dtype the seed lists, cast as aclnn casts it (floats truncate, bool is 0/1)."""
    rng = np.random.default_rng(1)
    n = 2 if index_dtype == "bool" else 7
    raw = rng.integers(0, n, 50)
    idx = (raw + 0.75).astype(index_dtype) if index_dtype.startswith("float") else \
        raw.astype(index_dtype)
    grad = rng.standard_normal((50, 16)).astype(np.float32)
    r = run_and_check(grad, idx, num_weights=n, chip=chip)
    if index_dtype not in ("int32", "float64") and not (chip == "atlas-training"
                                                       and index_dtype == "int64"):
        assert any(k["name"] == "Cast(indices)" for k in r.stats["kernels"])


@pytest.mark.parametrize("ndim", range(2, 9))
def test_grad_of_two_to_eight_dims(ndim, chip_name):
    shape = (2,) * (ndim - 1) + (9,)
    grad, idx = data(shape, 5, seed=ndim, dist="uniform")
    run_and_check(grad, idx, num_weights=5, chip=chip_name)
    run_and_check(grad, idx.reshape(-1), num_weights=5, chip=chip_name)


def test_strided_grad_runs_contiguous_first(chip_name):
    grad, idx = data((40, 32), 6, seed=4)
    r = run_and_check(grad[:, ::2], idx, num_weights=6, chip=chip_name)
    assert r.stats["kernels"][0]["name"] == "ZerosLike(out)"
    assert any(k["name"] == "Contiguous(grad)" for k in r.stats["kernels"])


def test_a2_default_kernels_and_chunks():
    """D > 512 sorts (the Sort kernel runs) and walks D in chunks; D <= 512 is small-dim."""
    grad, idx = data((40, 600), 30, seed=5)
    r = run_and_check(grad, idx, num_weights=30, tiling={"dim_chunk": 256})
    assert r.tiling.variant == "sorted" and r.tiling.tiling_key == 0
    assert [k["name"] for k in r.stats["kernels"]] == [
        "ZerosLike(out)", "Cast(indices)", "Sort", "EmbeddingDenseGradV2"]
    grad, idx = data((40, 64), 30, seed=5, dtype="bfloat16")
    r = run_and_check(grad, idx, num_weights=30, scale=True)
    assert r.tiling.variant == "small_dim" and r.tiling.tiling_key == 101
    names = [k["name"] for k in r.stats["kernels"]]
    assert names[-2:] == ["EmbeddingDenseGradV2Scale", "Cast(out)"] and "Cast(grad)" in names
    assert r.workspace_bytes == (16 << 20) + 30 * 4


def test_out_of_range_index_is_a_clear_error(chip_name):
    grad = np.ones((3, 4), np.float32)
    for bad in ([0, 4, 1], [0, -1, 2], [0.5, 7.9, 1.0]):
        with pytest.raises(ParamError, match=r"outside \[0, numWeights\)") as err:
            ops.embedding_dense_backward(grad, np.array(bad), num_weights=4, chip=chip_name)
        assert err.value.code == ACLNN_ERR_PARAM_INVALID


def test_empty_grad_gives_zeros(chip_name):
    r = ops.embedding_dense_backward(np.zeros((0, 8), np.float32), np.zeros(0, np.int64),
                                     num_weights=3, chip=chip_name)
    assert r.outputs["out"].tolist() == [[0.0] * 8] * 3


@pytest.mark.parametrize("rows", [0, 5])
def test_embedding_dim_0_gives_the_empty_output_as_torch(chip_name, rows):
    """No tiling field the user never set is blamed: torch returns (numWeights, 0)."""
    grad, idx = np.zeros((rows, 0), np.float32), np.arange(rows) % 3
    r = ops.embedding_dense_backward(grad, idx, num_weights=3, chip=chip_name)
    want = torch_reference(grad, idx, 3, -1, False)
    assert r.outputs["out"].shape == want.shape == (3, 0)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, 1e30, -1e300])
def test_a_float_index_that_is_not_finite_or_too_big_says_so(chip_name, bad):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ParamError) as err:
            ops.embedding_dense_backward(np.ones((2, 4), np.float32), np.array([1.0, bad]),
                                         num_weights=4, chip=chip_name)
    text = str(err.value)
    assert f"indices[1] = {bad!r}" in text and "-9223372036854775808" not in text, text
    assert ("is not finite" in text) == (not np.isfinite(bad)), text


# --- argument rules, tiling ----------------------------------------------------------------

G, IDX = np.ones((4, 8), np.float32), np.arange(4)
BAD_API = {
    "grad None": (dict(grad=None), 161001, "grad is None"),
    "indices None": (dict(indices=None), 161001, "indices is None"),
    "grad int32": (dict(grad=np.ones((4, 8), np.int32)), 161002, "grad dtype int32"),
    "grad float64": (dict(grad=np.ones((4, 8))), 161002, "grad dtype float64"),
    "bf16 on training": (dict(grad=np.ones((4, 8), bfloat16), chip="atlas-training"), 161002,
                         "not supported on atlas-training"),
    "indices uint16": (dict(indices=np.arange(4, dtype=np.uint16)), 161002,
                       "indices dtype uint16"),
    "grad 1-D": (dict(grad=np.ones(8, np.float32), indices=np.arange(1)), 161002,
                 "grad has 1 dims"),
    "grad 9-D": (dict(grad=np.ones((1,) * 8 + (2,), np.float32), indices=np.zeros(
        (1,) * 8, np.int64)), 161002, "grad has 9 dims"),
    "indices 0-D": (dict(grad=np.ones((1, 8), np.float32), indices=np.int64(0)), 161002,
                    "indices has 0 dims"),
    "indices 9-D": (dict(grad=np.ones((1, 8), np.float32), indices=np.zeros((1,) * 9,
                                                                             np.int64)),
                    161002, "indices has 9 dims"),
    "rows differ": (dict(indices=np.arange(3)), 161002, "has 4 rows"),
    "num_weights 0": (dict(num_weights=0), 161002, "numWeights = 0"),
    "num_weights float": (dict(num_weights=4.0), 161002, "numWeights = 4.0"),
    "num_weights bool": (dict(num_weights=True), 161002, "numWeights = True"),
    "padding str": (dict(padding_idx="0"), 161002, "paddingIdx = '0'"),
    "scale int": (dict(scale=1), 161002, "scaleGradByFreq = 1"),
    "index too big": (dict(indices=np.array([0, 1, 2, 9])), 161002, "indices[3] = 9"),
    "index negative": (dict(indices=np.array([0, -2, 2, 1])), 161002, "indices[1] = -2"),
    "index NaN-free float too big": (dict(indices=np.array([0, 1, 2, 8.5])), 161002,
                                     "as an index: 8"),
    "grad a string": (dict(grad="grad"), 161002, "npusim does not know"),
    "training scale dim limit": (dict(grad=np.ones((4, 5100), np.float32), scale=True,
                                      indices=np.arange(4, dtype=np.int32),
                                      chip="atlas-training"), 161002, "must be below"),
    "training scale dim limit int64": (dict(grad=np.ones((4, 9100), np.float32), scale=True,
                                            chip="atlas-training"), 161002, "int64 indices"),
}


@pytest.mark.parametrize("case", list(BAD_API))
def test_bad_arguments(case):
    args, code, message = BAD_API[case]
    call = dict(grad=G, indices=IDX, num_weights=4, padding_idx=-1, scale=False,
                chip="atlas-a2") | args
    with pytest.raises(ParamError) as err:
        ops.embedding_dense_backward(call["grad"], call["indices"],
                                     num_weights=call["num_weights"],
                                     padding_idx=call["padding_idx"],
                                     scale_grad_by_freq=call["scale"], chip=call["chip"])
    assert err.value.code == code
    assert message in str(err.value)


def test_training_scale_limit_follows_the_seed():
    """D < (180192 - countsSize * 4) / 36 with int32 indices: 5000 fits, 5100 does not."""
    grad, idx = np.ones((4, 5000), np.float32), np.arange(4, dtype=np.int32)
    want = torch.ones(4, 5000)       # each row once: its gradient row, scaled by 1 / 1
    r = ops.embedding_dense_backward(grad, idx, num_weights=4, scale_grad_by_freq=True,
                                     chip="atlas-training", mode="functional")
    assert np.array_equal(r.outputs["out"], want.numpy())
    with pytest.raises(ParamError, match=r"embedding dim 5100 with scaleGradByFreq") as err:
        ops.embedding_dense_backward(np.ones((4, 5100), np.float32), idx, num_weights=4,
                                     scale_grad_by_freq=True, chip="atlas-training",
                                     mode="functional")
    assert err.value.code == 161002 and "5004.9" in str(err.value)
    r = ops.embedding_dense_backward(np.ones((4, 5100), np.float32), idx, num_weights=4,
                                     chip="atlas-training", mode="functional")   # no scale
    assert r.outputs["out"].shape == (4, 5100) and np.all(r.outputs["out"] == 1.0)


BAD_TILING = {
    "unknown field": ({"tile": 3}, "unknown tiling field 'tile'"),
    "derived field": ({"rows_per_core": 3}, "derived from the shape"),
    "variant of the other chip": ({"variant": "sorted"}, "not a kernel of atlas-training"),
    "no such variant": ({"variant": "fast"}, "not a kernel of"),
    "block_dim 0": ({"block_dim": 0}, "block_dim = 0"),
    "block_dim too many": ({"block_dim": 99}, "block_dim = 99"),
    "dim_chunk over D": ({"dim_chunk": 99}, "dim_chunk = 99"),
    "batch_rows too many": ({"batch_rows": 10 ** 6}, "batch_rows = 1000000"),
    "flush_rows 0": ({"flush_rows": 0}, "flush_rows = 0"),
    "block_dim text": ({"block_dim": "4"}, "an integer is required"),
}


@pytest.mark.parametrize("case", list(BAD_TILING))
def test_bad_tiling(case):
    overrides, message = BAD_TILING[case]
    chip = "atlas-training" if "other chip" in case or "batch" in case else "atlas-a2"
    with pytest.raises(TilingError, match=message):
        ops.embedding_dense_backward(G, IDX, num_weights=4, chip=chip, tiling=overrides)


def test_tiling_derives_what_the_user_did_not_set():
    import npusim

    a2 = npusim.load_chip("atlas-a2")
    t = embedding_tiling(a2, rows=1000, dim=8000, num_weights=50, scale=False,
                         overrides={"block_dim": 7})
    assert (t.block_dim, t.rows_per_core, t.big_core_num) == (7, 142, 6)
    assert t.dim_chunk == max_v2_chunk(a2) == 14656 // 2 or t.dim_chunk == 8000
    t = embedding_tiling(a2, rows=1000, dim=64, num_weights=50, scale=False,
                         overrides={"variant": "sorted"})
    assert t.variant == "sorted" and t.block_dim == 48
    with pytest.raises(TilingError, match="small_dim' needs an embedding dim"):
        embedding_tiling(a2, rows=10, dim=600, num_weights=5, scale=False,
                         overrides={"variant": "small_dim"})


def test_numerics_off_is_refused():
    with pytest.raises(NpusimError, match="numerics=False is not possible"):
        ops.embedding_dense_backward(G, IDX, num_weights=4, numerics=False)


def test_variant_and_tiling_must_agree():
    with pytest.raises(TilingError, match="disagree"):
        ops.embedding_dense_backward(G, IDX, num_weights=4, variant="sorted",
                                     tiling={"variant": "v1"})


BAD_CLI = {
    "num_weights 0": (["--param", "num_weights=0"], "must be at least 1"),
    "num_weights text": (["--param", "num_weights=many"], "num_weights='many'"),
    "indices distribution": (["--param", "indices=normal"], "uniform, zipf"),
    "index dtype": (["--param", "index_dtype=uint16"], "one of int64"),
    "variant": (["--param", "variant=fast"], "one of sorted"),
    "variant of the other chip": (["--chip", "atlas-training", "--param", "variant=sorted"],
                                  "not a kernel of atlas-training"),
    "scale text": (["--param", "scale_grad_by_freq=maybe"], "true or false"),
    "padding text": (["--param", "padding_idx=x"], "padding_idx='x'"),
    "bf16 on training": (["--chip", "atlas-training", "--dtype", "bf16"],
                         "not supported on atlas-training"),
    "1-D shape": (["--shape", "64"], "TOKENS x DIM"),
    "tiling field": (["--tiling", "tile_length=4"], "unknown tiling field 'tile_length'"),
    "tiling value": (["--tiling", "dim_chunk=0"], "dim_chunk = 0"),
    "training scale dim": (["--chip", "atlas-training", "--shape", "8x9100", "--param",
                            "scale_grad_by_freq=true"], "must be below"),
    "unknown param": (["--param", "topk=2"], "no parameter 'topk'"),
}


@pytest.mark.parametrize("case", list(BAD_CLI))
def test_bad_cli_input_is_one_line_and_no_files(case, tmp_path):
    args, message = BAD_CLI[case]
    shape = [] if "--shape" in args else ["--shape", "16x32"]
    out = subprocess.run([sys.executable, "-m", "npusim", "run", "embedding_dense_backward",
                          *shape, "--param", "num_weights=50", *args, "--out",
                          str(tmp_path / "out")], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], out.stderr
    assert list(tmp_path.iterdir()) == []


# --- hypothesis ----------------------------------------------------------------------------

@settings(max_examples=15, deadline=None)
@given(chip=st.sampled_from(["atlas-a2", "atlas-training"]),
       lead=st.lists(st.integers(1, 5), min_size=1, max_size=3), dim=st.integers(1, 40),
       num_weights=st.integers(1, 40), dist=st.sampled_from(["uniform", "zipf"]),
       pad=st.integers(-1, 6), scale=st.booleans(), index_dtype=st.sampled_from(INDEX_DTYPES),
       dtype=st.sampled_from(["float32", "float16"]), seed=st.integers(0, 99))
def test_hypothesis_against_torch(chip, lead, dim, num_weights, dist, pad, scale, index_dtype,
                                  dtype, seed):
    grad, idx = data((*lead, dim), num_weights, dtype=dtype, dist=dist, seed=seed)
    if index_dtype == "bool":
        idx = idx % min(num_weights, 2)
    info_max = np.iinfo(index_dtype).max if index_dtype not in ("bool",) and \
        not index_dtype.startswith("float") else 2048
    if idx.max(initial=0) > info_max:
        idx = idx % (info_max + 1)
    run_and_check(grad, idx.astype(index_dtype), num_weights=num_weights, padding_idx=pad,
                  scale=scale, chip=chip)


# --- timing, jitter ------------------------------------------------------------------------

def test_sorted_beats_per_row_atomics_when_indices_repeat():
    """4096 rows into 4 hot indices: v1's per-row atomic adds into the same 4 rows serialise
    at L2, while the sorted kernel sums runs in UB and flushes one row in 11, so it wins.
    Spread over 4000 rows there is little to merge: v1's batched copies beat the sorted
    kernel's per-row scalar reads. The deterministic kernel gives each hot run to one core."""
    rng = np.random.default_rng(0)
    grad = rng.standard_normal((4096, 1024)).astype(np.float32)
    cycles = {}
    for name, idx in (("hot", rng.integers(0, 4, 4096)), ("spread", rng.integers(0, 4000,
                                                                                 4096))):
        for variant in ("sorted", "v1", "deterministic"):
            if name == "spread" and variant == "deterministic":
                continue
            r = ops.embedding_dense_backward(grad, idx, num_weights=4000, variant=variant,
                                             trace=False, sanitize=False)
            cycles[name, variant] = r.stats["kernels"][-1]["cycles"]
    assert cycles["hot", "sorted"] < cycles["hot", "v1"] / 1.3
    assert cycles["spread", "v1"] < cycles["spread", "sorted"]
    assert cycles["hot", "v1"] > 2 * cycles["spread", "v1"]
    assert cycles["hot", "deterministic"] > 5 * cycles["hot", "sorted"]


def test_never_below_the_hbm_floor():
    """8192 x 4096 fp32 into 32000 rows (the issue's case): zeroing out, reading grad and
    writing the touched rows all cross HBM, so the time is never below their sum over the
    HBM bandwidth."""
    rng = np.random.default_rng(0)
    rows, dim, nw = 8192, 4096, 32000
    grad = rng.standard_normal((rows, dim)).astype(np.float32)
    idx = emb_indices(rng, rows, nw, "uniform")
    r = ops.embedding_dense_backward(grad, idx, num_weights=nw, trace=False, sanitize=False)
    touched = len(np.unique(idx))
    floor_bytes = nw * dim * 4 + rows * dim * 4 + touched * dim * 4
    floor_us = floor_bytes / r.chip.hbm_bytes_per_s * 1e6
    assert r.tiling.variant == "sorted"
    assert r.time_us >= floor_us
    assert r.time_us < 3 * floor_us


@pytest.mark.parametrize("chip,variant,scale", [("atlas-a2", "deterministic", False),
                                                ("atlas-a2", "deterministic", True),
                                                ("atlas-training", "v1", True)])
def test_single_writer_variants_are_bit_identical_under_jitter(chip, variant, scale):
    grad, idx = data((400, 48), 7, seed=8)
    plain = run_and_check(grad, idx, num_weights=7, scale=scale, chip=chip, variant=variant,
                          exact=True)
    for seed in (1, 2):
        jittered = ops.embedding_dense_backward(grad, idx, num_weights=7,
                                                scale_grad_by_freq=scale, chip=chip,
                                                variant=variant, jitter=(seed, 50.0))
        assert jittered.cycles != plain.cycles
        assert_bit_equal(jittered.outputs["out"], plain.outputs["out"], "out")


def test_atomic_golden_bounds_the_timed_order():
    """For npusim run: the golden of an atomic variant is an AtomicSum whose bound holds the
    timed result; a wrong kernel (a row off by one grad row) is outside it; the single-writer
    variants stay plain arrays, checked bit for bit."""
    from npusim.golden.atomic import AtomicSum

    grad, idx = data((3, 70, 24), 13, seed=2)
    r = ops.embedding_dense_backward(grad, idx, num_weights=13, variant="sorted",
                                     tiling={"block_dim": 7})
    want = golden.embedding_dense_backward(grad, idx, num_weights=13, chip=r.chip,
                                           tiling=r.tiling, atomic=True)
    assert isinstance(want, AtomicSum) and want.bound.max() > 0
    assert want.within(r.outputs["out"]).all()
    wrong = r.outputs["out"].copy()
    wrong[int(idx.flat[0])] += grad.reshape(-1, 24)[1]
    assert not want.within(wrong).all()
    det = golden.embedding_dense_backward(grad, idx, num_weights=13, variant="deterministic",
                                          atomic=True)
    assert isinstance(det, np.ndarray)


@pytest.mark.parametrize("rows,chunk,window", [(300, 64, 16), (777, 32, 8), (500, 128, 40)])
def test_sort_beyond_one_ub_chunks_and_merges(rows, chunk, window):
    """More keys than ``sort_chunk``: chunk sorts then merge passes (ties across windows and
    runs, odd run counts); the deterministic kernel's bits depend on the exact stable order."""
    grad, idx = data((rows, 520), 5 if rows == 777 else 60, seed=rows)
    tiling = {"sort_chunk": chunk, "merge_window": window}
    for mode in ("timed", "functional"):
        r = run_and_check(grad, idx, num_weights=int(idx.max()) + 1, mode=mode,
                          variant="deterministic", tiling=tiling)
    names = [k["name"] for k in r.stats["kernels"]]
    assert "Sort(chunks)" in names and f"Sort(merge {chunk}+{chunk})" in names


def test_bad_sort_tiling():
    grad, idx = data((40, 600), 5)
    for overrides, message in (({"sort_chunk": 40}, "sort_chunk = 40"),
                               ({"sort_chunk": 1 << 20}, "sort_chunk = 1048576"),
                               ({"merge_window": 4}, "merge_window = 4")):
        with pytest.raises(TilingError, match=message):
            ops.embedding_dense_backward(grad, idx, num_weights=5, tiling=overrides)


def test_small_dim_rows_split_as_cann_the_last_core_takes_the_rest():
    """CANN's Tiling4SmallDim (embedding_dense_grad_v2_tiling.cpp): formerCopyRow =
    gradRow / coreNum on every core, tailCopyRow = gradRow - formerCopyRow * (coreNum - 1) on
    the last (kernels.md §4(c))."""
    from npusim.chip import load_chip

    t = embedding_tiling(load_chip("atlas-a2"), rows=100, dim=16, num_weights=50, scale=False)
    assert t.variant == "small_dim" and t.block_dim == 48
    split = [t.core_rows(c) for c in range(t.block_dim)]
    assert split[:47] == [(2 * c, 2) for c in range(47)] and split[47] == (94, 6)
    grad = np.random.default_rng(0).standard_normal((100, 16)).astype(np.float32)
    idx = np.random.default_rng(1).integers(0, 50, 100)
    r = ops.embedding_dense_backward(grad, idx, num_weights=50)
    assert_close(r.outputs["out"], torch_reference(grad, idx, 50, -1, False), 1e-5, 1e-6)


def test_nan_and_inf_leave_the_finite_columns_their_order_bound():
    """A row whose partials carry NaN or inf in one column: the other columns are still held
    to the summation-order bound (fuzzer seed 141442: the row's bound was NaN, so seven finite
    elements one fp32 step apart were called a mismatch)."""
    from npusim.cases import find_case
    from npusim.cases.run import check_outputs

    rng = np.random.default_rng(5)
    grad = rng.standard_normal((17, 15)).astype(np.float32)
    grad[2, 6], grad[3, 11], grad[14, 6] = np.inf, np.nan, -np.inf
    indices = np.array([1, 1, 2, 2, 1, 0, 1, 0, 2, 1, 1, 2, 0, 2, 0, 1, 1])
    kwargs = {"num_weights": 3, "padding_idx": -1, "scale_grad_by_freq": False}
    result = ops.embedding_dense_backward(grad, indices, **kwargs, chip="atlas-a2")
    checks = check_outputs(find_case("embedding_dense_backward"), (grad, indices), kwargs,
                           result)
    assert all(ok for _, ok, _ in checks), checks
    out = result.outputs["out"]
    assert np.isnan(out[2, 11]) and out[2, 6] == np.inf and out[0, 6] == -np.inf
    assert np.isfinite(out[1]).all()
