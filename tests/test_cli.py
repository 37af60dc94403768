"""The npusim command, through a subprocess as a user runs it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SMALL = ["--shape", "16x1024"]


def npusim(*args, cwd=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "npusim", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd)


def assert_one_line_error(out):
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "error" in lines[0]
    return lines[0]


def test_chips_lists_every_model():
    out = npusim("chips")
    assert out.returncode == 0
    for name in ("atlas-a2", "atlas-training", "atlas-a2-910b4"):
        assert name in out.stdout
    assert "24+48" in out.stdout and "TFLOPS" in out.stdout and "mem TB/s" in out.stdout
    row = next(line for line in out.stdout.splitlines() if line.startswith("atlas-inference "))
    assert "Ascend310P3" in row and "LPDDR4X" in row and "0.20" in row


def test_run_checks_summarises_and_writes_its_files(tmp_path):
    out = npusim("run", "silu_backward", "--chip", "atlas-a2", *SMALL, "--dtype", "bf16",
                 "--tiling", "tile_length=1024", "--out", str(tmp_path / "silu"))
    assert out.returncode == 0, out.stderr
    for text in ("bit-identical to the golden", "cycles", "TB/s", "TFLOPS", "roofline",
                 "memory-bound", "MTE2", "UB", "tile_length=1024"):
        assert text in out.stdout
    files = sorted(p.name for p in (tmp_path / "silu").iterdir())
    assert files == ["memory.png", "pipeline.png", "summary.json", "trace.json"]
    summary = json.loads((tmp_path / "silu" / "summary.json").read_text())
    assert summary["ok"] and summary["dtype"] == "bfloat16" and summary["shape"] == [16, 1024]
    assert summary["metrics"]["cycles"] > 0 and summary["tiling"]["tile_length"] == 1024
    assert 0 < summary["metrics"]["roofline_ratio"] < 1.05
    assert json.loads((tmp_path / "silu" / "trace.json").read_text())["traceEvents"]
    assert [p.name for p in tmp_path.iterdir()] == ["silu"]     # no temporary folder left


def test_run_functional_mode_has_no_timing():
    out = npusim("run", "SiluBackward", "--chip", "atlas-training", *SMALL,
                 "--mode", "functional")
    assert out.returncode == 0, out.stderr
    assert "bit-identical" in out.stdout and "none in functional mode" in out.stdout


def test_run_help_documents_the_operator():
    out = npusim("run", "silu_backward", "--help")
    assert out.returncode == 0
    for text in ("aclnnSiluBackward", "--shape", "--tiling", "--param", "bfloat16",
                 "tile_length", "parameters"):
        assert text in out.stdout


def test_compare_says_why_a_product_does_not_run(tmp_path):
    out = npusim("compare", "silu_backward", *SMALL, "--dtype", "bfloat16",
                 "--out", str(tmp_path / "cmp"))
    assert out.returncode == 0, out.stderr
    head = out.stdout.splitlines()[1]
    assert "atlas-training" in head and "atlas-a2" in head
    assert "not run" in out.stdout and "exact" in out.stdout
    assert "atlas-training: aclnnSiluBackward: gradOutput dtype bfloat16 is not supported" \
        in out.stdout
    assert sorted(p.name for p in (tmp_path / "cmp").iterdir()) == [
        "compare.json", "compare.md", "compare.png"]
    md = (tmp_path / "cmp" / "compare.md").read_text()
    assert "not run: aclnnSiluBackward" in md


def test_compare_chips_option():
    out = npusim("compare", "silu_backward", *SMALL, "--chips", "atlas-a2,atlas-a2-910b4")
    assert out.returncode == 0, out.stderr
    status = next(line for line in out.stdout.splitlines() if line.startswith("status"))
    assert "atlas-a2-910b4" in out.stdout.splitlines()[1] and status.split()[1:] == ["exact"] * 2


def test_demo_writes_a_report_and_says_where(tmp_path):
    out = npusim("demo", "--quick", "--out", "report-here", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "report: report-here/report.md" in out.stdout
    assert "== aclnnSiluBackward" in out.stdout and "1.60 TB/s of 1.60 TB/s HBM" in out.stdout
    assert "[1/" in out.stderr and "Traceback" not in out.stderr
    folder = tmp_path / "report-here"
    report = (folder / "report.md").read_text()
    assert "## aclnnSiluBackward" in report and "| | atlas-training | atlas-a2 |" in report
    for image in report.split("](")[1:]:
        assert (folder / image.split(")")[0]).is_file()
    assert (folder / "silu_backward-pipeline-atlas-a2.png").is_file()


def test_bench_quick_reports_speed(tmp_path):
    out = npusim("bench", "--quick", "--json", str(tmp_path / "b.json"))
    assert out.returncode == 0, out.stderr
    assert "instr/s" in out.stdout and "vector add fp16" in out.stdout and "RSS MB" in out.stdout
    rows = json.loads((tmp_path / "b.json").read_text())["rows"]
    groups = {r["group"] for r in rows}
    assert groups == {"micro", "standard", "ops"} and all("error" not in r for r in rows)
    assert all(r["instructions"] > 0 and r["peak_rss_mb"] > 10 for r in rows)


BAD = {
    "unknown command": (["frobnicate"], "invalid choice"),
    "unknown op": (["run", "no_such_op"], "invalid choice: 'no_such_op'"),
    "unknown chip": (["run", "silu_backward", "--chip", "ascend-9000"], "unknown chip"),
    "unknown chip in --chips": (["compare", "silu_backward", "--chips", "atlas-a2,nope"],
                                "unknown chip 'nope'"),
    "unknown dtype": (["run", "silu_backward", "--dtype", "float8"], "does not take dtype"),
    "dtype the product lacks": (["run", "silu_backward", "--chip", "atlas-training",
                                 "--dtype", "bfloat16"], "not supported on atlas-training"),
    "shape that does not parse": (["run", "silu_backward", "--shape", "4by4"],
                                  "does not parse"),
    "negative shape": (["run", "silu_backward", "--shape", "4x-1"], "positive integer"),
    # issue 42 item 15: argparse took a leading '-' for an option ("expected one argument")
    "negative first dimension": (["run", "silu_backward", "--shape", "-4x1024"],
                                 "shape '-4x1024': dimension 0 is -4 (negative)"),
    "negative first dimension in a sweep": (["sweep", "silu_backward", "--shape", "-4x1024",
                                             "--tiling", "buffer_num=1", "--out", "o"],
                                            "dimension 0 is -4 (negative)"),
    "unknown tiling key": (["run", "silu_backward", *SMALL, "--tiling", "tile_size=64"],
                           "unknown tiling field 'tile_size'"),
    "tiling that cannot work": (["run", "silu_backward", *SMALL, "--tiling", "buffer_num=3"],
                                "buffer_num = 3"),
    "tiling without =": (["run", "silu_backward", "--tiling", "tile_length"], "KEY=VALUE"),
    "unknown param": (["run", "silu_backward", "--param", "alpha=1"], "no parameter 'alpha'"),
    "bad option": (["bench", "--fast"], "unrecognized arguments"),
    "conv param that does not parse": (["run", "convolution_backward", "--param",
                                        "padding=a"],
                                       "one non-negative integer, or one per spatial"),
    "conv argument aclnn refuses": (["run", "convolution_backward", "--shape", "1x16x8x8",
                                     "--param", "stride=0"], "stride = [0, 0]"),
    "conv dtype the product lacks": (["run", "convolution_backward", "--chip",
                                      "atlas-training", "--dtype", "bf16"],
                                     "not supported on atlas-training"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_and_no_files(case, tmp_path):
    args, message = BAD[case]
    if args[0] in ("run", "compare"):
        args = [*args, "--out", str(tmp_path / "out")]
    out = npusim(*args, cwd=tmp_path)
    line = assert_one_line_error(out)
    assert message in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["run", "compare"])
def test_unwritable_out_fails_before_running(command, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    out = npusim(command, "silu_backward", *SMALL, "--out", str(blocker / "out"))
    line = assert_one_line_error(out)
    assert "cannot write to" in line and "not a folder" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_bench_against_an_earlier_run(tmp_path):
    from npusim.face.bench import _standard

    names = [name for name, *_ in _standard(quick=True)]
    earlier = {"rows": [{"group": "standard", "case": n, "wall_s": 100.0} for n in names]}
    (tmp_path / "old.json").write_text(json.dumps(earlier))
    out = npusim("bench", "--quick", "--group", "standard", "--against",
                 str(tmp_path / "old.json"), "--json", str(tmp_path / "new.json"))
    assert out.returncode == 0, out.stderr
    rows = json.loads((tmp_path / "new.json").read_text())["rows"]
    assert [r["speedup"] for r in rows] == [round(100.0 / r["wall_s"], 3) for r in rows]
    assert "x the earlier run" in out.stdout and "on the geometric mean" in out.stdout
    (tmp_path / "bad.json").write_text("[1, 2]")
    bad = npusim("bench", "--quick", "--group", "standard", "--against", str(tmp_path / "bad.json"))
    assert bad.returncode != 0 and "not a bench --json file" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_run_check_off_skips_the_golden_and_says_so(monkeypatch, capsys):
    import npusim.cases.run as case_run
    from npusim.face.cli import BLAS_THREADS, main

    for var in BLAS_THREADS:     # main sets them when unset: restored after the test
        monkeypatch.setenv(var, os.environ.get(var, "1"))

    def no_golden(*args, **kwargs):
        raise AssertionError("the golden ran")

    monkeypatch.setattr(case_run, "check_outputs", no_golden)
    assert main(["run", "silu_backward", "--shape", "64x1024", "--check", "off"]) == 0
    out = capsys.readouterr().out
    assert "not checked (--check off)" in out and "bit-identical" not in out
    assert main(["run", "silu_backward", "--shape", "64x1024"]) == 3     # --check on: it ran
    assert "the golden ran" in capsys.readouterr().err


def test_the_equivalence_script_records_a_command_and_finds_a_change(tmp_path):
    """Issue 42 item 23: tests/equivalence.py records a command's exit code, stdout and
    files; two recordings of the same checkout agree, and a changed one is found."""
    script = Path(__file__).with_name("equivalence.py")
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    for path in (first, second):
        out = subprocess.run([sys.executable, str(script), "record", str(path), "--only",
                              "chips", "--only", "bad-shape"], capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0, out.stderr
    data = json.loads(first.read_text())
    assert data["chips"]["exit"] == 0 and "atlas-a2" in data["chips"]["stdout"]
    assert data["bad-shape"]["exit"] == 2 and "does not parse" in data["bad-shape"]["stderr"]
    same = subprocess.run([sys.executable, str(script), "compare", str(first), str(second)],
                          capture_output=True, text=True, timeout=60)
    assert same.returncode == 0 and same.stdout.strip() == "no difference"
    data["chips"]["stdout"] = data["chips"]["stdout"].replace("atlas-a2", "atlas-b3", 1)
    second.write_text(json.dumps(data))
    moved = subprocess.run([sys.executable, str(script), "compare", str(first), str(second)],
                           capture_output=True, text=True, timeout=60)
    assert moved.returncode == 1 and moved.stdout.startswith("chips: stdout differs: line")


def test_bench_predict_group_runs_resnet50_at_two_batches():
    """``bench --group predict`` (minutes: not run here): ResNet-50 at batch 32 and 256 with
    --jobs 2, whole and --fast, each a case of its own; the rows carry CPU seconds beside the
    wall time."""
    from npusim.face import bench_memory
    from npusim.face.bench import GROUPS

    assert "predict" in GROUPS and "fast" in GROUPS
    cases = list(bench_memory.predict_cases(quick=False))
    assert [(kw["batch"], kw.get("fast", False)) for _, _, kw, _ in cases] == [
        (32, False), (32, True), (256, False), (256, True)]
    assert all(kw["jobs"] == 2 and kw["workload"] == "resnet50-backward"
               for _, _, kw, _ in cases)
