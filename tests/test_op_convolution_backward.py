"""ConvolutionBackward: the seed's example, golden bit for bit, PyTorch within the precision
standard over generated configurations, argument rules per product, tiling, determinism, timing."""


import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from hypothesis import given, settings
from hypothesis import strategies as st

from npusim import golden, ops
from npusim.dtypes import name_of
from npusim.errors import ParamError, TilingError
from npusim.ops.convolution.backward import golden_options
from op_check import assert_bit_equal, assert_close

CHIPS = ("atlas-a2", "atlas-training")
BF16 = ml_dtypes.bfloat16
CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
CONVT = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def forward(x, w, cfg):
    """The forward convolution in torch float64 (asymmetric 2D padding through F.pad)."""
    s, p, d = cfg["stride"], cfg["padding"], cfg["dilation"]
    nsp = x.ndim - 2
    if cfg.get("transposed"):
        return CONVT[nsp](x, w, None, s, tuple(p), tuple(cfg["output_padding"]),
                          cfg.get("groups", 1), d)
    if len(p) == 4:
        return CONV[nsp](F.pad(x, (p[2], p[3], p[0], p[1])), w, None, s, 0, d,
                         cfg.get("groups", 1))
    return CONV[nsp](x, w, None, s, tuple(p), d, cfg.get("groups", 1))


