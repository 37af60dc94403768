"""Figures a student can trust (issue 25): the memory marks every figure and the peak-UB figure
are drawn from stay within each buffer's capacity and never go below zero, on every operator and
every chip it runs on; the pipeline and memory figures show every core type and buffer a run
used; and the figures the README and docs/ link to are the ones ``plots/make_plots.py`` makes.
"""

import contextlib
import importlib.util
import io
import re
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest
import quoted

from npusim.cases import CASES
from npusim.cases.run import SIZE_KEYS, run_case
from npusim.engine.trace_export import memory_timeline
from npusim.errors import ParamError
from npusim.face import plot
from npusim.micro.matmul import run_matmul

CHIPS = ("atlas-training", "atlas-a2", "atlas-inference")
PAIRS = [(op, chip) for op in sorted(CASES) for chip in CHIPS]


@cache
def _run(op: str, chip: str):
    """The operator at its quick shape on ``chip`` (traced), or None where the chip does not
    take it (the product rules' ParamError)."""
    case = CASES[op]
    try:
        run = run_case(case, chip, case.quick_shape, case.dtypes[0], case.parse_params({}))
    except ParamError as exc:
        # CANN does not run it there, or npusim does not model the kernel it runs there
        assert "not supported" in str(exc) or "not modelled on" in str(exc), exc
        return None
    assert run.ok, run.checks
    return run.result


def _result(op: str, chip: str):
    result = _run(op, chip)
    if result is None:
        pytest.skip(f"{op} does not run on {chip}")
    return result


def test_every_operator_runs_on_some_chip_and_the_convolution_on_all_three():
    ran = {(op, chip) for op, chip in PAIRS if _run(op, chip) is not None}
    assert {op for op, _ in ran} == set(CASES)
    assert {chip for op, chip in ran if op == "convolution_backward"} == set(CHIPS)


@pytest.mark.parametrize("op,chip", PAIRS)
def test_live_bytes_stay_within_zero_and_capacity(op, chip):
    _check_marks(_result(op, chip))


@pytest.mark.parametrize("chip", CHIPS)
def test_marks_of_a_matmul_and_of_the_convolutions_fp32_way_out_are_in_order(chip):
    """The cube micro-kernel, and the convolution in fp32 (whose L0C block goes to UB and out
    through MTE3 with an enque/deque, unlike fp16's vector Cast)."""
    _check_marks(run_matmul(chip=chip, m=128, n=128, k=256))
    conv = CASES["convolution_backward"]
    _check_marks(run_case(conv, chip, conv.quick_shape, "float32", conv.parse_params({})).result)


def _check_marks(result) -> None:
    """Every sample of every buffer's live bytes (the trace's counters, memory.png, the peak)
    lies in 0..capacity; each queue buffer (a mark label: ``inQueueX[1]``) and TBuf is
    allocated when it holds nothing and freed of exactly what it holds: never freed before its
    alloc, never allocated twice."""
    labels = result.stats["core_labels"]
    for (core, buffer), points in memory_timeline(result.tracer).items():
        capacity = getattr(result.chip, SIZE_KEYS[buffer])
        low, high = min(b for _, b in points), max(b for _, b in points)
        assert 0 <= low and high <= capacity, (labels[core], buffer, low, high, capacity)
    live: dict = defaultdict(int)
    for core, time, buffer, delta, label in sorted(result.tracer.marks, key=lambda m: m[1]):
        key = (core, buffer, label)
        before, live[key] = live[key], live[key] + delta
        assert (before, live[key]) in ((0, delta), (-delta, 0)), (
            f"{labels[core]} {buffer} {label!r} at cycle {time:,.0f}: "
            f"{'allocated' if delta > 0 else 'freed'} {abs(delta):,} bytes with {before:,} live")
    assert 0 < max(result.stats["peak_live_bytes"].values())


def _used(result):
    """{(core type, pipe)} that ran instructions and {(core type, buffer)} that held bytes."""
    labels = result.stats["core_labels"]
    pipes = {(plot.core_type(labels[r[0]]), r[1]) for r in result.tracer.records}
    buffers = {(plot.core_type(labels[m[0]]), m[2]) for m in result.tracer.marks}
    return pipes, buffers


