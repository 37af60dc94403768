"""Per-kernel fixed costs of an operator's sequence (npusim/engine/kernel_costs.py), the MemSet
kernel before atomic adds (ops/common/memset.py) and the kernel names as CANN names them
(issue 16)."""

import importlib
import json
import math
from pathlib import Path

import numpy as np
import pytest

import npusim
from npusim import ops
from npusim.chip import models_dir
from npusim.engine.kernel_costs import START_KEYS
from trace_check import check_trace

ZEROING = ("MemSet", "ZerosLike")


def conv(chip="atlas-a2", nd=2, tiling=None, transposed=False, **kw):
    rng = np.random.default_rng(0)
    sp, k = (6,) * nd, (3,) * nd
    x = rng.standard_normal((2, 5) + sp).astype(np.float16)
    w = rng.standard_normal((5 if transposed else 7, 7 if transposed else 5) + k)
    dy = rng.standard_normal((2, 7) + sp).astype(np.float16)
    return ops.convolution_backward(dy, x, w.astype(np.float16), bias_sizes=[7],
                                    stride=[1] * nd, padding=[1] * nd, dilation=[1] * nd,
                                    transposed=transposed, output_padding=[0] * nd,
                                    chip=chip, tiling=tiling, **kw)


def silu(chip="atlas-a2", n=4096, **kw):
    rng = np.random.default_rng(1)
    dy, x = (rng.standard_normal(n).astype(np.float16) for _ in range(2))
    return ops.silu_backward(dy, x, chip=chip, **kw)


def embedding(chip="atlas-a2", **kw):
    rng = np.random.default_rng(2)
    grad = rng.standard_normal((64, 32)).astype(np.float16)
    idx = rng.integers(0, 40, 64).astype(np.int64)
    return ops.embedding_dense_backward(grad, idx, num_weights=40, chip=chip, **kw)


def cross_entropy(chip="atlas-a2"):
    rng = np.random.default_rng(3)
    lp = np.log(rng.dirichlet(np.ones(50), 8)).astype(np.float32)
    return ops.cross_entropy_loss_grad(np.float32(1.0), lp, rng.integers(0, 50, 8), chip=chip)


def unzeroed_atomic_kernels(stats) -> list[str]:
    """Kernels that add into GM atomically with no zeroing kernel (MemSet, ZerosLike) before."""
    seen, bad = False, []
    for k in stats["kernels"]:
        if k["atomic_add_bytes"] and not seen:
            bad.append(k["name"])
        seen = seen or k["op_type"] in ZEROING
    return bad


def expected_costs(r):
    """Per kernel (launch, wait) cycles from the chip model, and the operator's cycles."""
    c, total, out = r.chip, 0, []
    for i, k in enumerate(r.stats["kernels"]):
        fixed = getattr(c, START_KEYS[k["impl"]])
        launch = fixed + c.kernel_start_per_block_cycles * k["blocks"]
        wait = c.kernel_gap_cycles if i else 0
        out.append((launch, wait))
        total += wait + launch + k["body_cycles"]
    return out, total


RUNS = {"silu-a2": lambda: silu(), "silu-training": lambda: silu("atlas-training"),
        "conv2d-a2": lambda: conv(), "conv3d-a2": lambda: conv(nd=3),
        "conv2d-training": lambda: conv("atlas-training"),
        "conv2d-inference": lambda: conv("atlas-inference"),
        "embedding-a2": lambda: embedding(), "ce-a2": lambda: cross_entropy()}


@pytest.mark.parametrize("case", list(RUNS))
def test_op_cycles_are_kernels_plus_fixed_costs(case):
    r = RUNS[case]()
    want, total = expected_costs(r)
    assert r.cycles == total
    for k, (launch, wait) in zip(r.stats["kernels"], want, strict=True):
        assert (k["launch_cycles"], k["wait_cycles"]) == (launch, wait), k
        assert k["cycles"] == launch + k["body_cycles"]
        assert launch > 0 and k["tiling_bytes"] > 0
    starts = [k["start_cycle"] for k in r.stats["kernels"]]
    assert starts == sorted(starts) and starts[0] == 0


def test_tiling_read_is_a_gm_read_per_line_on_every_core():
    r = silu()
    k = r.stats["kernels"][0]
    lines = math.ceil(k["tiling_bytes"] / r.chip.tiling_line_bytes)
    assert r.stats["instruction_counts"]["gm_get_value"] == lines * k["cores"]
    assert k["body_cycles"] >= r.chip.gm_latency_cycles * lines


def edited_chip(tmp_path, **changes) -> Path:
    text = (models_dir() / "atlas-a2.toml").read_text()
    for key, value in changes.items():
        old = next(line for line in text.splitlines() if line.startswith(f"{key} = "))
        text = text.replace(old, f"{key} = {value}")
    path = tmp_path / "a2-edited.toml"
    path.write_text(text)
    return path


def test_fixed_costs_come_from_the_chip_model(tmp_path):
    base = conv(numerics=False, trace=False)
    c = base.chip
    path = edited_chip(tmp_path, kernel_start_cycles=c.kernel_start_cycles + 1000,
                       tbe_kernel_start_cycles=c.tbe_kernel_start_cycles + 300,
                       tik_kernel_start_cycles=c.tik_kernel_start_cycles + 200,
                       kernel_gap_cycles=c.kernel_gap_cycles + 500)
    moved = conv(chip=str(path), numerics=False, trace=False)
    impls = [k["impl"] for k in base.stats["kernels"]]
    n, tbe, tik = len(impls), impls.count("tbe"), impls.count("tik")
    assert tbe and tik and tbe + tik < n   # Conv2D (TBE), TransData (TIK), ReduceSum (Ascend C)
    assert moved.cycles - base.cycles == (1000 * (n - tbe - tik) + 300 * tbe + 200 * tik
                                          + 500 * (n - 1))


