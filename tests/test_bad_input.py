"""Bad input, per operator, through the Python API and the command: each is one clear
NpusimError (ParamError with its aclnn code for argument rules), never a traceback from numpy or
SimPy, never a hang, never a partial file. The operators still to come add their table here."""

import warnings

import numpy as np
import pytest

import npusim
from npusim import aclnn as acl
from npusim import ops
from npusim.errors import ChipModelError, NpusimError, ParamError, TilingError
from npusim.face.cli import main

F16 = np.ones((4, 64), np.float16)
HUGE = np.broadcast_to(np.zeros(1, np.float16), (npusim.chip.host_memory_bytes(),))

SILU_API = {
    "gradOutput None": (lambda: ops.silu_backward(None, F16), ParamError, "161001"),
    "self None": (lambda: ops.silu_backward(F16, None), ParamError, "161001"),
    "int32 input": (lambda: ops.silu_backward(F16.astype(np.int32), F16), ParamError, "dtype"),
    "float64 input": (lambda: ops.silu_backward(F16.astype(np.float64), F16), ParamError,
                      "dtype"),
    "bf16 on training": (lambda: ops.silu_backward(F16.astype("bfloat16"),
                                                   F16.astype("bfloat16"),
                                                   chip="atlas-training"), ParamError, "dtype"),
    "mixed dtypes": (lambda: ops.silu_backward(F16, F16.astype(np.float32)), ParamError, ""),
    "shape mismatch": (lambda: ops.silu_backward(F16, F16[:2]), ParamError, "shape"),
    "bool input": (lambda: ops.silu_backward(F16 > 0, F16 > 0), ParamError, "dtype"),
    "a string": (lambda: ops.silu_backward("x", F16), ParamError, ""),
    "object array": (lambda: ops.silu_backward(np.array([object()]), F16), ParamError, ""),
    "unknown chip": (lambda: ops.silu_backward(F16, F16, chip="ascend-9"), NpusimError,
                     "unknown chip"),
    "empty chip": (lambda: ops.silu_backward(F16, F16, chip=""), ChipModelError, "empty"),
    "chip a number": (lambda: ops.silu_backward(F16, F16, chip=7), ChipModelError, "chip"),
    "tiling not a dict": (lambda: ops.silu_backward(F16, F16, tiling=[1]), TilingError, "dict"),
    "unknown tiling field": (lambda: ops.silu_backward(F16, F16, tiling={"tile": 1}),
                             TilingError, "unknown tiling field"),
    "tile_length a float": (lambda: ops.silu_backward(F16, F16, tiling={"tile_length": 1.5}),
                            TilingError, "integer"),
    "tile_length unaligned": (lambda: ops.silu_backward(F16, F16, tiling={"tile_length": 10}),
                              TilingError, "multiple"),
    "buffer_num 3": (lambda: ops.silu_backward(F16, F16, tiling={"buffer_num": 3}),
                     TilingError, "buffer_num = 3"),
    "block_dim 0": (lambda: ops.silu_backward(F16, F16, tiling={"block_dim": 0}), TilingError,
                    "block_dim = 0"),
    "derived field": (lambda: ops.silu_backward(F16, F16, tiling={"big_core_num": 1}),
                      TilingError, "derived"),
    "mode": (lambda: ops.silu_backward(F16, F16, mode="fast"), NpusimError, "mode"),
    "numerics a string": (lambda: ops.silu_backward(F16, F16, numerics="no"), NpusimError,
                          "numerics"),
    "jitter negative": (lambda: ops.silu_backward(F16, F16, jitter=(0, -5)), NpusimError,
                        "jitter"),
    "jitter a string": (lambda: ops.silu_backward(F16, F16, jitter="x"), NpusimError, "jitter"),
    "functional without numerics": (lambda: ops.silu_backward(F16, F16, mode="functional",
                                                              numerics=False), NpusimError,
                                    "numerics"),
    "larger than the host": (lambda: ops.silu_backward(HUGE, HUGE, mode="functional"),
                             npusim.OutOfMemoryError, "host"),
}

X = np.ones((1, 16, 8, 8), np.float16)
W = np.ones((16, 16, 3, 3), np.float16)
DY = np.ones((1, 16, 8, 8), np.float16)
CONV = dict(bias_sizes=(16,), stride=(1, 1), padding=(1, 1), dilation=(1, 1))


def conv(**changes):
    args = dict(grad_output=DY, input=X, weight=W, **CONV)
    args.update(changes)
    return lambda: ops.convolution_backward(args.pop("grad_output"), args.pop("input"),
                                            args.pop("weight"), **args)


