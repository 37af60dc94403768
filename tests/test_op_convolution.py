"""aclnnConvolution (the forward): golden bit for bit in both modes, PyTorch within the precision
standard, odd shapes (odd channels and H/W, stride 2, the 7x7 stem, 1x1, 3x3, 1-D, dilation,
asymmetric padding), the kernels CANN launches, the argument rules per product, the Conv2D
kernel alone on an NC1HWC0 input (graph mode), sanitizer clean."""

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812

from npusim import golden, ops
from npusim.engine.sequence import OpRun
from npusim.errors import (
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    ParamError,
    TilingError,
)
from npusim.ops.convolution.forward import golden_options
from op_check import assert_bit_equal, assert_close

CHIPS = ("atlas-a2", "atlas-training")
BF16 = ml_dtypes.bfloat16
KERNELS = ["TransData(input)", "TransData(weight)", "Conv2D", "TransData(output)"]


def torch_conv(x, w, cfg):
    """The forward in torch float64 (asymmetric padding through F.pad)."""
    xt, wt = (torch.from_numpy(np.asarray(a).astype(np.float64)) for a in (x, w))
    conv = F.conv1d if x.ndim == 3 else F.conv2d
    p = cfg["padding"]
    if len(p) == 2 * (x.ndim - 2) and len(p) > 1:   # (lo, hi) per dimension, H first
        pads = [v for i in reversed(range(x.ndim - 2)) for v in (p[2 * i], p[2 * i + 1])]
        xt, p = F.pad(xt, pads), 0
    return conv(xt, wt, None, cfg["stride"], p, cfg["dilation"]).numpy()


def make(dtype, n, cin, cout, sp, k, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, (n, cin, *sp)).astype(dtype),
            rng.uniform(-1, 1, (cout, cin, *k)).astype(dtype))


def tolerance(chip, dtype, cmt) -> float:
    name = np.dtype(dtype).name
    if name == "float16":
        return 3e-3
    if name == "bfloat16":
        return 2e-2
    return 3e-3 if chip != "atlas-a2" or cmt in (1, 2, 3) else 1e-5


def check(chip, x, w, cfg, mode="timed", tiling=None, cmt=1):
    """Run the op; compare with the golden bit for bit and with torch; return the Result."""
    r = ops.convolution(x, w, stride=cfg["stride"], padding=cfg["padding"],
                        dilation=cfg["dilation"], cube_math_type=cmt, chip=chip, mode=mode,
                        tiling=tiling)
    want = golden.convolution(x, w, stride=cfg["stride"], padding=cfg["padding"],
                              dilation=cfg["dilation"], **golden_options(r, x, w, cmt))
    assert_bit_equal(r.outputs["output"], want["output"], "output")
    ref = torch_conv(x, w, cfg)
    scale = max(float(np.max(torch_conv(np.abs(x), np.abs(w), cfg))), 1e-30)
    assert r.outputs["output"].shape == ref.shape
    assert_close(r.outputs["output"], ref, 0.0, tolerance(chip, x.dtype, cmt) * scale, "output")
    assert [k["name"] for k in r.stats["kernels"]] == KERNELS
    return r


CASES = [  # (n, cin, cout, spatial, kernel, cfg)
    (2, 5, 7, (9, 11), (3, 3), dict(stride=[1, 1], padding=[1, 1], dilation=[1, 1])),  # 3x3
    (2, 3, 9, (23, 21), (7, 7), dict(stride=[2, 2], padding=[3, 3], dilation=[1, 1])),  # stem
    (3, 17, 33, (7, 5), (1, 1), dict(stride=[1, 1], padding=[0, 0], dilation=[1, 1])),  # 1x1
    (2, 19, 21, (9, 9), (1, 1), dict(stride=[2, 2], padding=[0, 0], dilation=[1, 1])),  # 1x1/2
    (1, 5, 6, (9, 8), (3, 2), dict(stride=[2, 3], padding=[1, 2, 0, 1], dilation=[2, 1])),
    (2, 4, 6, (11,), (3,), dict(stride=[2], padding=[1], dilation=[2])),               # 1-D
]


@pytest.mark.parametrize("mode", ["timed", "functional"])
@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_cases_fp16(chip, case, mode):
    n, cin, cout, sp, k, cfg = CASES[case]
    check(chip, *make(np.float16, n, cin, cout, sp, k, seed=case), cfg, mode=mode)


