"""The ResNet-50 training-step workload against the architecture it comes from.

``tests/resnet50_step.py`` writes every layer of ResNet-50 v1.5 out from its layer sizes; the
shipped ``resnet50-train-step.toml`` must be exactly what it generates, and the generated step
must have the architecture's published size: 25,557,032 parameters in 161 tensors (torchvision's
``resnet50``) and 4.09 G multiply-adds an image in its convolutions and fully connected layer
(He et al. 2016 give 3.8 G for v1; v1.5's strided 3x3 adds about 0.3 G).
"""

from math import prod

import moe_layer_step as moe
import resnet50_step as step


def test_the_shipped_workload_is_what_the_architecture_generates():
    assert step.WORKLOAD.read_text(encoding="utf-8") == step.toml_text(step.build())


def test_the_step_has_resnet50s_parameters():
    s = step.build()
    assert len(s.params) == 161
    assert sum(n for _, n in s.params) == 25_557_032


def _macs(op, shape, params) -> int:
    dims = tuple(map(int, shape.split("x")))
    p = dict(params)
    if op == "convolution":
        n, cin, h, w = dims
        cout, k = map(int, p["weight"].split("x"))
        s, pad = int(p["stride"]), int(p["padding"])
        ho, wo = (h + 2 * pad - k) // s + 1, (w + 2 * pad - k) // s + 1
        return n * cout * ho * wo * cin * k * k
    if op == "matmul":
        return prod(dims)
    return 0


def test_the_forward_pass_has_resnet50s_multiply_adds():
    forward = [c for c in step.build().calls if c[0] == "forward"]
    macs = sum(_macs(op, shape, params) for _, op, shape, _, params, *_ in forward)
    per_image = macs / step.BATCH
    assert abs(per_image / 4.09e9 - 1) < 0.015, per_image


def test_every_forward_layer_has_its_backward():
    calls = step.build().calls
    count = {}
    for phase, op, *_ in calls:
        count[(phase, op)] = count.get((phase, op), 0) + 1
    assert count[("forward", "convolution")] == count[("backward", "convolution_backward")] == 53
    assert count[("forward", "batch_norm")] == count[("backward", "batch_norm_backward")] == 53
    assert count[("forward", "relu")] == count[("backward", "threshold_backward")] == 49
    assert count[("forward", "add")] == count[("backward", "add")] == 16


def _gemm_flops(op, shape, params) -> int:
    dims = tuple(map(int, shape.split("x")))
    p = dict(params)
    if op == "matmul":
        return 2 * prod(dims)
    if op == "grouped_matmul":
        return 2 * prod(dims) * int(p["n"])
    return 0


def test_the_moe_layer_workload_is_what_its_generator_writes():
    assert moe.WORKLOAD.read_text(encoding="utf-8") == moe.toml_text(moe.build())


def test_every_gemm_of_the_moe_layer_has_its_two_gradients():
    """Each GEMM's backward is two GEMMs of its size (by its input, by its weight)."""
    flops = {"forward": 0, "backward": 0}
    for phase, op, shape, _, params, *_ in moe.build().calls:
        flops[phase] += _gemm_flops(op, shape, params)
    assert flops["backward"] == 2 * flops["forward"]
    per_token = flops["forward"] / moe.T
    experts = moe.TOPK + 1     # routed and shared, each gate + up and down
    assert per_token == 2 * (moe.H * moe.QKV + moe.QKV // 3 * moe.H + moe.H * moe.E
                             + experts * 3 * moe.H * moe.F)