CONV_API = {
    "gradOutput None": (conv(grad_output=None), ParamError, "161001"),
    "weight None": (conv(weight=None), ParamError, "161001"),
    "stride None": (conv(stride=None), ParamError, "161001"),
    "int8 input": (conv(input=X.astype(np.int8)), ParamError, "dtype"),
    "bf16 on training": (conv(grad_output=DY.astype("bfloat16"), input=X.astype("bfloat16"),
                              weight=W.astype("bfloat16"), chip="atlas-training"), ParamError,
                         "not supported"),
    "3-D on training": (conv(grad_output=DY[:, :, None], input=X[:, :, None],
                             weight=W[:, :, None], stride=(1, 1, 1), padding=(1, 1, 1),
                             dilation=(1, 1, 1), chip="atlas-training"), ParamError, "3D"),
    "stride 0": (conv(stride=(0, 0)), ParamError, "stride"),
    "stride of three for 2-D": (conv(stride=(1, 1, 1)), ParamError, "stride"),
    "negative padding": (conv(padding=(-1, 1)), ParamError, "padding"),
    "dilation 0": (conv(dilation=(0, 1)), ParamError, "dilation"),
    "groups 0": (conv(groups=0), ParamError, "groups"),
    "groups not dividing": (conv(groups=3), ParamError, ""),
    "bias sizes wrong": (conv(bias_sizes=(7,)), ParamError, ""),
    "gradOutput shape wrong": (conv(grad_output=np.ones((1, 16, 7, 8), np.float16)),
                               ParamError, ""),
    "weight channels wrong": (conv(weight=np.ones((16, 8, 3, 3), np.float16)), ParamError, ""),
    "output mask of two": (conv(output_mask=(True, True)), ParamError, ""),
    "transposed a string": (conv(transposed="yes"), ParamError, "transposed"),
    "cube_math_type 7": (conv(cube_math_type=7), ParamError, "cubeMathType"),
    "fp32 KEEP_DTYPE on training": (conv(grad_output=DY.astype(np.float32),
                                         input=X.astype(np.float32),
                                         weight=W.astype(np.float32), cube_math_type=0,
                                         chip="atlas-training"), ParamError, "cubeMathType"),
    "output_padding of one for 2-D": (conv(output_padding=(0,)), ParamError, "outputPadding"),
    "unknown tiling field": (conv(tiling={"base": 16}), TilingError, "unknown tiling field"),
    "base_m not a multiple of 16": (conv(tiling={"base_m": 24}), TilingError, "base_m"),
    "l1_buffers 3": (conv(tiling={"l1_buffers": 3}), TilingError, "l1_buffers"),
    "jitter a string": (conv(jitter="x"), NpusimError, "jitter"),
    "chip a directory": (conv(chip="."), ChipModelError, "directory"),
}


def _check(fn, error, text):
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no numpy/SimPy warning leaks either
        with pytest.raises(error) as info:
            fn()
    message = str(info.value)
    assert text in message or text in str(getattr(info.value, "code", "")), message
    assert len(message.splitlines()) == 1 and len(message) < 600, message
    if isinstance(info.value, ParamError):
        assert info.value.code in (161001, 161002)
        assert (info.value.code == 161001) == (text == "161001")


@pytest.mark.parametrize("case", list(SILU_API))
def test_silu_bad_api_input(case):
    assert len(SILU_API) >= 20
    _check(*SILU_API[case])


@pytest.mark.parametrize("case", list(CONV_API))
def test_conv_bad_api_input(case):
    assert len(CONV_API) >= 20
    _check(*CONV_API[case])


SILU_CLI = [
    ["--shape", "0x4"], ["--shape", "4x"], ["--shape", "1" + "x1" * 8], ["--shape", "70000x70000"],
    ["--dtype", "int32"], ["--dtype", "bf16", "--chip", "atlas-training"], ["--chip", ""],
    ["--chip", "/"], ["--tiling", "tile_length=abc"], ["--tiling", "tile_length=10"],
    ["--tiling", "block_dim=99"], ["--tiling", "buffer_num=0"], ["--tiling", "=3"],
    ["--param", "x=1"], ["--seed", "-1"], ["--seed", "x"], ["--mode", "fast"],
    ["--tiling", "big_core_num=1"], ["--tiling", "tile_length"], ["--shape", "4x1.5"],
]
CONV_CLI = [
    ["--shape", "1x16"], ["--shape", "1x16x2x8x8x8"], ["--param", "weight=16"],
    ["--param", "weight=0x3"], ["--param", "weight=16x3x3", "--shape", "1x16x8"],
    ["--param", "stride=0"], ["--param", "stride=1,1,1"], ["--param", "padding=-1"],
    ["--param", "dilation=x"], ["--param", "groups=0"], ["--param", "groups=x"],
    ["--param", "groups=3"], ["--param", "transposed=maybe"], ["--param", "output_mask=1,1"],
    ["--param", "cube_math_type=9"], ["--param", "weight=64x20", "--shape", "1x16x8x8"],
    ["--dtype", "bf16", "--chip", "atlas-training"], ["--tiling", "base_m=24"],
    ["--tiling", "l0_buffers=3"], ["--shape", "1x16x4x8x8", "--chip", "atlas-training"],
    ["--tiling", "nothing=1"],
]


