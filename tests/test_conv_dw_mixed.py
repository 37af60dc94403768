"""Conv3DBackpropFilterV2's own zeroing of its output (then SyncAll) and the deterministic
gradWeight reduction inside a mixed AIC/AIV kernel (issue 16, item 3)."""

import importlib

import numpy as np
import pytest
import torch

import npusim.engine.sequence as seq
from npusim import ops
from npusim.errors import GmWriteConflictError

cb = importlib.import_module("npusim.ops.convolution.backward")


@pytest.fixture
def kernels(monkeypatch):
    """Every kernel's own Result and ``ws`` argument by its instance name."""
    parts = {}
    launch = seq.OpRun.launch

    def spy(self, kernel_cls, **kw):
        r = launch(self, kernel_cls, **kw)
        parts[kw.get("name") or kernel_cls.__name__] = (r, kw["args"].get("ws"))
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
    r, _ = conv(tiling={"dw_k_parts": 2, "dw_v2": True})
    k = kernels["Conv3DBackpropFilterV2"][0]
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


@pytest.mark.parametrize("nd,tiling", [(3, {"dw_k_parts": 2, "dw_v2": True}),
                                       (3, {"dw_k_parts": 1, "dw_v2": True}),
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
        r, _ = conv(tiling={"dw_k_parts": 2, "dw_v2": True}, numerics=False, trace=False)
        return {s["op_type"]: s for s in r.stats["kernels"]}["Conv3DBackpropFilterV2"]

    zeroed = body()["body_cycles"]
    monkeypatch.setattr(cb.DwKernel, "zero_share", lambda self: None)
    assert body()["body_cycles"] < zeroed


def det2d(tiling=None, **kw):
    return conv(nd=2, n=4, sp=8, tiling={"dw_k_parts": 4, "deterministic": True} | (tiling or {}),
                **kw)


def test_deterministic_dw_on_a2_is_one_mixed_kernel(kernels):
    """No separate reduction kernel: between TransData(input) and TransData(gradWeight) runs
    only the MIX_AIC V2 kernel, and its vector cores did the fixed-order sums."""
    r, _ = det2d()
    ks = r.stats["kernels"]
    names = [k["name"] for k in ks]
    i, j = names.index("TransData(input.5hd)"), names.index("TransData(gradWeight)")
    assert [k["op_type"] for k in ks[i + 1:j]] == ["Conv3DBackpropFilterV2"]
    mixed = ks[i + 1]
    assert mixed["task_type"] == "MIX_AIC" and "ReduceDwPartials" not in names
    assert mixed["cores"] == 3 * mixed["blocks"]   # each cube core with its two vector cores
    k = kernels["Conv3DBackpropFilterV2"][0]
    adds = [rec for rec in k.tracer.records if rec[2].name == "add"]
    assert adds and {rec[1] for rec in adds} == {"V"}
    assert r.cycles == sum(k["wait_cycles"] + k["cycles"] for k in ks)


def test_mixed_dw_bits_do_not_depend_on_cores_or_timing():
    """Part order fixes the bits: 4 cube cores (one lane) or 24 (six lanes), with jitter."""
    base, (x, w, dy) = det2d()
    ref = base.outputs["gradWeight"]
    for tiling, jitter in (({"dw_block_dim": 4}, None), ({"dw_block_dim": 7}, (3, 40.0)),
                           ({}, (4, 40.0))):
        r, _ = det2d(tiling, jitter=jitter)
        np.testing.assert_array_equal(r.outputs["gradWeight"].view(np.uint16),
                                      ref.view(np.uint16))
    np.testing.assert_allclose(ref.astype(np.float32), torch_dw(x, w, dy), rtol=2e-3,
                               atol=2e-2)


def slot_accesses(k, ws) -> list:
    """(start, end, is write, GM span) of every access to the partials' workspace."""
    lo, hi = ws.addr, ws.addr + ws.size * 4
    acc = [(rec[4], rec[5], rec[2].gm_write, rec[2].gm_span()) for rec in k.tracer.records
           if getattr(rec[2], "touches_gm", False)]
    acc = [a for a in acc if a[3][0] < hi and lo < a[3][1]]
    assert any(a[2] for a in acc) and not all(a[2] for a in acc)
    return acc


def slot_conflicts(k, ws) -> int:
    """Pairs of accesses to the same bytes of the partials' workspace, one a write, that
    overlap in time (the sanitizer watches on-chip buffers only; GM is checked here)."""
    acc = slot_accesses(k, ws)
    return sum(1 for i, a in enumerate(acc) for b in acc[i + 1:]
               if (a[2] or b[2]) and a[3][0] < b[3][1] and b[3][0] < a[3][1]
               and a[0] < b[1] and b[0] < a[1])


def stale_reads(k, ws) -> int:
    """Reads of workspace bytes no write had finished with before the read began."""
    acc = slot_accesses(k, ws)
    writes = [a for a in acc if a[2]]
    return sum(1 for r in acc if not r[2] and not any(
        w[1] <= r[0] and w[3][0] < r[3][1] and r[3][0] < w[3][1] for w in writes))


@pytest.mark.parametrize("jitter", [None, (5, 60.0)])
def test_mixed_dw_slot_writes_and_reads_never_overlap(kernels, jitter):
    det2d(jitter=jitter)
    assert slot_conflicts(*kernels["Conv3DBackpropFilterV2"]) == 0
    assert stale_reads(*kernels["Conv3DBackpropFilterV2"]) == 0


def test_mixed_dw_without_its_barriers_races(kernels, monkeypatch):
    """Without the phase barriers the vector cores read slots while, or before, the cube
    cores write them, and gradWeight comes out wrong; the sanitizer stops such a run at the
    cores that write the same GM bytes with nothing between them."""
    good, _ = det2d()
    mixed = importlib.import_module("npusim.ops.convolution.dw_mixed")
    monkeypatch.setattr(mixed, "sync_all", lambda: None)
    with pytest.raises(GmWriteConflictError, match="write the same bytes"):
        det2d()
    bad, _ = det2d(sanitize=False)
    k = kernels["Conv3DBackpropFilterV2"]
    assert slot_conflicts(*k) + stale_reads(*k) > 0
    assert not np.array_equal(bad.outputs["gradWeight"], good.outputs["gradWeight"])


def test_mixed_dw_needs_a_core_per_part():
    with pytest.raises(Exception, match="dw_block_dim = 3 below dw_k_parts = 4"):
        det2d({"dw_block_dim": 3})


def test_mixed_dw_parts_follow_a_given_block_dim():
    r, _ = conv(nd=2, n=4, sp=8, tiling={"deterministic": True, "dw_block_dim": 3})
    assert (r.tiling.dw_k_parts, r.tiling.dw_block_dim) == (3, 3)


def test_mixed_and_zeroing_kernels_run_in_functional_mode():
    for run in (det2d, lambda **kw: conv(tiling={"dw_k_parts": 2}, **kw)):
        timed, _ = run()
        functional, _ = run(mode="functional")
        np.testing.assert_array_equal(functional.outputs["gradWeight"].view(np.uint16),
                                      timed.outputs["gradWeight"].view(np.uint16))
