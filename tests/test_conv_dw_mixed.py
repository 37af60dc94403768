"""Conv3DBackpropFilterV2's own zeroing of its output (then SyncAll) and the deterministic
gradWeight reduction inside a mixed AIC/AIV kernel (issue 16, item 3)."""

import importlib

import numpy as np
import pytest
import torch

import npusim.sequence as seq
from npusim import ops

cb = importlib.import_module("npusim.ops.convolution_backward")


@pytest.fixture
def kernels(monkeypatch):
    """Every kernel's own Result by its instance name, as the operator launches them."""
    parts = {}
    launch = seq.OpRun.launch

    def spy(self, kernel_cls, **kw):
        r = launch(self, kernel_cls, **kw)
        parts[kw.get("name") or kernel_cls.__name__] = r
        return r

    monkeypatch.setattr(seq.OpRun, "launch", spy)
    return parts


def conv(nd=3, chip="atlas-a2", tiling=None, n=2, c=(5, 7), sp=6, **kw):
    rng = np.random.default_rng(5)
    cin, cout = c
    x = rng.standard_normal((n, cin) + (sp,) * nd).astype(np.float16)
    w = rng.standard_normal((cout, cin) + (3,) * nd).astype(np.float16)
    dy = rng.standard_normal((n, cout) + (sp,) * nd).astype(np.float16)
    r = ops.convolution_backward(dy, x, w, bias_sizes=[cout], stride=[1] * nd,
                                 padding=[1] * nd, dilation=[1] * nd, output_padding=[0] * nd,
                                 output_mask=(False, True, False), chip=chip, tiling=tiling,
                                 **kw)
    return r, (x, w, dy)


def torch_dw(x, w, dy):
    xt = torch.tensor(x.astype(np.float32))
    wt = torch.tensor(w.astype(np.float32), requires_grad=True)
    f = torch.nn.functional.conv3d if x.ndim == 5 else torch.nn.functional.conv2d
    f(xt, wt, padding=1).backward(torch.tensor(dy.astype(np.float32)))
    return wt.grad.numpy()


def dirty_workspaces(monkeypatch):
    """Every fp32 workspace starts full of 7s (GM is not zero on the chip)."""

    def dirty(self, name, dtype, count):
        self.workspace += count * np.dtype(dtype).itemsize
        init = np.full(count, 7, dtype) if np.dtype(dtype) == np.float32 else None
        return self.run.gm.tensor(name, dtype, count, init)

    monkeypatch.setattr(cb._Ctx, "tensor", dirty)


def test_3d_atomic_dw_zeroes_its_output_before_the_first_add(kernels):
    r, _ = conv(tiling={"dw_k_parts": 2})
    k = kernels["Conv3DBackpropFilterV2"]
    assert "MemSet" not in [s["op_type"] for s in r.stats["kernels"]]
    recs = k.tracer.records
    syncs = [rec for rec in recs if rec[2].name == "sync_all"]
    assert len(syncs) == len({rec[0] for rec in recs})   # one per core
    barrier = min(rec[5] for rec in syncs)   # every core has met by then
    zeros = [rec for rec in recs if rec[2].name == "fixpipe" and not rec[2].atomic]
    adds = [rec for rec in recs if rec[2].name == "fixpipe" and rec[2].atomic]
    per = 3 * 16 * 144   # kd x (7 grad channels -> 16) x (5 -> 16 feature channels x 9 taps)
    assert sum(rec[2].dst_elements for rec in zeros) == per
    assert all(rec[5] <= barrier for rec in zeros)
    assert adds and all(rec[4] >= barrier for rec in adds)
    spans = sorted(rec[2].gm_span() for rec in zeros)   # the output, once, in one piece
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))
    assert spans[-1][1] - spans[0][0] == per * 4
    assert all(spans[0][0] <= rec[2].gm_span()[0] and rec[2].gm_span()[1] <= spans[-1][1]
               for rec in adds)   # every partial lands in the zeroed output


@pytest.mark.parametrize("nd,tiling", [(3, {"dw_k_parts": 2}), (3, {"dw_k_parts": 1}),
                                       (2, {"dw_k_parts": 2, "deterministic": True})])
def test_v2_dw_zeroing_is_real(monkeypatch, nd, tiling):
    """A dirty output comes out right: the kernel's zeroing, not a zero GM, clears it."""
    dirty_workspaces(monkeypatch)
    r, (x, w, dy) = conv(nd=nd, tiling=tiling)
    np.testing.assert_allclose(r.outputs["gradWeight"].astype(np.float32), torch_dw(x, w, dy),
                               rtol=2e-3, atol=2e-2)


def test_3d_dw_zeroing_is_charged(monkeypatch):
    """The zeroing costs the V2 kernel cycles (the same run without it is shorter)."""
    def body():
        r, _ = conv(tiling={"dw_k_parts": 2}, numerics=False, trace=False)
        return {s["op_type"]: s for s in r.stats["kernels"]}["Conv3DBackpropFilterV2"]

    zeroed = body()["body_cycles"]
    monkeypatch.setattr(cb.DwKernel, "zero_share", lambda self: None)
    assert body()["body_cycles"] < zeroed