@pytest.mark.parametrize("chip,dtype,cmt", [("atlas-a2", np.float32, 1),
                                            ("atlas-a2", np.float32, 3),
                                            ("atlas-a2", np.float32, 2),
                                            ("atlas-a2", BF16, 1),
                                            ("atlas-a2", BF16, 0),
                                            ("atlas-training", np.float32, 1),
                                            ("atlas-training", np.float32, 2),
                                            ("atlas-inference", np.float16, 1),
                                            ("atlas-inference", np.float32, 1)])
def test_dtypes_and_cube_math_type(chip, dtype, cmt):
    cfg = dict(stride=[2, 1], padding=[1, 1], dilation=[1, 1])
    r = check(chip, *make(dtype, 2, 5, 7, (7, 6), (3, 3)), cfg, cmt=cmt)
    assert r.outputs["output"].dtype == np.dtype(dtype)


def test_fp32_paths_differ():
    """A2 fp32: 1 rounds to HF32, 2 to fp16 (and Conv2D writes fp16, cast back to fp32)."""
    x, w = make(np.float32, 1, 8, 8, (6, 6), (3, 3), seed=3)
    cfg = dict(stride=[1, 1], padding=[1, 1], dilation=[1, 1])
    hf32, fp16 = (check("atlas-a2", x, w, cfg, cmt=c).outputs["output"] for c in (1, 2))
    assert not np.array_equal(hf32, fp16)
    assert np.array_equal(fp16, fp16.astype(np.float16).astype(np.float32))


def test_tiling_overrides_keep_the_bits():
    x, w = make(np.float16, 2, 20, 40, (9, 10), (3, 3), seed=5)
    cfg = dict(stride=[1, 1], padding=[1, 1], dilation=[1, 1])
    base = check("atlas-a2", x, w, cfg)
    small = check("atlas-a2", x, w, cfg, tiling={"base_m": 32, "base_n": 32, "dx_base_n": 32,
                                                 "dx_step_k1": 1, "dx_b1_keep": False})
    assert small.cycles != base.cycles
    with pytest.raises(TilingError):
        ops.convolution(x, w, stride=[1, 1], padding=[1, 1], dilation=[1, 1],
                        tiling={"base_m": 30})


def test_strided_input_runs_contiguous_first():
    x, w = make(np.float16, 2, 6, 5, (8, 16), (3, 3), seed=6)
    view = x[:, :, :, ::2]
    r = ops.convolution(view, w, stride=[1, 1], padding=[1, 1], dilation=[1, 1])
    assert [k["name"] for k in r.stats["kernels"]][0] == "Contiguous(input)"
    want = ops.convolution(np.ascontiguousarray(view), w, stride=[1, 1], padding=[1, 1],
                           dilation=[1, 1])
    assert_bit_equal(r.outputs["output"], want.outputs["output"], "output")


def test_empty_batch():
    x = np.zeros((0, 4, 5, 5), np.float16)
    w = np.ones((3, 4, 3, 3), np.float16)
    r = ops.convolution(x, w, stride=[1, 1], padding=[1, 1], dilation=[1, 1])
    assert r.outputs["output"].shape == (0, 3, 5, 5)


