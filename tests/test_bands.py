"""The error band beside each predicted time (npusim.studies.validate.bands): the worst recorded
error of the counted validation rows of the same operator on the same chip model, and where run,
compare and predict show it. Figures come from a small table built here, or are computed from the
committed table and status (they change whenever the model is re-recorded)."""

import json
from pathlib import Path

import pytest

from npusim.chip import load_chip
from npusim.face.cli import main
from npusim.studies.validate.bands import band, band_cell, total_band
from npusim.studies.validate.study import load_status, load_table

ROW = """[[row]]
id = "{id}"
measurement = "a measurement"
source = "a source"
url = "https://example.com"
chip = "Ascend910B2"
model = "{model}"
timed = "kernel"
value = 10.0
unit = "us"
op = "{op}"
shape = [1024]
dtype = "float16"
compare = "op"
tolerance = 0.2
covers = "hbm"
note = ""
{extra}
"""
ROWS = [("conv-a2-1", "atlas-a2", "convolution_backward", "", 0.10),
        ("conv-a2-2", "atlas-a2", "convolution_backward", "", -0.30),
        ("conv-a2-nm", "atlas-a2", "convolution_backward", 'not_modelled = "a reason"', 0.90),
        ("conv-tr", "atlas-training", "convolution_backward", "", -0.50),
        ("silu-a2", "atlas-a2", "silu_backward", "", 0.05),
        ("silu-tr-nm", "atlas-training", "silu_backward", 'not_modelled = "a reason"', 0.40),
        ("silu-a2-new", "atlas-a2-910b3", "silu_backward", "", None)]   # not yet recorded


@pytest.fixture
def files(tmp_path):
    table, status = tmp_path / "table.toml", tmp_path / "status.toml"
    table.write_text("".join(ROW.format(id=i, model=m, op=op, extra=x) for i, m, op, x, _ in ROWS))
    status.write_text("counted = 5\nwithin = 2\nmae = 0.2\n\n[errors]\n" + "".join(
        f'"{i}" = {e}\n' for i, *_, e in ROWS if e is not None))
    return table, status


def test_the_band_is_the_worst_counted_error_of_the_kind(files):
    b = band("convolution_backward", "atlas-a2", *files)
    assert b["rows"] == 2 and b["ids"] == ["conv-a2-1", "conv-a2-2"]
    assert b["band"] == pytest.approx(0.30) and b["mean"] == pytest.approx(0.20)
    assert b["not_modelled"] == ["conv-a2-nm"]          # its 90% is not counted
    assert b["text"] == ("±30% (2 rows of convolution_backward on atlas-a2, mean error 20%; "
                         "1 row not modelled, not counted)")
    assert band_cell(b) == "±30% (2 rows)"
    one = band("convolution_backward", "atlas-training", *files)
    assert one["band"] == pytest.approx(0.50)
    assert one["text"] == "±50% (1 row of convolution_backward on atlas-training, mean error 50%)"


def test_a_kind_no_counted_row_covers_says_so(files):
    none = band("cross_entropy_loss_grad", "atlas-a2", *files)
    assert none["rows"] == 0 and none["band"] is None and band_cell(none) == "no row"
    assert none["text"] == "no validation row covers cross_entropy_loss_grad on atlas-a2"
    shown = band("silu_backward", "atlas-training", *files)
    assert shown["rows"] == 0 and shown["not_modelled"] == ["silu-tr-nm"]
    assert shown["text"] == ("no validation row covers silu_backward on atlas-training "
                             "(1 row not modelled, not counted)")
    new = band("silu_backward", "atlas-a2-910b3", *files)
    assert new["rows"] == 0 and new["unrecorded"] == ["silu-a2-new"]
    assert "1 row not yet recorded" in new["text"]