@pytest.mark.parametrize(("op", "args"), [("silu_backward", a) for a in SILU_CLI]
                         + [("convolution_backward", ["--shape", "1x16x8x8", *a])
                            if "--shape" not in a else ("convolution_backward", a)
                            for a in CONV_CLI])
def test_bad_command_input_is_one_line_and_no_files(op, args, tmp_path, capsys):
    assert len(SILU_CLI) >= 20 and len(CONV_CLI) >= 20
    out = tmp_path / "out"
    try:
        status = main(["run", op, *args, "--out", str(out)])
    except SystemExit as exc:     # argparse's own usage errors
        status = exc.code
    err = capsys.readouterr().err.strip().splitlines()
    assert status not in (0, None, 3), err         # 3: an internal error (a bug)
    assert len(err) == 1 and "error" in err[0] and "Traceback" not in err[0], err
    assert not out.exists()


def test_aclnn_runtime_refuses_bad_calls():
    status, mem = acl.aclrtMalloc(2 ** 50)
    assert status == acl.ACL_ERROR_RT_MEMORY_ALLOCATION and mem is None
    assert "HBM" in acl.aclGetRecentErrMsg()
    _, dev = acl.aclrtMalloc(64)
    host = np.ones(16, np.float32)
    assert acl.aclrtMemcpy(dev, 64, host, 64, 99) == acl.ACL_ERROR_INVALID_PARAM
    assert "kind 99" in acl.aclGetRecentErrMsg()
    assert acl.aclrtMemcpy(dev, 64, host, 64, acl.ACL_MEMCPY_HOST_TO_DEVICE) == acl.ACL_SUCCESS
    assert acl.aclCreateTensor([4, 4], acl.ACL_FLOAT, [4], 0, acl.ACL_FORMAT_ND, [4, 4],
                               dev) is None
    assert "one stride per dimension" in acl.aclGetRecentErrMsg()
    assert acl.aclCreateTensor([4], acl.ACL_FLOAT, [1], 0, acl.ACL_FORMAT_ND, [4],
                               "memory") is None


def test_nan_and_inf_inputs_leak_no_warning():
    x = np.array([np.nan, np.inf, -np.inf, 6e4, -6e4, 0.0, 1.0, -1.0] * 8, np.float16)
    runs = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for chip in ("atlas-a2", "atlas-training"):
            for mode in ("timed", "functional"):
                runs.append(ops.silu_backward(x, x, chip=chip, mode=mode))
        with np.errstate(over="ignore"):
            big = x.astype(np.float32) * np.float32(3e38)
        runs.append(ops.silu_backward(big, big))
        xs = np.full((1, 16, 8, 8), np.inf, np.float16)
        ws = np.full((16, 16, 3, 3), np.nan, np.float16)
        for chip in ("atlas-a2", "atlas-training"):
            runs.append(ops.convolution_backward(xs, xs, ws, **CONV, chip=chip))
    assert [str(w.message) for w in caught] == []
    assert len(runs) == 7 and all(r.outputs for r in runs)
    grad = runs[0].outputs[next(iter(runs[0].outputs))]
    assert np.isnan(grad[0]) and grad[5] == 0     # NaN in, NaN out; silu'(0) x 0 = 0


@pytest.mark.parametrize("bad", [[1], "x", 3, 0, "", (("block_dim", 1),), 1.5])
@pytest.mark.parametrize("op", ["silu_backward", "convolution_backward",
                                "cross_entropy_loss_grad", "embedding_dense_backward",
                                "moe_token_permute_grad", "moe_token_permute",
                                "moe_token_unpermute", "moe_token_unpermute_grad"])
def test_tiling_not_a_dict_is_one_tiling_error_for_every_operator(op, bad):
    from npusim.cases import CASES

    case = CASES[op]
    args, kwargs = case.make(tuple(case.quick_shape), case.dtypes[0], case.parse_params({}),
                             np.random.default_rng(0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(TilingError, match="tiling overrides must be a dict of field: value"
                           f", got {type(bad).__name__}"):
            case.function()(*args, **kwargs, tiling=bad)