def make_case(dtype, n, cin, cout, sp, k, cfg, seed=0):
    """Random gradOutput, input, weight of ``dtype`` for ``cfg`` (uniform in [-1, 1])."""
    rng = np.random.default_rng(seed)
    g = cfg.get("groups", 1)
    x = rng.uniform(-1, 1, (n, cin, *sp)).astype(dtype)
    wshape = (cin, cout // g, *k) if cfg.get("transposed") else (cout, cin // g, *k)
    w = rng.uniform(-1, 1, wshape).astype(dtype)
    ys = forward(torch.zeros(x.shape, dtype=torch.float64),
                 torch.from_numpy(w.astype(np.float64)), cfg).shape
    dy = rng.uniform(-1, 1, tuple(ys)).astype(dtype)
    return dy, x, w


def torch_grads(dy, x, w, cfg) -> dict:
    xt = torch.from_numpy(x.astype(np.float64)).requires_grad_()
    wt = torch.from_numpy(w.astype(np.float64)).requires_grad_()
    dyt = torch.from_numpy(dy.astype(np.float64))
    forward(xt, wt, cfg).backward(dyt)
    return {"gradInput": xt.grad.numpy(), "gradWeight": wt.grad.numpy(),
            "gradBias": dyt.sum(dim=[0, *range(2, dy.ndim)]).numpy()}


def params(dy, cfg) -> dict:
    nsp = dy.ndim - 2
    out = dict(bias_sizes=[dy.shape[1]], stride=cfg["stride"], padding=cfg["padding"],
               dilation=cfg["dilation"], transposed=cfg.get("transposed", False),
               output_padding=cfg.get("output_padding", [0] * nsp),
               groups=cfg.get("groups", 1), cube_math_type=cfg.get("cmt", 1))
    if "mask" in cfg:
        out["output_mask"] = cfg["mask"]
    return out


def tolerance(chip, dtype, cmt) -> float:
    name = name_of(np.dtype(dtype))
    if name == "float16":
        return 3e-3
    if name == "bfloat16":
        return 2e-2
    return 1e-5 if chip == "atlas-a2" and cmt == 0 else 3e-3


def check(chip, dy, x, w, cfg, mode="timed", tiling=None, exact=True, **options):
    """Run the op; compare with the golden bit for bit and with torch; return the Result."""
    kw = params(dy, cfg)
    r = ops.convolution_backward(dy, x, w, chip=chip, mode=mode, tiling=tiling, **kw, **options)
    if exact:
        options = golden_options(r, dy, x, w, kw["cube_math_type"])
        options.pop("atomic")
        want = golden.convolution_backward(dy, x, w, **options, **kw)
        for name, value in want.items():
            if value is not None:
                assert_bit_equal(r.outputs[name], value, name)
    tol = tolerance(chip, x.dtype, kw["cube_math_type"])
    # the error of a sum grows with the sum of its terms' magnitudes, not with the result
    # (cancellation): the scale is the largest sum of |terms| over the tensor
    sizes = torch_grads(np.abs(dy), np.abs(x), np.abs(w), cfg)
    for name, ref in torch_grads(dy, x, w, cfg).items():
        if r.outputs[name] is not None:
            scale = max(float(np.max(sizes[name])), 1e-30) if ref.size else 1.0
            assert_close(r.outputs[name], ref, 0.0, tol * scale, name)
    return r


def no_split(cfg):
    return {"dw_k_parts": 1}


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_seed_example(chip, mode):
    check_seed_example(chip, mode)


def check_seed_example(chip, mode):
    """The seed's call example: all-ones FLOAT tensors, cubeMathType 1."""
    ones = np.ones((2, 2, 7, 7), np.float32)
    r = ops.convolution_backward(ones, ones, np.ones((2, 2, 1, 1), np.float32), bias_sizes=[2],
                                 stride=[1, 1], padding=[0, 0], dilation=[1, 1],
                                 cube_math_type=1, chip=chip, mode=mode)
    assert np.all(r.outputs["gradInput"] == 2) and r.outputs["gradInput"].shape == (2, 2, 7, 7)
    assert np.all(r.outputs["gradWeight"] == 98) and r.outputs["gradWeight"].shape == (2, 2, 1, 1)
    assert np.all(r.outputs["gradBias"] == 98) and r.outputs["gradBias"].shape == (2,)
    assert all(v.dtype == np.float32 for v in r.outputs.values())


CASES = [  # (n, cin, cout, spatial, kernel, cfg)
    (2, 5, 7, (9, 8), (3, 3), dict(stride=[1, 1], padding=[1, 1], dilation=[1, 1])),
    (2, 5, 7, (9, 8), (3, 2), dict(stride=[2, 3], padding=[1, 0], dilation=[1, 2])),
    (2, 6, 4, (9, 8), (3, 3), dict(stride=[2, 2], padding=[1, 2, 0, 1], dilation=[1, 1],
                                   groups=2)),
    (1, 4, 4, (7, 9), (3, 3), dict(stride=[1, 2], padding=[1, 1], dilation=[2, 1], groups=4)),
    (2, 4, 6, (11,), (3,), dict(stride=[2], padding=[1], dilation=[2])),
    (2, 4, 6, (5, 6), (3, 3), dict(stride=[2, 2], padding=[1, 1], dilation=[1, 1],
                                   transposed=True, output_padding=[1, 0])),
    (1, 3, 2, (6, 5), (1, 1), dict(stride=[3, 2], padding=[0, 0], dilation=[1, 1],
                                   mask=(True, False, True))),
]


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_cases_fp16(chip, case):
    n, cin, cout, sp, k, cfg = CASES[case]
    check(chip, *make_case(np.float16, n, cin, cout, sp, k, cfg), cfg, tiling=no_split(cfg))


@pytest.mark.parametrize("chip,dtype,cmt", [("atlas-a2", np.float32, 0),
                                            ("atlas-a2", np.float32, 1),
                                            ("atlas-a2", np.float32, 3),
                                            ("atlas-a2", np.float32, 2),
                                            ("atlas-a2", BF16, 1),
                                            ("atlas-training", np.float32, 1),
                                            ("atlas-training", np.float32, 2)])
def test_dtypes_and_cube_math_type(chip, dtype, cmt):
    cfg = dict(stride=[2, 1], padding=[1, 1], dilation=[1, 1], cmt=cmt)
    r = check(chip, *make_case(dtype, 2, 5, 7, (7, 6), (3, 3), cfg), cfg, tiling=no_split(cfg))
    assert r.outputs["gradInput"].dtype == np.dtype(dtype)


def test_cube_math_type_paths_differ():
    """A2 fp32: 0 keeps fp32 (1e-5), 1 rounds to HF32, 2 to fp16: three different results."""
    cfg = dict(stride=[1, 1], padding=[1, 1], dilation=[1, 1])
    dy, x, w = make_case(np.float32, 1, 8, 8, (6, 6), (3, 3), cfg, seed=3)
    outs = [ops.convolution_backward(dy, x, w, chip="atlas-a2", **{**params(dy, cfg),
                                     "cube_math_type": c}).outputs["gradInput"]
            for c in (0, 1, 2)]
    assert not np.array_equal(outs[0], outs[1]) and not np.array_equal(outs[1], outs[2])


def test_3d_atlas_a2():
    cfg = dict(stride=[2, 1, 2], padding=[1, 0, 1], dilation=[1, 1, 1], cmt=0)
    check("atlas-a2", *make_case(np.float32, 2, 5, 7, (5, 4, 6), (3, 2, 3), cfg), cfg,
          tiling={"dw_k_parts": 2, "deterministic": True})
    cfg = dict(stride=[2, 2, 1], padding=[1, 1, 0], dilation=[1, 1, 1], transposed=True,
               output_padding=[1, 1, 0], groups=2)
    check("atlas-a2", *make_case(np.float16, 2, 4, 6, (4, 5, 6), (2, 3, 3), cfg), cfg,
          tiling=no_split(cfg))


def test_depthwise_and_mixed_dtypes():
    cfg = dict(stride=[1, 1], padding=[1, 1], dilation=[1, 1], groups=6)
    check("atlas-a2", *make_case(np.float16, 2, 6, 6, (6, 7), (3, 3), cfg), cfg,
          tiling=no_split(cfg))
    dy, x, w = make_case(np.float16, 1, 3, 4, (5, 5), (3, 3), cfg := dict(
        stride=[1, 1], padding=[0, 0], dilation=[1, 1], cmt=0))
    r = check("atlas-a2", dy, x.astype(BF16), w, cfg, exact=False)
    assert r.outputs["gradInput"].dtype == np.float32
    assert r.outputs["gradWeight"].dtype == np.float16 and r.outputs["gradBias"].dtype == np.float16


ENLARGED = [  # (chip, dtype, n, cin, cout, spatial, kernel, cfg): groups the dw enlarges
    ("atlas-a2", np.float16, 2, 24, 24, (6, 5), (3, 3), dict(groups=24)),     # 16 + a tail of 8
    ("atlas-a2", np.float32, 1, 9, 6, (5, 6), (3, 2), dict(groups=3, cmt=0)),  # 3-channel groups
    ("atlas-training", np.float16, 1, 20, 30, (5, 5), (3, 3),                  # 10-channel groups
     dict(groups=2, transposed=True, output_padding=[0, 0])),
    ("atlas-a2", np.float16, 1, 20, 30, (4, 5, 5), (2, 3, 3), dict(groups=2, transposed=True,
                                                                   output_padding=[0, 0, 0])),
    ("atlas-a2", BF16, 2, 12, 12, (3, 5, 6), (2, 2, 3), dict(groups=12, dilation=[1, 2, 1])),
    ("atlas-a2", np.float32, 1, 9, 6, (25, 26), (25, 25), dict(groups=3, cmt=0,   # the taps
                                                             padding=[0, 0])),   # cut in UB
]


@pytest.mark.parametrize("case", range(len(ENLARGED)))
def test_grouped_dw_on_enlarged_groups(case):
    """gradWeight of groups whose channels do not fill a 16-channel block runs as CANN runs it,
    several groups side by side in one GEMM (a tail group with fewer, channels straddling C0
    blocks in fp32), golden bit for bit and torch within the standard."""
    chip, dtype, n, cin, cout, sp, k, extra = ENLARGED[case]
    nsp = len(sp)
    cfg = dict(stride=[1] * nsp, padding=[1] * nsp, dilation=[1] * nsp) | extra
    check(chip, *make_case(dtype, n, cin, cout, sp, k, cfg), cfg, tiling=no_split(cfg))


def test_group_enlarge_follows_cann():
    """CANN's own tilings (ops-nn conv3d_backprop_filter_v2 knowledge base, Ascend950PR:
    96 and 32 depthwise groups run as realGroup 6 and 2 with cin1G = cout1G = 16 lanes)."""
    from npusim.ops.convolution.geometry import group_enlarge
    assert [group_enlarge(g, 1, 1) for g in (96, 32, 6, 1)] == [16, 16, 6, 1]
    assert group_enlarge(4, 24, 24) == 2 and group_enlarge(8, 16, 16) == 1


def draw_case(data, nsp, dtype=np.float16, **extra):
    """A generated configuration (groups, channels, kernel, stride, dilation, padding,
    transposed with output_padding, spatial size; ``extra`` keys added to it) and its inputs,
    or None where torch gives no valid output or the gradient is empty."""
    g = data.draw(st.sampled_from([1, 2]))
    cin, cout = g * data.draw(st.integers(1, 5)), g * data.draw(st.integers(1, 5))
    k = tuple(data.draw(st.integers(1, 3)) for _ in range(nsp))
    s = [data.draw(st.integers(1, 3)) for _ in range(nsp)]
    d = [data.draw(st.integers(1, 2)) for _ in range(nsp)]
    p = [data.draw(st.integers(0, 2)) for _ in range(nsp)]
    transposed = data.draw(st.booleans())
    op = [data.draw(st.integers(0, max(si, di) - 1)) for si, di in zip(s, d, strict=True)]
    sp = tuple(data.draw(st.integers((ki - 1) * di + 1, 9)) for ki, di in zip(k, d, strict=True))
    cfg = dict(stride=s, padding=p, dilation=d, groups=g, transposed=transposed,
               output_padding=op if transposed else [0] * nsp,
               **{key: data.draw(value) for key, value in extra.items()})
    try:
        dy, x, w = make_case(dtype, data.draw(st.integers(1, 2)), cin, cout, sp, k, cfg)
    except RuntimeError:     # torch: no valid output size for these parameters
        return None
    if dy.size == 0 or min(dy.shape[2:]) < 1:
        return None
    return dy, x, w, cfg


@settings(max_examples=12, deadline=None)
@given(chip=st.sampled_from(CHIPS), nsp=st.sampled_from([1, 2]), data=st.data())
def test_against_torch_generated(chip, nsp, data):
    drawn = draw_case(data, nsp, mask=st.sampled_from([(True, True, True), (True, False, False),
                                                       (False, True, True)]))
    if drawn is not None:
        dy, x, w, cfg = drawn
        check(chip, dy, x, w, cfg, tiling=no_split(cfg))


def test_empty_input_batch():
    dy, x, w = np.zeros((0, 4, 5, 5), np.float16), np.zeros((0, 3, 5, 5), np.float16), \
        np.ones((4, 3, 1, 1), np.float16)
    r = ops.convolution_backward(dy, x, w, bias_sizes=[4], stride=[1, 1], padding=[0, 0],
                                 dilation=[1, 1])
    assert r.outputs["gradInput"].shape == (0, 3, 5, 5)
    assert np.all(r.outputs["gradWeight"] == 0) and np.all(r.outputs["gradBias"] == 0)


@pytest.mark.parametrize("chip", CHIPS)
def test_functional_equals_timed(chip):
    cfg = dict(stride=[2, 1], padding=[1, 1], dilation=[1, 1])
    dy, x, w = make_case(np.float16, 2, 5, 7, (7, 6), (3, 3), cfg)
    a = ops.convolution_backward(dy, x, w, chip=chip, **params(dy, cfg))
    b = ops.convolution_backward(dy, x, w, chip=chip, mode="functional", **params(dy, cfg))
    for name in a.outputs:
        assert_bit_equal(a.outputs[name], b.outputs[name], name)


@pytest.mark.parametrize("chip", CHIPS)
def test_deterministic_variant_and_jitter(chip):
    cfg = dict(stride=[1, 1], padding=[1, 1], dilation=[1, 1])
    dy, x, w = make_case(np.float16, 4, 5, 7, (6, 6), (3, 3), cfg)
    det = {"dw_k_parts": 4, "deterministic": True}
    runs = [check(chip, dy, x, w, cfg, tiling=det, jitter=(seed, 40)) for seed in (1, 2)]
    assert_bit_equal(runs[0].outputs["gradWeight"], runs[1].outputs["gradWeight"])
    tasks = {k["op_type"]: k["task_type"] for k in runs[0].stats["kernels"]}
    if runs[0].chip.separated:   # summed inside the mixed V2 kernel
        assert tasks["Conv3DBackpropFilterV2"] == "MIX_AIC" and "ReduceDwPartials" not in tasks
    else:
        assert "ReduceDwPartials" in tasks
    atomic = [ops.convolution_backward(dy, x, w, chip=chip, tiling={"dw_k_parts": 4},
                                       jitter=(seed, 40), **params(dy, cfg)) for seed in (1, 2)]
    assert atomic[0].tiling.dw_k_parts == 4 and not atomic[0].tiling.deterministic
    ref = torch_grads(dy, x, w, cfg)["gradWeight"]
    for r in atomic:
        assert_close(r.outputs["gradWeight"], ref, 0.0, 3e-3 * np.abs(ref).max(), "gradWeight")


def test_tiling_overrides():
    cfg = dict(stride=[1, 1], padding=[1, 1], dilation=[1, 1])
    dy, x, w = make_case(np.float16, 2, 20, 24, (8, 8), (3, 3), cfg)
    small = {"base_m": 32, "base_n": 16, "base_k": 16, "l1_buffers": 1, "l0_buffers": 1,
             "dx_step_k1": 1, "dw_step_k": 32, "dx_block_dim": 3, "dw_block_dim": 2,
             "dw_k_parts": 1, "bias_block_dim": 2, "bias_tile": 64}
    r = check("atlas-a2", dy, x, w, cfg, tiling=small)
    assert r.tiling.base_m == 32 and r.tiling.dx_block_dim == 3
    for bad in ({"base_m": 24}, {"base_k": 8}, {"l0_buffers": 3}, {"base_n": 512},
                {"dw_step_k": 40}, {"dx_block_dim": 25}, {"dw_k_parts": 99}, {"nope": 1},
                {"base_m": 256, "base_n": 256}, {"dx_step_k1": 9}):
        with pytest.raises(TilingError):
            ops.convolution_backward(dy, x, w, tiling=bad, **params(dy, cfg))


def test_double_buffering_helps():
    cfg = dict(stride=[1, 1], padding=[1, 1], dilation=[1, 1])
    dy, x, w = make_case(np.float16, 2, 64, 64, (14, 14), (3, 3), cfg)
    kw = dict(chip="atlas-a2", numerics=False, trace=False, **params(dy, cfg))
    single = ops.convolution_backward(dy, x, w, tiling={"l1_buffers": 1, "l0_buffers": 1}, **kw)
    double = ops.convolution_backward(dy, x, w, **kw)
    assert double.cycles < single.cycles


def resnet_layer(chip, n, c, hw):
    z = np.zeros((n, c, hw, hw), np.float16)
    w = np.zeros((c, c, 3, 3), np.float16)
    return ops.convolution_backward(z, z, w, bias_sizes=[c], stride=[1, 1], padding=[1, 1],
                                    dilation=[1, 1], chip=chip, numerics=False, trace=False,
                                    sanitize=False)


def peak_flops(chip) -> float:
    return chip.ai_core_count * 4096 * 2 * chip.clock_hz


def test_timing_a2_beats_training_and_stays_under_peak():
    flops = 2 * 2 * 4 * 28 * 28 * 128 * 128 * 9
    times = {}
    for chip in CHIPS:
        r = resnet_layer(chip, 4, 128, 28)
        assert flops / (r.time_us * 1e-6) <= peak_flops(r.chip)
        times[chip] = r.time_us
    assert times["atlas-a2"] < times["atlas-training"]


def test_large_1x1_reaches_half_of_peak():
    n, c, hw = 6, 6144, 32     # dx and dw are both 6144 x 6144 x 6144 GEMMs
    z = np.zeros((n, c, hw, hw), np.float16)
    r = ops.convolution_backward(z, z, np.zeros((c, c, 1, 1), np.float16), bias_sizes=[c],
                                 stride=[1, 1], padding=[0, 0], dilation=[1, 1],
                                 chip="atlas-a2", numerics=False, trace=False, sanitize=False)
    flops = 2 * 2 * 6144 ** 3
    assert 0.5 * peak_flops(r.chip) <= flops / (r.time_us * 1e-6) <= peak_flops(r.chip)


BASE = dict(bias_sizes=[4], stride=[1, 1], padding=[1, 1], dilation=[1, 1])
RULES = [  # (chips, change, code)
    (CHIPS, {"grad_output": None}, 161001),
    (CHIPS, {"bias_sizes": None}, 161001),
    (CHIPS, {"stride": None}, 161001),
    (CHIPS, {"output_mask": None}, 161001),
    (CHIPS, {"dtype": np.int32}, 161002),
    (("atlas-training",), {"dtype": BF16}, 161002),
    (CHIPS, {"stride": [0, 1]}, 161002),
    (CHIPS, {"stride": [1, 1, 1]}, 161002),
    (CHIPS, {"padding": [-1, 0]}, 161002),
    (CHIPS, {"padding": [1, 1, 1]}, 161002),
    (CHIPS, {"dilation": [0, 1]}, 161002),
    (CHIPS, {"bias_sizes": [5]}, 161002),
    (CHIPS, {"bias_sizes": [4, 1]}, 161002),
    (CHIPS, {"groups": 0}, 161002),
    (CHIPS, {"groups": 2}, 161002),
    (CHIPS, {"dy_shape": (2, 4, 6, 6)}, 161002),
    (CHIPS, {"dy_shape": (2, 4, 5)}, 161002),
    (CHIPS, {"cube_math_type": 4}, 161002),
    (CHIPS, {"output_mask": (True, True)}, 161002),
    (("atlas-training",), {"dtype": np.float32, "cube_math_type": 0}, 161002),
    (("atlas-training",), {"dtype": np.float32, "cube_math_type": 3}, 161002),
    (("atlas-a2",), {"dtype": BF16, "cube_math_type": 2}, 161002),
    (("atlas-a2",), {"padding": [256, 0]}, 161002),
    (("atlas-a2",), {"dilation": [256, 1]}, 161002),
    (("atlas-a2",), {"groups": 65536}, 161002),
    (CHIPS, {"transposed": True, "output_padding": [1, 0]}, 161002),
]


def rule_call(chip, change):
    dtype = change.get("dtype", np.float16)
    dy = np.zeros(change.get("dy_shape", (2, 4, 5, 5)), dtype)
    x, w = np.zeros((2, 3, 5, 5), dtype), np.zeros((4, 3, 3, 3), dtype)
    args = {"grad_output": dy, "input": x, "weight": w, **BASE, "cube_math_type": 1}
    args.update({k: v for k, v in change.items() if k not in ("dtype", "dy_shape")})
    if args.get("groups") == 65536:
        args["input"] = np.zeros((1, 65536, 1, 1), dtype)
        args["weight"] = np.zeros((65536, 1, 1, 1), dtype)
        args["grad_output"], args["bias_sizes"] = np.zeros((1, 65536, 1, 1), dtype), [65536]
        args["padding"] = [0, 0]
    return ops.convolution_backward(args.pop("grad_output"), args.pop("input"),
                                    args.pop("weight"), chip=chip, **args)


@pytest.mark.parametrize("rule", range(len(RULES)))
def test_argument_rules(rule):
    chips, change, code = RULES[rule]
    for chip in chips:
        with pytest.raises(ParamError) as err:
            rule_call(chip, change)
        assert err.value.code == code, str(err.value)


def test_3d_rejected_on_training():
    z = np.zeros((1, 2, 3, 3, 3), np.float16)
    with pytest.raises(ParamError) as err:
        ops.convolution_backward(z, z, np.zeros((2, 2, 1, 1, 1), np.float16), bias_sizes=[2],
                                 stride=[1, 1, 1], padding=[0, 0, 0], dilation=[1, 1, 1],
                                 chip="atlas-training")
    assert err.value.code == 161002


def test_aclnn_two_phase_seed_example():
    from npusim import aclnn

    aclnn.aclrtSetDevice(0, chip="atlas-training")
    ones = np.ones((2, 2, 7, 7), np.float32)
    outs = [np.zeros((2, 2, 7, 7), np.float32), np.zeros((2, 2, 1, 1), np.float32),
            np.zeros(2, np.float32)]
    t = [aclnn.Tensor(a) for a in (ones, ones.copy(), np.ones((2, 2, 1, 1), np.float32), *outs)]
    status, size, ex = aclnn.aclnnConvolutionBackwardGetWorkspaceSize(
        t[0], t[1], t[2], [2], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True] * 3, 1,
        t[3], t[4], t[5])
    assert status == 0
    assert aclnn.aclnnConvolutionBackward(np.zeros(size, np.uint8), size, ex, None) == 0
    assert np.all(outs[0] == 2) and np.all(outs[1] == 98) and np.all(outs[2] == 98)
    bad = aclnn.aclnnConvolutionBackwardGetWorkspaceSize(
        t[0], t[1], t[2], [2], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True] * 3, 0,
        t[3], t[4], t[5])
    assert bad[0] == 161002 and "cubeMathType" in aclnn.aclGetRecentErrMsg()
    null = aclnn.aclnnConvolutionBackwardGetWorkspaceSize(
        None, t[1], t[2], [2], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True] * 3, 1,
        t[3], t[4], t[5])
    assert null[0] == 161001
    aclnn.aclrtSetDevice(0, chip="atlas-a2")