def test_the_chip_is_matched_by_its_model_name(files, tmp_path):
    by_object = band("silu_backward", load_chip("atlas-a2"), *files)
    assert by_object["band"] == pytest.approx(0.05) and by_object["chip"] == "atlas-a2"
    text = Path(load_chip("atlas-a2").path).read_text()
    mine = tmp_path / "my-chip.toml"
    mine.write_text(text.replace('name = "atlas-a2"', 'name = "my-chip"'))
    for chip in (mine, str(mine)):
        assert band("silu_backward", chip, *files)["text"] == \
            "no validation row covers silu_backward on my-chip"


def test_a_total_weighs_each_call_by_its_time(files):
    calls = [("convolution_backward", 60.0), ("silu_backward", 20.0),
             ("cross_entropy_loss_grad", 20.0)]
    t = total_band(calls, "atlas-a2", *files)
    assert t["band"] == pytest.approx((60 * 0.30 + 20 * 0.05) / 80)
    assert t["covered"] == pytest.approx(0.8) and t["uncovered"] == ["cross_entropy_loss_grad"]
    assert t["text"].startswith("±24% over the 80% of the time validation rows cover")
    assert t["text"].endswith("no validation row covers cross_entropy_loss_grad on atlas-a2")
    assert total_band(calls[1:2], "atlas-a2", *files)["text"].startswith("±5% (")


def test_the_default_band_comes_from_the_committed_files():
    rows, errors = load_table(), load_status()["errors"]
    for op, chip in (("silu_backward", "atlas-a2"), ("convolution_backward", "atlas-a2"),
                     ("silu_backward", "atlas-training")):
        mine = [abs(errors[r.id]) for r in rows
                if r.op == op and r.model == chip and r.counted and r.id in errors]
        b = band(op, chip)
        assert b["rows"] == len(mine)
        assert b["band"] == (pytest.approx(max(mine)) if mine else None)


def test_run_prints_the_band_after_the_time_and_writes_it(tmp_path, capsys):
    assert main(["run", "silu_backward", "--shape", "1024", "--out", str(tmp_path / "r")]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  time  "))
    expected = band("silu_backward", "atlas-a2")
    assert lines[at + 1] == f"  error band  {expected['text']}"
    assert expected["text"].startswith(("±", "no validation row covers"))
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["band"] == expected


def test_compare_shows_each_chips_band(capsys):
    chips = ["atlas-training", "atlas-a2"]
    assert main(["compare", "silu_backward", "--shape", "1024", "--chips", ",".join(chips)]) == 0
    out = capsys.readouterr().out
    bands = [band("silu_backward", c) for c in chips]
    row = next(line for line in out.splitlines() if line.startswith("error band "))
    assert row.split() == ["error", "band"] + " ".join(band_cell(b) for b in bands).split()
    for chip, b in zip(chips, bands, strict=True):
        assert f"{chip}: error band: {b['text']}" in out


WORKLOAD = """name = "tiny"
description = "two tiny calls"
[[call]]
op = "silu_backward"
shape = "1024"
dtype = "float16"
count = 2
[[call]]
op = "cross_entropy_loss_grad"
shape = "16x1000"
dtype = "float32"
count = 1
"""


def test_predict_shows_the_band_of_each_call_and_each_total(tmp_path, capsys):
    path = tmp_path / "tiny.toml"
    path.write_text(WORKLOAD)
    out = tmp_path / "report"
    assert main(["predict", str(path), "--out", str(out), "--jobs", "1"]) == 0
    printed = capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())
    md = (out / "report.md").read_text()
    assert "| time | band | x count |" in md
    for r in report["rows"]:
        if r["status"] != "ok":
            assert r["band"] is None
            continue
        assert r["band"] == band(r["op"], r["chip"])
        assert f"| {band_cell(r['band'])} |" in md
    for chip in ("atlas-training", "atlas-a2"):      # a total: the calls every chip runs
        ran = [(r["op"], r["total_us"]) for r in report["rows"] if r["chip"] == chip
               and r["status"] == "ok" and r["call"] in report["common_calls"]]
        text = total_band(ran, chip)["text"]
        assert report["totals"][chip]["band"]["text"] == text
        assert f"  {text}  " in printed and f"| {text} |" in md
