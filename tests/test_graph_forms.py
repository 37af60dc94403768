"""The operators' graph forms on NC1HWC0 (npusim/cases/five_hd.py): each op family's kernels on
activations already in 5HD, no TransData of an activation in or out; the outputs, read back
as NCHW, bit-identical to the golden and to the aclnn run where the kernels are the same, and
within the precision standard of torch (float64)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812

from npusim.cases import CASES
from npusim.cases.run import run_case
from npusim.errors import ParamError
from npusim.ops.common.five_hd import from_5hd, to_5hd
from op_check import assert_bit_equal, assert_close, to_torch

CHIPS = ["atlas-training", "atlas-a2"]
# set before the runs: fp16 convolution as tests/test_op_convolution.py (3e-3 of the largest
# |x| * |w| sum), batch norm as tests/test_op_batch_norm.py, fp16 add half an ulp
CONV_TOL, BN_RTOL, ADD_RTOL = 3e-3, 1e-3, 5e-4


def run_both(name: str, chip: str, shape: tuple, params: dict):
    """(the graph form's run, checked against the golden; the aclnn run)."""
    case = CASES[name]
    parsed = case.parse_params(params)
    graph = run_case(case, chip, shape, "float16", parsed, form="5hd")
    assert graph.ok, graph.checks
    assert all("bit-identical" in text for _, _, text in graph.checks), graph.checks
    aclnn = run_case(case, chip, shape, "float16", parsed, check=False)
    return graph, aclnn


def nchw(run, name: str) -> np.ndarray:
    return run.case.five_hd.to_nchw(run.result, run.args, run.kwargs).outputs[name]


def kernel_names(run) -> list:
    return [k["name"] for k in run.result.stats["kernels"]]


def no_activation_transdata(run) -> bool:
    return all(not k.startswith("TransData") or "eight" in k for k in kernel_names(run))


@pytest.mark.parametrize("chip", CHIPS)
def test_convolution_on_5hd_is_the_aclnn_output_and_torchs(chip):
    params = {"weight": "20x3", "stride": "2", "padding": "1"}
    graph, aclnn = run_both("convolution", chip, (2, 24, 9, 9), params)
    assert kernel_names(graph) == ["TransData(weight)", "Conv2D"]
    assert graph.result.outputs["output"].shape == (2, 2, 5, 5, 16)
    got = nchw(graph, "output")
    assert_bit_equal(got, aclnn.result.outputs["output"], "output")
    x, w = graph.args
    ref = F.conv2d(to_torch(x), to_torch(w), None, 2, 1).numpy()
    scale = float(np.max(F.conv2d(to_torch(np.abs(x)), to_torch(np.abs(w)), None, 2, 1).numpy()))
    assert_close(got, ref, 0.0, CONV_TOL * scale, "output")
    assert not graph.result.outputs["output"][:, 1, ..., 4:].any()   # channels 20..31 zero
    assert graph.result.cycles < aclnn.result.cycles


@pytest.mark.parametrize("chip", CHIPS)
def test_convolution_backward_on_5hd_is_the_aclnn_output_and_torchs(chip):
    params = {"weight": "20x3", "stride": "2", "padding": "1", "output_mask": "1,1,0"}
    graph, aclnn = run_both("convolution_backward", chip, (2, 24, 9, 9), params)
    names = kernel_names(graph)
    assert no_activation_transdata(graph) and "TransData(weight)" in names
    assert {"Conv2DBackpropInput", "Conv2DBackpropFilter", "TransData(gradWeight)"} <= set(names)
    dx = nchw(graph, "gradInput")
    assert_bit_equal(dx, aclnn.result.outputs["gradInput"], "gradInput")
    assert_bit_equal(graph.result.outputs["gradWeight"], aclnn.result.outputs["gradWeight"],
                     "gradWeight")
    dy, x, w = (to_torch(a) for a in graph.args)
    ref_dx = torch.nn.grad.conv2d_input(x.shape, w, dy, 2, 1).numpy()
    ref_dw = torch.nn.grad.conv2d_weight(x, w.shape, dy, 2, 1).numpy()
    for got, ref, name in ((dx, ref_dx, "gradInput"),
                           (graph.result.outputs["gradWeight"], ref_dw, "gradWeight")):
        assert_close(got, ref, 0.0, CONV_TOL * float(np.max(np.abs(ref))) * 4, name)


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("c", [20, 64])
def test_batch_norm_on_5hd_and_its_backward_match_torch(chip, c):
    graph, aclnn = run_both("batch_norm", chip, (3, c, 5, 7), {})
    assert kernel_names(graph) == ["BNTrainingReduce", "BNTrainingUpdate"]
    x, w, b, rm, rv = graph.args
    y, mean, invstd = torch.ops.aten.native_batch_norm(
        to_torch(x), to_torch(w), to_torch(b), to_torch(rm), to_torch(rv), True, 0.1, 1e-5)
    got = nchw(graph, "output")
    assert_close(got, y.numpy(), BN_RTOL, 1e-5 * float(y.abs().max()), "output")
    assert_close(graph.result.outputs["saveMean"], mean.numpy(), 1e-5, 1e-6, "saveMean")
    if chip == "atlas-training" or c < 64:     # the same pair as aclnn's: the same bits
        assert_bit_equal(got, aclnn.result.outputs["output"], "output")
    graph, aclnn = run_both("batch_norm_backward", chip, (3, c, 5, 7), {})
    assert kernel_names(graph) == ["BNTrainingUpdateGrad", "BNTrainingReduceGrad"]
    dy, x, w, rm, rv, mean, invstd = (to_torch(a) for a in graph.args)
    dx, dw, db = torch.ops.aten.native_batch_norm_backward(
        dy, x, w, rm, rv, mean, invstd, True, 1e-5, [True, True, True])
    got = nchw(graph, "gradInput")
    assert_close(got, dx.numpy(), BN_RTOL, 1e-5 * float(dx.abs().max()), "gradInput")
    assert_close(graph.result.outputs["gradBias"], db.numpy(), 1e-5,
                 1e-6 * float(db.abs().max()), "gradBias")
    assert_bit_equal(got, aclnn.result.outputs["gradInput"], "gradInput")


@pytest.mark.parametrize("chip", CHIPS)
def test_elementwise_on_5hd_runs_over_the_padded_elements(chip):
    shape = (2, 20, 3, 5)             # C = 20: 32 channels in NC1HWC0
    for name, out, ref in (("relu", "out", lambda a: torch.relu(a[0])),
                           ("threshold_backward", "gradInput",
                            lambda a: torch.ops.aten.threshold_backward(a[0], a[1], 0.0)),
                           ("add", "out", lambda a: a[0] + a[1])):
        graph, aclnn = run_both(name, chip, shape, {})
        assert graph.result.outputs[out].shape == (2, 2, 3, 5, 16)
        assert not graph.result.outputs[out][:, 1, ..., 4:].any()
        got = nchw(graph, out)
        assert_bit_equal(got, aclnn.result.outputs[out], out)
        want = ref([to_torch(a) for a in graph.args]).numpy()
        assert_close(got, want, ADD_RTOL if name == "add" else 0.0, 0.0, out)
        assert CASES[name].five_hd.pads(shape, "float16", {})
        assert not CASES[name].five_hd.pads((2, 32, 3, 5), "float16", {})


def test_the_host_layout_round_trips():
    a = np.arange(2 * 20 * 3 * 5, dtype=np.float16).reshape(2, 20, 3, 5)
    five = to_5hd(a)
    assert five.shape == (2, 2, 3, 5, 16) and five[0, 0, 1, 2, 3] == a[0, 3, 1, 2]
    assert np.array_equal(from_5hd(five, 20), a)


def test_mask_pool_pair_on_5hd_is_the_aclnn_output_and_torchs():
    """The training series' stem pool in graph mode: one TBE kernel each, no Cast or TransData;
    out and gradInput read back equal the aclnn runs' bit for bit and torch's pool."""
    params = {"kernel_size": "3", "stride": "2", "padding": "1"}
    graph, aclnn = run_both("max_pool2d_with_mask", "atlas-training", (2, 20, 9, 11), params)
    assert kernel_names(graph) == ["MaxPoolWithArgmaxV1"]
    got = nchw(graph, "out")
    assert_bit_equal(got, aclnn.result.outputs["out"], "out")
    assert_bit_equal(graph.result.outputs["indices"], aclnn.result.outputs["indices"], "mask")
    ref = F.max_pool2d(to_torch(graph.args[0]).float(), 3, 2, 1).numpy()
    assert np.array_equal(got.astype(np.float32), ref)
    assert graph.result.cycles < aclnn.result.cycles
    back, aclnn_back = run_both("max_pool2d_with_mask_backward", "atlas-training",
                                (2, 20, 9, 11), params)
    assert kernel_names(back) == ["MaxPoolGradWithArgmaxV1"]
    assert_bit_equal(nchw(back, "gradInput"), aclnn_back.result.outputs["gradInput"],
                     "gradInput")
    assert back.result.cycles < aclnn_back.result.cycles
    case = CASES["max_pool2d_with_mask"]
    with pytest.raises(ParamError, match="takes FLOAT16") as err:
        run_case(case, "atlas-training", (1, 16, 6, 6), "float32",
                 case.parse_params(params), form="5hd", numerics=False)
    assert err.value.code == 161002
    assert case.five_hd.applies((1, 16, 6, 6), "float32", case.parse_params(params))


@pytest.mark.parametrize("name,params,dtype,match", [
    ("convolution", {"weight": "16x3", "groups": "2"}, "float16", "groups = 2"),
    ("convolution", {"weight": "16x3"}, "float32", "activations in float32"),
    ("convolution_backward", {"weight": "16x3", "output_mask": "1,1,1"}, "float16",
     "without gradBias"),
])
def test_the_graph_form_refuses_what_it_does_not_cover(name, params, dtype, match):
    case = CASES[name]
    with pytest.raises(ParamError, match=match) as err:
        run_case(case, "atlas-a2", (1, 16, 6, 6), dtype, case.parse_params(params),
                 form="5hd", numerics=False)
    assert err.value.code == 161002
    assert case.five_hd.applies((1, 16, 6, 6), dtype, case.parse_params(params))
