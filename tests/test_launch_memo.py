"""Identical timing-only launches in one study run once (``npusim/engine/launch_memo.py``):
the records of a study are those of every point run on its own, and the key tells launches
apart by everything a timing-only run depends on."""

import numpy as np
import pytest

from npusim.engine import launch_memo
from npusim.engine.memory import GlobalMemory
from npusim.studies.executor import run_point, run_points
from npusim.studies.predict.study import _point
from npusim.studies.workload import load_workload, rescale

CHIPS = ("atlas-a2", "atlas-training")


def _points():
    """Two ResNet-50 calls whose activations share a shape (their TransData repeat), and a
    graph form (its cube kernels are the aclnn form's), on both chips, as predict runs them;
    and runs without a critical path, after the same launches with one (which they reuse) and
    before (which do not reuse theirs: they have no path to give)."""
    wl = rescale(load_workload("resnet50-backward"), 2)
    points = []
    for call, first in ((wl.calls[1], True), (wl.calls[2], False)):
        for chip in CHIPS:
            point = _point(call, chip, chip)
            bare = {**point, "explain": False}
            pair = [point, {**point, "form": "5hd"}, bare, {**bare, "form": "5hd"}]
            points += pair if first else pair[2:] + pair[:2]
    return points


def _same(record: dict) -> dict:
    return {k: v for k, v in record.items() if k != "wall_s"}


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_study_gives_the_records_of_points_run_alone(jobs):
    points = _points()
    assert any(p.get("form") == "5hd" for p in points)
    alone = [run_point(p) for p in points]
    assert not launch_memo.active()
    before = dict(launch_memo.COUNTS)
    together = run_points(points, jobs=jobs)
    assert [_same(r) for r in together] == [_same(r) for r in alone]
    assert all(r["status"] == "ok" for r in alone)
    if jobs == 1:   # the pool's workers count their own
        assert launch_memo.COUNTS["reused"] > before["reused"]


class _Kernel:
    reads_data = False


def test_the_key_is_the_launch_not_where_gm_put_it():
    from npusim import load_chip

    chip = load_chip("atlas-a2")

    def key(gm, x, y, **more):
        return launch_memo.launch_key(_Kernel, chip, 4, dict(x=x, y=y, **more), gm,
                                      ("K", "K", "ascendc"), (False, False))

    with launch_memo.scope():
        a, b = GlobalMemory(), GlobalMemory()
        b.tensor("pad", np.float16, 1000)                   # b's tensors sit further on
        xa, ya = a.tensor("x", np.float16, 256), a.tensor("y", np.float32, 64)
        xb, yb = b.tensor("x", np.float16, 256), b.tensor("y", np.float32, 64)
        k = key(a, xa, ya)
        assert k is not None and k == key(b, xb, yb)
        assert k != key(a, xa[16], ya)                      # another offset
        assert k != key(a, xa, xa)                          # an alias
        assert k != key(a, xa, ya, n=3) != key(a, xa, ya, n=3.0)
        assert k != key(a, xa, ya, t=np.arange(4)) != key(a, xa, ya, t=np.arange(1, 5))
        assert key(a, xa, ya, f=lambda: 0) is None          # not a kind the key knows
        assert key(a, xb, ya) is None                       # another GM's tensor
    assert key(a, xa, ya) is None                           # no scope: no key


def test_a_launch_without_a_trace_takes_a_traced_one_less_what_only_a_trace_gives():
    from npusim.cases import find_case
    from npusim.cases.run import run_case, same_launches

    case = find_case("silu_backward")

    def run(trace):
        return run_case(case, "atlas-a2", (4096,), "float16", {}, numerics=False,
                        sanitize=False, check=False, trace=trace).result

    alone = run(False)
    with same_launches():
        traced = run("path")
        before = launch_memo.COUNTS["reused"]
        bare = run(False)
        assert launch_memo.COUNTS["reused"] > before           # it took the traced launch's
    assert "peak_live_bytes" in traced.stats["kernels"][0]
    assert bare.cycles == alone.cycles
    assert bare.stats["kernels"] == alone.stats["kernels"]