def test_trace_shows_launch_and_gap_slices(tmp_path):
    r = conv()
    data = check_trace(r, tmp_path / "conv.json")
    us = 1e6 / r.chip.clock_hz
    for name, key in (("launch", "launch_cycles"), ("stream gap", "wait_cycles")):
        slices = [e for e in data["traceEvents"] if e["ph"] == "X" and e["name"] == name]
        for k in r.stats["kernels"]:
            mine = [e for e in slices if e["args"]["kernel"] == k["name"]]
            if not k[key]:
                assert not mine
                continue
            assert len(mine) == k["cores"]
            assert all(abs(e["dur"] - k[key] * us) < 1e-5 for e in mine)
    assert json.dumps(r.stats["kernels"])   # plain JSON


def test_memset_before_the_atomic_dw_kernel():
    r = conv(tiling={"dw_k_parts": 2})
    types = [k["op_type"] for k in r.stats["kernels"]]
    i = types.index("Conv2DBackpropFilter")
    assert types[i - 1] == "MemSet" and r.stats["kernels"][i]["atomic_add_bytes"] > 0
    assert not unzeroed_atomic_kernels(r.stats)
    plain = conv(tiling={"dw_k_parts": 1})
    assert "MemSet" not in [k["op_type"] for k in plain.stats["kernels"]]
    assert r.cycles > plain.cycles - plain.stats["kernels"][0]["cycles"]


def test_missing_memset_is_caught(monkeypatch):
    cb = importlib.import_module("npusim.ops.convolution.backward")
    monkeypatch.setattr(cb, "launch_memset", lambda run, dst, total: None)
    r = conv(tiling={"dw_k_parts": 2})
    assert unzeroed_atomic_kernels(r.stats) == ["Conv2DBackpropFilter"]


def test_memset_zeroes_its_target():
    """The MemSet kernel really writes zeros: dirty the workspace first, gradWeight is right."""
    from npusim.engine.sequence import OpRun
    from npusim.ops.common.memset import launch_memset

    run = OpRun("atlas-a2")
    ws = run.gm.tensor("ws", np.float32, 1000, np.full(1000, 7.0, np.float32))
    launch_memset(run, ws, 1000)
    r = run.result({"ws": (ws, (1000,))})
    assert not r.outputs["ws"].any()
    assert [k["op_type"] for k in r.stats["kernels"]] == ["MemSet"]


@pytest.mark.parametrize("variant", ["sorted", "small_dim"])
def test_embedding_atomics_follow_zeros_like(variant):
    r = embedding(variant=variant)
    assert any(k["atomic_add_bytes"] for k in r.stats["kernels"])
    assert not unzeroed_atomic_kernels(r.stats)


@pytest.mark.parametrize("nd,transposed,chip,dx,dw", [
    (1, False, "atlas-a2", "Conv2DBackpropInput", "Conv2DBackpropFilter"),
    (2, False, "atlas-a2", "Conv2DBackpropInput", "Conv2DBackpropFilter"),
    (3, False, "atlas-a2", "Conv3DBackpropInputV2", "Conv3DBackpropFilter"),
    (2, True, "atlas-a2", "Conv2D", "Conv2DBackpropFilter"),
    (2, False, "atlas-training", "Conv2DBackpropInput", "Conv2DBackpropFilter"),
])
def test_conv_kernel_names(nd, transposed, chip, dx, dw):
    r = conv(chip, nd, transposed=transposed, numerics=False, trace=False)
    types = [k["op_type"] for k in r.stats["kernels"]]
    assert dx in types and dw in types and types[-1] == "ReduceSum"
    assert set(types) <= {dx, dw, "TransData", "MemSet", "ReduceSum"}


def test_deterministic_dw_on_a2_is_the_v2_kernel():
    r = conv(tiling={"dw_k_parts": 2, "deterministic": True}, numerics=False, trace=False)
    types = [k["op_type"] for k in r.stats["kernels"]]
    assert "Conv3DBackpropFilterV2" in types and "MemSet" not in types


def test_other_ops_kernel_names():
    assert [k["op_type"] for k in silu().stats["kernels"]] == ["SiluGrad"]
    assert [k["op_type"] for k in cross_entropy().stats["kernels"]] == ["CrossEntropyLossGrad"]
    types = [k["op_type"] for k in embedding(variant="sorted").stats["kernels"]]
    assert types == ["ZerosLike", "Cast", "Cast", "Sort", "EmbeddingDenseGradV2", "Cast"]
    task = {k["op_type"]: k["task_type"] for k in conv().stats["kernels"]}
    assert task["TransData"] == "AI_VECTOR_CORE" and task["Conv2DBackpropInput"] == "AI_CORE"


def test_small_op_moves_toward_hardware():
    """SiluBackward of 4096 fp16 elements: a few us with the fixed costs (it was ~0.6 us)."""
    r = silu()
    assert r.time_us > 1.5
    assert r.stats["kernels"][0]["launch_cycles"] > r.stats["kernels"][0]["body_cycles"]


def test_functional_mode_has_no_fixed_costs():
    r = silu(mode="functional")
    assert r.cycles == 0 and r.stats["kernels"][0]["launch_cycles"] == 0


def test_every_chip_model_has_sourced_launch_costs():
    for name in npusim.chip.chips():
        c = npusim.load_chip(name)
        assert c.kernel_start_cycles > 0 and c.kernel_gap_cycles > 0
        assert all(f"launch.{k}" in c.sources for k in ("kernel_start_cycles",
                   "kernel_start_per_block_cycles", "kernel_gap_cycles", "tiling_line_bytes"))
