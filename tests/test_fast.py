"""Fast runs (npusim/engine/fast.py, npusim/dsl/steady.py): timing only, the repeated periods of
steady tile loops left out, each pipe advanced at the pace of the periods it ran.

The bound on a fast run's cycles (5% of the whole run's, operator and every kernel) was set
before these cases ran; the shapes are not those the mode was developed on (the batch-32 and
batch-256 ResNet-50 3x3 point). ``npusim bench --group fast`` measures it on every validation
row.
"""

import importlib

import pytest

from npusim.cases import CASES
from npusim.cases.run import run_case
from npusim.errors import NpusimError

BOUND = 0.05
steady = importlib.import_module("npusim.dsl.steady")

CONV = {chip: ("convolution_backward", (batch, 64, 28, 28), {"weight": "64x3", "padding": "1",
                                                           "output_mask": "1,1,0"})
        for chip, batch in (("atlas-training", 64), ("atlas-a2", 128))}


def _run(chip, op, shape, params, fast):
    case = CASES[op]
    return run_case(case, chip, shape, case.dtypes[0], case.parse_params(params),
                    numerics=False, sanitize=False, trace="path", check=False, fast=fast)


# gradWeight's loop over a task's images (one task per core or few): set, with the bound
# above, before these ran
IMAGES = {"stem": ("convolution_backward", (32, 3, 112, 112),
                   {"weight": "64x7", "padding": "3", "stride": "2", "output_mask": "0,1,0"}),
          "downsample": ("convolution_backward", (64, 256, 28, 28),
                         {"weight": "512x1", "padding": "0", "stride": "2",
                          "output_mask": "1,1,0"})}
CASES_RUN = [(chip, CONV[chip]) for chip in CONV] + [
    (chip, IMAGES[name]) for name in IMAGES for chip in ("atlas-training", "atlas-a2")]


@pytest.mark.parametrize(("chip", "point"), CASES_RUN,
                         ids=[f"{c}-{p[1][0]}x{p[1][1]}x{p[1][2]}" for c, p in CASES_RUN])
def test_fast_conv_within_bound_and_counts_every_instruction(chip, point):
    whole, fast = (_run(chip, *point, fast=f).result for f in (False, True))
    assert fast.stats["instructions"] == whole.stats["instructions"]
    assert fast.stats["instruction_counts"] == whole.stats["instruction_counts"]
    left = sum(k.get("fast", {}).get("instructions_left_out", 0)
               for k in fast.stats["kernels"])
    assert left > 0                                      # it did leave iterations out
    assert abs(fast.cycles - whole.cycles) <= BOUND * whole.cycles
    for a, b in zip(whole.stats["kernels"], fast.stats["kernels"], strict=True):
        assert a["name"] == b["name"]
        assert abs(b["cycles"] - a["cycles"]) <= BOUND * a["cycles"], a["name"]
    path = fast.critical_path()
    assert abs(sum(path.by_what.values()) - path.cycles) < 1e-6 * path.cycles
    assert "steady state" not in path.by_what        # shared out among the others


def test_fast_needs_timing_only():
    case = CASES["silu_backward"]
    for numerics, sanitize in ((True, False), (False, True)):
        with pytest.raises(NpusimError, match="timing only"):
            run_case(case, "atlas-a2", (4096,), "float16", {}, numerics=numerics,
                     sanitize=sanitize, check=False, fast=True)


def test_small_loops_are_not_shortened():
    """A point whose loops end before a period is seen runs whole: the same cycles."""
    op, shape, params = "convolution_backward", (1, 16, 8, 8), {"weight": "16x3"}
    whole, fast = (_run("atlas-a2", op, shape, params, fast=f).result for f in (False, True))
    assert fast.cycles == whole.cycles
    assert "fast" not in fast.stats


def test_period_and_ahead():
    hist = [(j, sig, 0, 0) for j, sig in enumerate("abcbcbc")]
    keys = list("abcbcbcbcbcX")
    assert steady._period(hist, keys) == 2
    assert steady._ahead(keys, 7, 2) == 2          # items 7..10 repeat; 11 breaks it
    assert steady._period(hist[:3], keys) == 0      # fewer than two periods recorded
    hist_bad = [(j, sig, 0, 0) for j, sig in enumerate("abcbcbd")]
    assert steady._period(hist_bad, keys) == 0