@pytest.mark.parametrize("op,chip", PAIRS)
@pytest.mark.parametrize("max_cores", [1, 2, 4])
def test_figures_show_every_core_type_pipe_and_buffer_the_run_used(op, chip, max_cores):
    result = _result(op, chip)
    labels = result.stats["core_labels"]
    pipes, buffers = _used(result)
    rows = plot.pipeline_rows(result, max_cores=max_cores)
    assert pipes <= {(plot.core_type(labels[c]), p) for c, p in rows}
    types, cores = {t for t, _ in pipes}, {r[0] for r in result.tracer.records}
    assert len({c for c, _ in rows}) == min(max(max_cores, len(types)), len(cores))
    panels = plot.memory_panels(result)
    assert buffers == {(plot.core_type(labels[c]), b) for c, bufs in panels for b in bufs}


def test_a2_convolution_figures_have_the_cube_core_above_the_vector_cores():
    result = _result("convolution_backward", "atlas-a2")
    labels = result.stats["core_labels"]
    rows = plot.pipeline_rows(result, max_cores=2)
    assert [labels[c] for c in dict.fromkeys(c for c, _ in rows)] == ["aic0", "aiv0"]
    assert {p for c, p in rows if labels[c] == "aic0"} >= {"MTE1", "M", "FIX"}
    panels = {labels[c]: bufs for c, bufs in plot.memory_panels(result)}
    assert panels == {"aic0": ["L1", "L0A", "L0B", "L0C"], "aiv0": ["UB"]}


def test_given_cores_are_drawn_as_given(tmp_path):
    result = _result("silu_backward", "atlas-a2")
    assert {c for c, _ in plot.pipeline_rows(result, cores=[1])} == {1}
    assert plot.memory_panels(result, [1]) == [(1, ["UB"])]
    png = plot.memory(result, tmp_path / "m.png", core=1)
    assert (tmp_path / "m.png").read_bytes()[:4] == b"\x89PNG" and png.endswith("m.png")


# --- no drift: the pages against plots/make_plots.py -------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
# the lessons quote their own scripts (docs/lessons/), and the kernel API page its examples
OTHER_PRODUCERS = ("docs/lessons/", "docs/guide/kernel-api.md")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+\.png)\)")


def _pages() -> list[Path]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [p for p in pages if not str(p.relative_to(ROOT)).startswith(OTHER_PRODUCERS)]


def _make_plots():
    spec = importlib.util.spec_from_file_location("make_plots", ROOT / "plots/make_plots.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def numbers() -> str:
    """What ``python plots/make_plots.py --numbers`` prints (no drawing: a few seconds)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert _make_plots().main(["--numbers"]) == 0
    return out.getvalue()


def test_every_number_the_pages_quote_is_what_make_plots_gives_now(numbers):
    marked = {p.relative_to(ROOT).as_posix(): quoted.quoted(p.read_text()) for p in _pages()}
    assert {"silu_double_cycles", "silu_single_cycles"} <= set(marked["README.md"])
    assert len(marked["docs/guide/figures.md"]) >= 10
    drifted = [f"{p.relative_to(ROOT)}: {line}" for p in _pages()
               for line in quoted.drift(p.read_text(), numbers)]
    assert not drifted, "\n".join(drifted + ["run python plots/make_plots.py and update them"])


def test_double_buffering_is_faster_in_the_numbers_quoted(numbers):
    got = quoted.produced(numbers)
    as_int = {k: int(v.replace(",", "")) for k, v in got.items() if k.endswith("cycles")}
    assert as_int["silu_double_cycles"] < as_int["silu_single_cycles"]


def test_the_pages_link_exactly_the_figures_make_plots_writes():
    linked = set()
    for page in _pages():
        for target in IMAGE.findall(page.read_text()):
            linked.add((page.parent / target).resolve().relative_to(ROOT).as_posix())
    outputs = set(_make_plots().OUTPUTS)
    assert linked == outputs, (sorted(linked - outputs), sorted(outputs - linked))
    tracked = {p.relative_to(ROOT).as_posix() for p in ROOT.glob("plots/*.png")}
    assert tracked <= outputs, sorted(tracked - outputs)
    assert all((ROOT / path).stat().st_size > 5000 for path in outputs)


def test_make_plots_draws_every_figure_and_prints_the_same_numbers_as_without_drawing(
        numbers, tmp_path):
    """Drawing (into a scratch folder, the slow validation left out) writes each figure, and
    the numbers it prints are those ``--numbers`` gives: the pages cannot quote one mode and
    show the other."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert _make_plots().main(["--out", str(tmp_path), "--skip-validation"]) == 0
    assert quoted.produced(out.getvalue()) == quoted.produced(numbers)
    for path in _make_plots().OUTPUTS:
        if path != "docs/modelling/validation.png":
            assert (tmp_path / path).read_bytes()[:4] == b"\x89PNG", path
