"""ConvolutionBackward on the Atlas inference series (Ascend 310P3): the seed's rules for the
product, the op sequence CANN runs there, bit-exact goldens, PyTorch within the precision
standard, and timing that respects the LPDDR4X roofline and the 8-core cube peak."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cli import assert_one_line_error
from test_cli import npusim as run_cli
from test_op_convolution_backward import (
    CASES,
    check,
    check_seed_example,
    draw_case,
    make_case,
    no_split,
    params,
    torch_grads,
)

import npusim
from npusim import ops
from npusim.errors import ParamError
from op_check import assert_bit_equal, assert_close

CHIP = "atlas-inference"
SEQUENCE = ["TransData(gradOutput.5hd)", "TransData(weight)", "Conv2DBackpropInput",
            "TransData(gradInput)", "TransData(input.5hd)", "Conv2DBackpropFilter",
            "TransData(gradWeight)", "ReduceSum"]


@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_seed_example(mode):
    """The seed's example (FLOAT, cubeMathType 1: computed in fp16 on this product)."""
    check_seed_example(CHIP, mode)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_cases_fp16(case):
    n, cin, cout, sp, k, cfg = CASES[case]
    check(CHIP, *make_case(np.float16, n, cin, cout, sp, k, cfg), cfg, tiling=no_split(cfg))


@pytest.mark.parametrize("cmt", [1, 2])
def test_float_computed_in_fp16(cmt):
    """FLOAT with cubeMathType 1 or 2 runs the cube in fp16: the same outputs as fp16 inputs
    cast back, and within the fp16 standard of torch (checked by ``check``)."""
    cfg = dict(stride=[2, 1], padding=[1, 1], dilation=[1, 1], cmt=cmt)
    dy, x, w = make_case(np.float32, 2, 5, 7, (7, 6), (3, 3), cfg)
    r = check(CHIP, dy, x, w, cfg, tiling=no_split(cfg))
    assert r.outputs["gradInput"].dtype == np.float32
    kinds = {k["name"] for k in r.stats["kernels"]}
    assert "Conv2DBackpropInput" in kinds


def test_the_op_sequence_as_cann_runs_it_on_310p():
    """Casts+TransData in, both cube kernels on the AI cores with L0C->UB->GM (no FixPipe, no
    L0C->GM), TransData back, ReduceSum for gradBias; stride 2 builds the zero-inserted
    gradOutput in UB and moves it UB->L1."""
    cfg = dict(stride=[2, 2], padding=[1, 1], dilation=[1, 1])
    r = check(CHIP, *make_case(np.float16, 2, 8, 8, (9, 9), (3, 3), cfg), cfg,
              tiling=no_split(cfg))
    assert [k["name"] for k in r.stats["kernels"]] == SEQUENCE
    assert all(k["cores"] <= 8 for k in r.stats["kernels"])
    paths = r.stats["bytes_by_path"]
    assert paths["L0C->UB"] > 0 and paths["UB->L1"] > 0
    assert not any("L0C->GM" in p or "FIX" in p for p in paths)


@settings(max_examples=15, deadline=None)
@given(nsp=st.sampled_from([1, 2]), data=st.data())
def test_against_torch_generated(nsp, data):
    dtype = data.draw(st.sampled_from([np.float16, np.float32]))
    drawn = draw_case(data, nsp, dtype, cmt=st.sampled_from([1, 2]))
    if drawn is not None:
        dy, x, w, cfg = drawn
        check(CHIP, dy, x, w, cfg, tiling=no_split(cfg))


def test_default_tiling_atomic_dw_and_jitter():
    """The default tiling splits dw's K over cores and adds the parts atomically into gradWeight
    (order follows timing: within the summation-order bound of torch); gradInput and gradBias
    have one writer per element and stay bit-identical under jitter."""
    cfg = dict(stride=[1, 1], padding=[1, 1], dilation=[1, 1])
    dy, x, w = make_case(np.float16, 4, 16, 16, (12, 12), (3, 3), cfg)
    runs = [ops.convolution_backward(dy, x, w, chip=CHIP, jitter=(seed, 40), **params(dy, cfg))
            for seed in (1, 2)]
    assert runs[0].tiling.dw_k_parts > 1
    for name in ("gradInput", "gradBias"):
        assert_bit_equal(runs[0].outputs[name], runs[1].outputs[name], name)
    ref = torch_grads(dy, x, w, cfg)
    for r in runs:
        for name, want in ref.items():
            assert_close(r.outputs[name], want, 0.0, 3e-3 * np.abs(want).max(), name)


# --- the seed's rules for the product ----------------------------------------------------------

def call(dy, x, w, **change):
    kw = dict(bias_sizes=[dy.shape[1]], stride=[1] * (x.ndim - 2), padding=[0] * (x.ndim - 2),
              dilation=[1] * (x.ndim - 2), chip=CHIP)
    kw.update(change)
    return ops.convolution_backward(dy, x, w, **kw)


ONES = np.ones((1, 2, 4, 4), np.float16), np.ones((1, 2, 4, 4), np.float16), \
    np.ones((2, 2, 1, 1), np.float16)
F32 = tuple(a.astype(np.float32) for a in ONES)
BF16 = tuple(a.astype(ml_dtypes.bfloat16) for a in ONES)
VOL = np.ones((1, 2, 3, 4, 4), np.float16)