def test_conv2d_alone_on_nc1hwc0():
    """Graph mode: ``launch_conv2d`` runs Conv2D alone on an input already in NC1HWC0 and a
    weight in FRACTAL_Z; its NC1HWC0 output holds the golden's output, zeros in the padding
    channels (the next layer's input as it is)."""
    from npusim.ops.common import resolve_chip
    from npusim.ops.convolution.forward import launch_conv2d, output_nd_elements
    from npusim.ops.convolution.forward_args import check_convolution
    from npusim.ops.convolution.geometry import forward_problem
    from npusim.ops.convolution.tiling import conv_tiling
    from npusim.ops.transdata.kernel import run_transdata
    from npusim.ops.transdata.plan import plan_weight_dx

    x, w = make(np.float16, 2, 20, 24, (7, 9), (3, 3), seed=8)
    cfg = dict(stride=[2, 1], padding=[1, 1], dilation=[1, 1])
    spec = check_convolution(resolve_chip("atlas-a2"), x, w, None, transposed=False,
                             output_padding=None, groups=1, cube_math_type=1, **cfg)
    p = forward_problem(spec.n, spec.cin, spec.cout, spec.axes)
    run = OpRun("atlas-a2")
    t = conv_tiling(run.chip, p, None, 16, 2, spec.cout, None)
    x5 = np.pad(x, ((0, 0), (0, 12), (0, 0), (0, 0))).reshape(2, 2, 16, 7, 9)
    x5 = np.ascontiguousarray(x5.transpose(0, 1, 3, 4, 2))          # N, C1, H, W, C0
    plan = plan_weight_dx(run.chip, "TransData(weight)", spec.w5_shape, 1, 20, 24, True, 16,
                          np.float16, np.float16)
    wgm = run.gm.tensor("weight", np.float16, w.size, w)
    wb = run.gm.tensor("weight.fz", np.float16, 9 * 2 * 2 * 16 * 16)
    run_transdata(run, plan, wgm, wb)
    x5gm = run.gm.tensor("input.5hd", np.float16, x5.size, x5)
    y5 = run.gm.tensor("output.5hd", np.float16, output_nd_elements(p))
    launch_conv2d(run, x5gm, wb, y5, p, t, np.dtype(np.float16), np.dtype(np.float16), False)
    r = run.result({"y5": (y5, (2, 2, 4, 9, 16))})                  # N, Cout1, Ho, Wo, C0
    assert [k["name"] for k in r.stats["kernels"]] == ["TransData(weight)", "Conv2D"]
    want = golden.convolution(x, w, **cfg)["output"]                 # N, Cout, Ho, Wo
    got = r.outputs["y5"].transpose(0, 1, 4, 2, 3).reshape(2, 32, 4, 9)
    assert_bit_equal(np.ascontiguousarray(got[:, :24]), want, "output")
    assert not np.any(got[:, 24:])                                   # padding channels zero


def _call(**over):
    x, w = make(np.float16, 1, 4, 6, (6, 6), (3, 3))
    args = dict(input=x, weight=w, bias=None, stride=[1, 1], padding=[1, 1], dilation=[1, 1],
                chip="atlas-a2")
    args.update(over)
    return ops.convolution(args.pop("input"), args.pop("weight"), args.pop("bias"), **args)


RULES = {  # name: (overrides, code, words in the message)
    "null input": (dict(input=None), ACLNN_ERR_PARAM_NULLPTR, "input"),
    "null stride": (dict(stride=None), ACLNN_ERR_PARAM_NULLPTR, "stride"),
    "bf16 on training": (dict(input=np.ones((1, 4, 6, 6), BF16), weight=np.ones((6, 4, 3, 3),
                                                                                  BF16),
                              chip="atlas-training"), ACLNN_ERR_PARAM_INVALID, "bfloat16"),
    "int input": (dict(input=np.ones((1, 4, 6, 6), np.int32)), ACLNN_ERR_PARAM_INVALID, "int32"),
    "rank mismatch": (dict(weight=np.ones((6, 4, 3), np.float16)), ACLNN_ERR_PARAM_INVALID,
                      "ranks"),
    "3-D": (dict(input=np.ones((1, 4, 3, 6, 6), np.float16),
                 weight=np.ones((6, 4, 1, 3, 3), np.float16), stride=[1, 1, 1],
                 padding=[0, 1, 1], dilation=[1, 1, 1]), ACLNN_ERR_PARAM_INVALID, "3-D"),
    "transposed": (dict(transposed=True), ACLNN_ERR_PARAM_INVALID, "transposed"),
    "transposed not bool": (dict(transposed=1), ACLNN_ERR_PARAM_INVALID, "True or False"),
    "groups": (dict(groups=2, weight=np.ones((6, 2, 3, 3), np.float16)),
               ACLNN_ERR_PARAM_INVALID, "grouped"),
    "groups zero": (dict(groups=0), ACLNN_ERR_PARAM_INVALID, "groups"),
    "bias": (dict(bias=np.ones(6, np.float16)), ACLNN_ERR_PARAM_INVALID, "bias"),
    "channels": (dict(weight=np.ones((6, 3, 3, 3), np.float16)), ACLNN_ERR_PARAM_INVALID,
                 "input C"),
    "stride length": (dict(stride=[1]), ACLNN_ERR_PARAM_INVALID, "stride"),
    "stride zero": (dict(stride=[0, 1]), ACLNN_ERR_PARAM_INVALID, ">= 1"),
    "padding negative": (dict(padding=[-1, 0]), ACLNN_ERR_PARAM_INVALID, ">= 0"),
    "padding length": (dict(padding=[1, 1, 1]), ACLNN_ERR_PARAM_INVALID, "padding"),
    "padding range": (dict(padding=[256, 0]), ACLNN_ERR_PARAM_INVALID, "255"),
    "dilation zero": (dict(dilation=[1, 0]), ACLNN_ERR_PARAM_INVALID, "dilation"),
    "too small": (dict(padding=[0, 0], dilation=[4, 1]), ACLNN_ERR_PARAM_INVALID,
                  "smaller than the kernel"),
    "empty channels": (dict(input=np.ones((1, 0, 6, 6), np.float16),
                            weight=np.ones((6, 0, 3, 3), np.float16)),
                       ACLNN_ERR_PARAM_INVALID, "only N"),
    "fp32 keep on A2": (dict(input=np.ones((1, 4, 6, 6), np.float32),
                             weight=np.ones((6, 4, 3, 3), np.float32), cube_math_type=0),
                        ACLNN_ERR_PARAM_INVALID, "KEEP_DTYPE"),
    "fp32 hf32 on training": (dict(input=np.ones((1, 4, 6, 6), np.float32),
                                   weight=np.ones((6, 4, 3, 3), np.float32), cube_math_type=3,
                                   chip="atlas-training"), ACLNN_ERR_PARAM_INVALID, "HF32"),
    "bf16 use fp16": (dict(input=np.ones((1, 4, 6, 6), BF16), weight=np.ones((6, 4, 3, 3),
                                                                              BF16),
                           cube_math_type=2), ACLNN_ERR_PARAM_INVALID, "USE_FP16"),
    "cube math type": (dict(cube_math_type=7), ACLNN_ERR_PARAM_INVALID, "cubeMathType"),
    "inference kernel": (dict(weight=np.ones((6, 4, 256, 1), np.float16),
                              input=np.ones((1, 4, 300, 6), np.float16), padding=[0, 0],
                              chip="atlas-inference"), ACLNN_ERR_PARAM_INVALID, "255"),
}


