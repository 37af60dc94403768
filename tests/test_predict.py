"""npusim predict: totals add up, each call's time is what npusim run gives, the HTML report is
self-contained, and a malformed workload is one line naming the file and the entry."""

import html.parser
import shutil

import pytest

from npusim.cases import CASES
from npusim.cases.run import run_case
from npusim.errors import NpusimError
from npusim.face.cli import main
from npusim.studies.predict import predict
from npusim.studies.workload import load_workload, workload_names

SMALL = """name = "small"
description = "three small calls"
[[call]]
op = "convolution_backward"
shape = "2x32x14x14"
dtype = "float16"
params = { weight = "32x3", output_mask = "1,1,0" }
count = 3
[[call]]
op = "silu_backward"
shape = "64x1024"
dtype = "bfloat16"
count = 2
[[call]]
op = "cross_entropy_loss_grad"
shape = "16x1000"
dtype = "float32"
count = 1
"""


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    path = tmp_path_factory.mktemp("wl") / "small.toml"
    path.write_text(SMALL)
    return path, predict(path, jobs=1)


def test_totals_are_the_sum_of_time_times_count(small):
    _, result = small
    for chip in result["chips"]:
        ok = [r for r in result["rows"] if r["chip"] == chip and r["status"] == "ok"]
        assert result["totals"][chip]["total_us"] == pytest.approx(
            sum(r["time_us"] * r["count"] for r in ok))
        assert sum(r["share"] for r in ok) == pytest.approx(1.0)


def test_each_call_takes_what_npusim_run_gives(small):
    _, result = small
    for r in result["rows"]:
        if r["status"] != "ok":
            continue
        case = CASES[r["op"]]
        shape = tuple(int(d) for d in r["shape"].split("x"))
        run = run_case(case, r["chip"], shape, r["dtype"], case.parse_params(r["params"]),
                       trace=False)
        assert run.result.time_us == pytest.approx(r["time_us"], abs=1e-3), r


def test_a_call_a_chip_does_not_support_says_why(small):
    _, result = small
    (row,) = [r for r in result["rows"] if r["chip"] == "atlas-training"
              and r["op"] == "cross_entropy_loss_grad"]
    assert row["status"] == "not supported" and "Atlas A2" in row["why"]
    assert 3 in result["totals"]["atlas-training"]["missing"]