def test_an_odd_period_is_measured_over_two_of_itself():
    """A period of 3 keys and signatures: the period is 6 (even), found once 6 iterations
    repeat with period 3, not 12 with period 6; fewer than 6, or a break, finds none."""
    keys = list("abc" * 5)
    hist = [(j, sig, 0, 0) for j, sig in enumerate("abcabc")]
    assert steady._period(hist, keys) == 6
    assert steady._period(hist[:5], keys) == 0
    hist_bad = [(j, sig, 0, 0) for j, sig in enumerate("abcabd")]
    assert steady._period(hist_bad, keys) == 0
    assert steady._ahead(keys, 6, 6) == 1               # items 6..11; 12..14 are not a period
    assert steady._periodic(list("abc" * 4))           # 2 periods of 3 to measure, 6 to leave
    assert not steady._periodic(list("abc" * 4)[:-1])
    assert not steady._periodic(list("abab") + ["x"])   # an even period: still three of it


def test_steady_yields_every_item_outside_a_fast_run():
    from npusim.dsl.context import CoreContext, recording

    ctx = CoreContext(None, "core0", "aiv", 0, 1, {}, ("S", "V"))
    with recording(ctx):
        assert list(steady.steady(range(5), key=lambda i: 0)) == [0, 1, 2, 3, 4]
    assert ctx.stream == []


def test_a_loop_with_nothing_to_leave_out_lets_the_inner_loop_skip():
    assert steady._periodic([0] * 6)                   # periods are even: two to measure, one
    assert not steady._periodic([0] * 5)               # to leave out
    assert not steady._periodic([0, 1, 2, 3, 4, 5])    # distinct keys (gradWeight's tasks)
    assert steady._periodic([0, 1, 0, 1, 0, 1, 7])
    assert not steady._periodic([0, 1, 0, 1, 0])


def test_steady_mode_is_checked():
    from npusim.dsl.context import CoreContext, recording

    with recording(CoreContext(None, "core0", "aiv", 0, 1, {}, ("S", "V"))):
        with pytest.raises(NpusimError, match="allowed pace, stream"):
            list(steady.steady(range(3), key=lambda i: 0, mode="fast"))


def test_a_fast_prediction_says_it_is_one(tmp_path):
    """The report of ``predict --fast`` says its times approximate whole runs; a whole
    prediction does not."""
    from npusim.studies.predict.report import markdown
    from npusim.studies.predict.study import predict

    path = tmp_path / "one.toml"
    path.write_text('name = "one"\ndescription = "one call"\n[[call]]\nnote = "a 3x3"\n'
                    'op = "convolution_backward"\nshape = "1x16x8x8"\n'
                    'dtype = "float16"\nparams = { weight = "16x3" }\ncount = 1\n')
    texts = {f: markdown(predict(path, ["atlas-a2"], jobs=1, fast=f)) for f in (False, True)}
    assert "Fast run (--fast)" in texts[True]
    assert "Fast run (--fast)" not in texts[False]


def test_the_fast_bench_compares_cases_and_kernels(capsys):
    from npusim.face import bench_fast

    names = [name for name, _ in bench_fast.fast_cases(quick=True)]
    assert any(n.startswith("pin conv-") for n in names)
    assert sum(n.startswith("resnet50-backward b8 call") for n in names) == 24 * 2 + 23 * 2
    assert "resnet50-backward b8 call 3 atlas-a2 5hd" in names
    whole = {"cycles": 100, "status": "ok", "kernels": [{"cycles": 40}, {"cycles": 60}]}
    fast = {"cycles": 103, "status": "ok", "fast": {"instructions_left_out": 9},
            "kernels": [{"cycles": 38}, {"cycles": 65}]}
    row = bench_fast._row("x", whole, fast, 2.0, 1.0)
    assert row["error"] == pytest.approx(0.03)
    assert row["kernel_error"] == pytest.approx(5 / 60)
    out = bench_fast.summarise([row, bench_fast._row("y", whole, whole, 1.0, 1.0)])
    assert out["worst_kernel"]["case"] == "x" and out["speedup"] == pytest.approx(2.0)
    assert "of a kernel +8.33%" in capsys.readouterr().out