@pytest.mark.parametrize("rule", list(RULES))
def test_argument_rules(rule):
    over, code, words = RULES[rule]
    with pytest.raises(ParamError) as err:
        _call(**over)
    assert err.value.code == code
    assert "aclnnConvolution:" in str(err.value) and words in str(err.value), str(err.value)


def test_sanitizer_clean_and_a2_faster():
    """The default run sanitizes (hazards, unwritten reads, GM write conflicts raise); a ResNet
    layer's shape runs clean on both chips, the A2 faster."""
    x, w = make(np.float16, 2, 64, 64, (14, 14), (3, 3), seed=9)
    cfg = dict(stride=[1, 1], padding=[1, 1], dilation=[1, 1])
    a2, training = (check(c, x, w, cfg) for c in CHIPS)
    assert a2.time_us < training.time_us


def test_aclnn_two_phase():
    from npusim import aclnn

    aclnn.aclrtSetDevice(0, chip="atlas-training")
    x, w = make(np.float16, 2, 5, 7, (9, 8), (3, 3), seed=11)
    out = np.zeros((2, 7, 9, 8), np.float16)
    t = [aclnn.Tensor(a) for a in (x, w, out)]
    status, size, ex = aclnn.aclnnConvolutionGetWorkspaceSize(
        t[0], t[1], None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, t[2], 1)
    assert status == 0 and size > 0
    assert aclnn.aclnnConvolution(np.zeros(size, np.uint8), size, ex, None) == 0
    want = ops.convolution(x, w, stride=[1, 1], padding=[1, 1], dilation=[1, 1],
                           chip="atlas-training").outputs["output"]
    assert_bit_equal(out, want, "output")
    wrong = aclnn.Tensor(np.zeros((2, 7, 9, 9), np.float16))
    bad = aclnn.aclnnConvolutionGetWorkspaceSize(
        t[0], t[1], None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, wrong, 1)
    assert bad[0] == 161002 and "output" in aclnn.aclGetRecentErrMsg()
    null = aclnn.aclnnConvolutionGetWorkspaceSize(
        None, t[1], None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, t[2], 1)
    assert null[0] == 161001
    aclnn.aclrtSetDevice(0, chip="atlas-a2")