class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.outside = [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.images.append(a.get("src", ""))
        for key in ("href", "src"):
            if key in a and not a[key].startswith(("data:", "#")):
                self.outside.append((tag, a[key]))


def test_the_command_writes_a_self_contained_html_report(small, tmp_path, capsys):
    path, _ = small
    out = tmp_path / "report"
    assert main(["predict", str(path), "--out", str(out), "--jobs", "1"]) == 0
    assert "as fast as" in capsys.readouterr().out
    page = (out / "report.html").read_text()
    links = _Links()
    links.feed(page)
    assert len(links.images) == 2 and all(s.startswith("data:image/png;base64,")
                                          for s in links.images)
    assert links.outside == []
    md = (out / "report.md").read_text()
    assert "not supported" in md and "What limits each call" in md
    assert (out / "report.json").stat().st_size > 500


def test_the_html_report_renders_in_headless_chromium(small, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    browser_path = shutil.which("chromium")
    if browser_path is None:
        pytest.skip("Debian's chromium is not installed")
    path, _ = small
    out = tmp_path / "report"
    assert main(["predict", str(path), "--out", str(out), "--jobs", "1"]) == 0
    errors = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_path)
        page = browser.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto((out / "report.html").as_uri())
        shot = page.screenshot(full_page=True)
        widths = page.evaluate("[...document.images].map(i => i.naturalWidth)")
        browser.close()
    assert errors == [] and len(shot) > 10000 and all(w > 100 for w in widths)


def test_the_shipped_workloads_load_and_name_every_call():
    assert {"resnet50-backward", "moe-llm-layer-backward"} <= set(workload_names())
    resnet = load_workload("resnet50-backward")
    assert sum(c.count for c in resnet.calls if c.op == "convolution_backward") == 53
    moe = load_workload("moe-llm-layer-backward")
    assert {c.op for c in moe.calls} == {"cross_entropy_loss_grad", "embedding_dense_backward",
                                         "moe_token_permute_grad", "silu_backward"}


BAD = {
    "unknown op": ('op = "softmax_backward"', "unknown op 'softmax_backward'"),
    "bad shape": ('shape = "4by4"', "does not parse"),
    "missing field": (None, "missing key 'count'"),
    "unsupported dtype": ('dtype = "int8"', "does not take dtype"),
    "zero count": ("count = 0", "count = 0"),
    "unknown key": ('color = "red"', "unknown key 'color'"),
    "bad param": ('params = { alpha = "1" }', "no parameter 'alpha'"),
}


def _entry(line):
    lines = ['op = "silu_backward"', 'shape = "64x64"', 'dtype = "float16"', "count = 1"]
    if line is None:
        return lines[:-1]
    key = line.split("=")[0].strip()
    return [line if ln.startswith(key + " ") else ln for ln in lines] + (
        [line] if not any(ln.startswith(key + " ") for ln in lines) else [])


@pytest.mark.parametrize("case", list(BAD))
def test_a_malformed_workload_is_one_line_naming_file_and_entry(case, tmp_path, capsys):
    line, message = BAD[case]
    path = tmp_path / "bad.toml"
    good = ['op = "silu_backward"', 'shape = "64x64"', 'dtype = "float16"', "count = 1"]
    path.write_text('name = "bad"\ndescription = "x"\n[[call]]\n' + "\n".join(good)
                    + "\n[[call]]\n" + "\n".join(_entry(line)) + "\n")
    with pytest.raises(NpusimError, match="call 2") as info:
        load_workload(path)
    assert message in str(info.value) and str(path) in str(info.value)
    out = tmp_path / "out"
    assert main(["predict", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and not out.exists()


def test_not_a_workload_is_one_line(tmp_path, capsys):
    path = tmp_path / "x.toml"
    path.write_text("[[[")
    assert main(["predict", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "not a valid TOML" in capsys.readouterr().err
    assert main(["predict", "no-such-workload", "--out", str(tmp_path / "o")]) == 2
    assert "resnet50-backward" in capsys.readouterr().err


def _shrunk(workload):
    """The workload with each call's leading dimension cut to a small size (and the embedding's
    table to 1024 rows): every call, op and parameter of the shipped file, at a test's cost."""
    import dataclasses

    calls = []
    for c in workload.calls:
        params = dict(c.params)
        if "num_weights" in params:
            params["num_weights"] = "1024"
        lead = 1 if c.op == "convolution_backward" else 16
        calls.append(dataclasses.replace(c, shape=(lead, *c.shape[1:]), params=params))
    return dataclasses.replace(workload, calls=tuple(calls))


@pytest.mark.parametrize("name", ["resnet50-backward", "moe-llm-layer-backward"])
def test_both_shipped_workloads_run_on_both_chips(name):
    result = predict(_shrunk(load_workload(name)), jobs=2)
    for r in result["rows"]:
        a2_only = r["op"] in ("cross_entropy_loss_grad", "moe_token_permute_grad")
        if r["chip"] == "atlas-training" and a2_only:
            assert r["status"] == "not supported" and "Atlas A2" in r["why"], r
        else:
            assert r["status"] == "ok" and r["time_us"] > 0, r
    for chip in result["chips"]:
        ok = [r for r in result["rows"] if r["chip"] == chip and r["status"] == "ok"]
        assert result["totals"][chip]["total_us"] == pytest.approx(
            sum(r["time_us"] * r["count"] for r in ok))


def test_a_timing_point_that_needs_numerics_does_not_run_the_golden(monkeypatch):
    """Embedding's kernels read the indices, so its timing-only point runs with numerics;
    the golden (and its memory) is still only for points that ask for a check."""
    import npusim.cases.run as case_run
    from npusim.studies.executor import run_point

    def no_golden(*args, **kwargs):
        raise AssertionError("the golden ran")

    monkeypatch.setattr(case_run, "check_outputs", no_golden)
    rec = run_point({"op": "embedding_dense_backward", "chip": "atlas-a2", "shape": [64, 32],
                     "dtype": "float32", "params": {}, "tiling": None})
    assert rec["status"] == "ok" and rec["numerics"] and rec["cycles"] > 0


def test_a_points_run_is_freed_before_the_next_point(monkeypatch):
    """Reference cycles hold a run's GM (GlobalMemory, with the SimPy environment); the
    executor collects them after each point, so a long --jobs 1 study holds one run's GM at a
    time (the moe-llm-layer-backward prediction held them all: 4.5 GB, not 2.1)."""
    import gc
    import weakref

    from npusim.engine import memory
    from npusim.studies import executor

    made = []
    real = memory.GlobalMemory.__init__

    def keep(self, *args, **kwargs):
        real(self, *args, **kwargs)
        made.append(weakref.ref(self))

    monkeypatch.setattr(memory.GlobalMemory, "__init__", keep)
    gc.disable()      # as when the allocation counts have not yet triggered a collection
    try:
        executor.run_point({"op": "silu_backward", "chip": "atlas-a2", "shape": [64, 1024],
                            "dtype": "float16", "params": {}, "tiling": None})
        assert made and all(ref() is None for ref in made)
    finally:
        gc.enable()


def test_the_bench_memory_cases_run_and_count_instructions(small):
    """npusim bench --group memory runs these (each in a process of its own, for its RSS)."""
    from npusim.face import bench_memory

    path, _ = small
    r = bench_memory.prediction(str(path), batch=1)
    assert r.stats["instructions"] > 0 and r.stats["wall_seconds"]["total"] > 0
    run = bench_memory.checked_run("embedding_dense_backward", (64, 32), {"indices": "zipf"})
    assert run.stats["instructions"] > 0
    assert [case[0] for case in bench_memory.cases(True)][0].startswith("run embedding")