@pytest.mark.parametrize("args, change, message", [
    ((VOL, VOL, np.ones((2, 2, 1, 1, 1), np.float16)), {},
     r"3D convolution backward is not supported on atlas-inference \(Atlas inference series"),
    (BF16, {}, r"gradOutput dtype bfloat16 is not supported on atlas-inference .*allowed: "
               r"float16, float32"),
    (F32, {"cube_math_type": 0}, r"cubeMathType = 0 with FLOAT inputs: the cube of "
                                 r"atlas-inference .*has no fp32"),
    (F32, {"cube_math_type": 3}, r"cubeMathType = 3 with FLOAT inputs"),
    ((np.ones((1, 2, 0, 4), np.float16), np.ones((1, 2, 4, 4), np.float16),
      np.ones((2, 2, 1, 1), np.float16)), {},
     r"gradOutput shape \(1, 2, 0, 4\): empty tensors are not supported"),
])
def test_product_rules_are_161002(args, change, message):
    with pytest.raises(ParamError, match=message) as info:
        call(*args, **change)
    assert info.value.code == 161002


def test_other_operators_are_refused_naming_the_supported_products():
    x = np.ones((4, 32), np.float16)
    idx = np.zeros(4, np.int32)
    calls = {
        "silu": (lambda: ops.silu_backward(x, x, chip=CHIP), "atlas-training .*atlas-a2"),
        "embedding": (lambda: ops.embedding_dense_backward(x, idx, num_weights=8, chip=CHIP),
                      "atlas-training .*atlas-a2"),
        "moe": (lambda: ops.moe_token_permute_grad(x, idx, num_topk=1, chip=CHIP),
                "supported products: atlas-a2"),
        "ce": (lambda: ops.cross_entropy_loss_grad(np.ones(4, np.float16), x,
                                                   np.zeros(4, np.int64), chip=CHIP),
               "supported on: Atlas A2"),
    }
    for name, (fn, supported) in calls.items():
        with pytest.raises(ParamError, match=f"not supported on {CHIP} .*{supported}") as info:
            fn()
        assert info.value.code == 161002, name


# --- timing sanity -------------------------------------------------------------------------------

def layer(chip, n, c, hw):
    z = np.zeros((n, c, hw, hw), np.float16)
    w = np.zeros((c, c, 3, 3), np.float16)
    return ops.convolution_backward(z, z, w, bias_sizes=[c], stride=[1, 1], padding=[1, 1],
                                    dilation=[1, 1], chip=chip, numerics=False, trace=False,
                                    sanitize=False)


def test_timing_respects_dram_roofline_and_cube_peak():
    n, c, hw = 2, 64, 28
    flops = 2 * 2 * n * hw * hw * c * c * 9          # dx and dw
    tensor_bytes = 2 * (3 * n * c * hw * hw + 2 * c * c * 9 + c)
    chip = npusim.load_chip(CHIP)
    r = layer(CHIP, n, c, hw)
    assert r.time_us * 1e-6 >= tensor_bytes / chip.hbm_bytes_per_s          # DRAM roofline
    assert flops / (r.time_us * 1e-6) <= 8 * 4096 * 2 * chip.clock_hz         # 8 cores' peak
    assert r.stats["gm"]["hbm_bytes"] >= tensor_bytes * 0.9
    training = layer("atlas-training", n, c, hw)
    assert training.time_us < r.time_us     # 32 cores and HBM against 8 cores and LPDDR4X
    assert layer("atlas-inference-310p1", n, c, hw).time_us <= r.time_us * 1.02


# --- the command -------------------------------------------------------------------------------

CONV = ["convolution_backward", "--shape", "1x4x6x6"]
COMMAND_BAD = {
    "3-D": ([*CONV, "--shape", "1x4x4x6x6", "--param", "weight=4x3"],
            "3D convolution backward is not supported on atlas-inference"),
    "bf16": ([*CONV, "--dtype", "bf16"],
             "gradOutput dtype bfloat16 is not supported on atlas-inference"),
    "FLOAT, cubeMathType 0": ([*CONV, "--dtype", "float32", "--param", "cube_math_type=0"],
                              "cubeMathType = 0 with FLOAT inputs"),
    "FLOAT, cubeMathType 3": ([*CONV, "--dtype", "float32", "--param", "cube_math_type=3"],
                              "cubeMathType = 3 with FLOAT inputs"),
    "silu on 310P": (["silu_backward", "--shape", "64x1024"], "not supported on atlas-"),
    "embedding on 310P": (["embedding_dense_backward", "--shape", "64x128"],
                          "not supported on atlas-inference"),
    "cross entropy on 310P": (["cross_entropy_loss_grad", "--shape", "64x1000"],
                              "supported on: Atlas A2"),
    "moe on 310P": (["moe_token_permute_grad", "--shape", "64x512"],
                    "supported products: atlas-a2"),
}


@pytest.mark.parametrize("case", list(COMMAND_BAD))
def test_command_refusals_are_one_line_and_no_files(case, tmp_path):
    args, message = COMMAND_BAD[case]
    out = run_cli("run", *args, "--chip", CHIP, "--out", str(tmp_path / "out"), cwd=tmp_path)
    line = assert_one_line_error(out)
    assert message in line, line
    assert list(tmp_path.iterdir()) == []


def test_command_compares_the_three_products():
    out = run_cli("compare", "convolution_backward", "--chips",
                  "atlas-training,atlas-a2,atlas-inference", "--shape", "1x16x8x8")
    assert out.returncode == 0, out.stderr
    header = next(line for line in out.stdout.splitlines() if "atlas-inference" in line)
    assert "atlas-training" in header and "atlas-a2" in header
    status = next(line for line in out.stdout.splitlines() if line.startswith("status"))
    assert status.split()[1:] == ["exact"] * 3
    assert "Ascend310P3 (inference)" in out.stdout
