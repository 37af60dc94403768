"""The error band beside each predicted time (npusim.studies.validate.bands): the worst recorded
error of the counted validation rows of the same operator on the same chip model, and where run,
compare and predict show it. Figures come from a small table built here, or are computed from the
committed table and status (they change whenever the model is re-recorded)."""

import json
from pathlib import Path

import pytest

from npusim.chip import load_chip, models_dir
from npusim.face.cli import main
from npusim.studies.validate.bands import band, band_cell, ratio_band, total_band
from npusim.studies.validate.study import TABLE as VALIDATION
from npusim.studies.validate.study import entries, load_status, load_table

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
K = 'kernels = ["ConvK", "TransData"]'
ROWS = [("conv-a2-1", "atlas-a2", "convolution_backward", K, 0.10),
        ("conv-a2-2", "atlas-a2", "convolution_backward", K, -0.30),
        ("conv-a2-3", "atlas-a2", "convolution_backward", K, 0.05),
        ("conv-a2-nm", "atlas-a2", "convolution_backward", K + '\nnot_modelled = "a reason"',
         0.90),
        ("conv-a2-fit", "atlas-a2", "convolution_backward", K + '\ncalibrated = "a.start"', 0.0),
        ("conv-a2-dx", "atlas-a2", "convolution_backward", 'kernels = ["DxK"]', 0.15),
        ("conv-tr", "atlas-training", "convolution_backward", K, -0.50),
        ("silu-a2", "atlas-a2", "silu_backward", 'kernels = ["SiluGrad"]', 0.05),
        ("fill-a2", "atlas-a2", "silu_backward", "kernels = []", 0.01),
        ("silu-tr-nm", "atlas-training", "silu_backward",
         'kernels = ["SiluGrad"]\nnot_modelled = "a reason"', 0.40),
        ("silu-a2-new", "atlas-a2-910b3", "silu_backward", 'kernels = ["SiluGrad"]', None)]


@pytest.fixture
def files(tmp_path):
    table, status = tmp_path / "table.toml", tmp_path / "status.toml"
    table.write_text("".join(ROW.format(id=i, model=m, op=op, extra=x) for i, m, op, x, _ in ROWS))
    status.write_text("counted = 5\nwithin = 2\nmae = 0.2\n\n[all]\nran = 5\nwithin = 2\n"
                      "mae = 0.2\n\n[errors]\n" + "".join(
                          f'"{i}" = {e}\n' for i, *_, e in ROWS if e is not None))
    return table, status


def test_the_band_is_the_worst_error_of_the_rows_that_ran_the_same_kernels(files):
    """Of the rows of the op and chip, the counted ones no number was fitted on that ran the
    prediction's kernels: the not modelled row (90%), the calibrated row and the row of
    another kernel (DxK) back nothing, and the band names the kernels behind it."""
    b = band("convolution_backward", "atlas-a2", *files, kernels=[("ConvK", 8.0),
                                                                  ("TransData", 2.0)])
    assert b["rows"] == 3 and b["ids"] == ["conv-a2-1", "conv-a2-2", "conv-a2-3"]
    assert b["band"] == pytest.approx(0.30) and b["mean"] == pytest.approx(0.15)
    assert b["not_modelled"] == ["conv-a2-nm"] and b["calibrated"] == ["conv-a2-fit"]
    assert b["kernels"] == ["ConvK", "TransData"] and b["covered"] == 1.0 and not b["few"]
    assert b["text"] == ("±30% (3 rows of convolution_backward on atlas-a2 running ConvK, "
                         "TransData, mean error 15%; 1 row not modelled, 1 row calibrated on: "
                         "back no band)")
    assert band_cell(b) == "±30% (3 rows)"
    dx = band("convolution_backward", "atlas-a2", *files, kernels=[("DxK", 1.0)])
    assert dx["ids"] == ["conv-a2-dx"] and dx["band"] == pytest.approx(0.15)


def test_a_band_from_fewer_than_three_rows_says_so(files):
    one = band("convolution_backward", "atlas-training", *files)
    assert one["band"] == pytest.approx(0.50) and one["few"]
    assert one["text"].startswith("±50% (only 1 row, fewer than 3: 1 row of "
                                  "convolution_backward on atlas-training")
    assert band_cell(one) == "±50% (1 row: too few)"


def test_a_kernel_no_row_ran_has_no_band_and_says_how_much_time_that_is(files):
    part = band("convolution_backward", "atlas-a2", *files,
                kernels=[("DxK", 3.0), ("Conv2DK", 7.0)])
    assert part["covered"] == pytest.approx(0.3) and part["unbacked"] == ["Conv2DK"]
    assert part["ids"] == ["conv-a2-dx"]
    assert part["text"].startswith("no band for 70% of the time (no row runs Conv2DK")
    assert band_cell(part) == "±15% on 30% of the time (1 row: too few)"
    none = band("convolution_backward", "atlas-a2", *files, kernels=[("Conv2DK", 1.0)])
    assert none["rows"] == 0 and band_cell(none) == "no band"
    assert none["text"].startswith("no band: no validation row of convolution_backward on "
                                   "atlas-a2 running Conv2DK may back one")


def test_a_row_backs_only_a_run_of_every_kernel_it_measured(files):
    """A row that measured ConvK and TransData together does not back the TransData of a run
    without ConvK (the 3-D dw rows do not back a 2-D convolution's TransData)."""
    b = band("convolution_backward", "atlas-a2", *files,
             kernels=[("TransData", 5.0), ("Conv2DK", 5.0)])
    assert b["rows"] == 0 and b["text"].startswith("no band")


def test_a_row_that_compares_another_kernel_backs_no_band(files):
    """The fill row measured a fill where npusim runs SiluGrad (kernels = []): it backs no
    band, while the row that ran SiluGrad does."""
    b = band("silu_backward", "atlas-a2", *files, kernels=[("SiluGrad", 1.0)])
    assert b["ids"] == ["silu-a2"] and b["other_kernel"] == ["fill-a2"]


def test_a_kind_no_counted_row_covers_says_so(files):
    none = band("cross_entropy_loss_grad", "atlas-a2", *files)
    assert none["rows"] == 0 and none["band"] is None and band_cell(none) == "no band"
    assert none["text"] == ("no band: no validation row of cross_entropy_loss_grad on "
                            "atlas-a2 may back one")
    shown = band("silu_backward", "atlas-training", *files)
    assert shown["rows"] == 0 and shown["not_modelled"] == ["silu-tr-nm"]
    assert shown["text"].endswith("(1 row not modelled: back no band)")
    new = band("silu_backward", "atlas-a2-910b3", *files)
    assert new["rows"] == 0 and new["unrecorded"] == ["silu-a2-new"]
    assert "1 row not yet recorded" in new["text"]


def test_the_chip_is_matched_by_its_model_name_and_its_file(files, tmp_path):
    by_object = band("silu_backward", load_chip("atlas-a2"), *files)
    assert by_object["band"] == pytest.approx(0.05) and by_object["chip"] == "atlas-a2"
    assert band("silu_backward", models_dir() / "atlas-a2.toml", *files)["rows"] == 1
    text = Path(load_chip("atlas-a2").path).read_text()
    mine = tmp_path / "my-chip.toml"
    mine.write_text(text.replace('name = "atlas-a2"', 'name = "my-chip"'))
    for chip in (mine, str(mine)):
        assert band("silu_backward", chip, *files)["text"] == \
            "no band: no validation row of silu_backward on my-chip may back one"


def test_a_chip_file_that_differs_from_the_shipped_one_of_its_name_borrows_no_band(
        files, tmp_path):
    """Issue 42 item 13: a copy of atlas-a2.toml with another clock keeps the name atlas-a2
    and printed the shipped model's band."""
    text = Path(load_chip("atlas-a2").path).read_text()
    mine = tmp_path / "atlas-a2.toml"
    mine.write_text(text.replace("clock_hz = 1.8e9", "clock_hz = 9.0e9"))
    b = band("silu_backward", str(mine), *files)
    assert b["rows"] == 0 and b["band"] is None and band_cell(b) == "no band"
    assert b["text"].startswith(f"no band: the chip file {mine} (sha256 ")
    assert "differs from the shipped atlas-a2 model" in b["text"]
    assert total_band([("silu_backward", 1.0)], str(mine), *files)["text"].startswith(
        "no band: the chip file")


def test_a_total_weighs_each_call_by_its_time(files):
    calls = [("convolution_backward", 60.0), ("silu_backward", 20.0),
             ("cross_entropy_loss_grad", 20.0)]
    t = total_band(calls, "atlas-a2", *files)
    assert t["band"] == pytest.approx((60 * 0.30 + 20 * 0.05) / 80)
    assert t["covered"] == pytest.approx(0.8) and t["uncovered"] == ["cross_entropy_loss_grad"]
    assert t["text"].startswith("±24% over the 80% of the time validation rows back")
    assert t["text"].endswith("no validation row backs cross_entropy_loss_grad on atlas-a2")
    assert total_band(calls[1:2], "atlas-a2", *files)["text"].startswith("±5% (")


def test_a_total_mostly_unbacked_starts_with_no_band(files):
    """Issue 42 item 19: the MoE cell read '±2% over the 20% of the time ...'; where rows back
    less than half the time, the cell starts with what has no band."""
    calls = [("silu_backward", 20.0), ("cross_entropy_loss_grad", 80.0)]
    t = total_band(calls, "atlas-a2", *files)
    assert t["text"].startswith("no band for 80% of the time (no validation row backs "
                                "cross_entropy_loss_grad on atlas-a2); ±5% on the other 20%")
    nothing = total_band(calls[1:], "atlas-a2", *files)
    assert nothing["text"].startswith("no band")


def test_a_ratio_of_two_backed_totals_has_a_band():
    fast = {"band": 0.1, "covered": 1.0}
    slow = {"band": 0.2, "covered": 1.0}
    low, high = ratio_band(fast, slow)
    assert (low, high) == (pytest.approx(0.8 / 1.1), pytest.approx(1.2 / 0.9))
    assert ratio_band(fast, {"band": 0.2, "covered": 0.5}) is None
    assert ratio_band(fast, {"band": None, "covered": 0.0}) is None


def test_the_default_band_comes_from_the_committed_files():
    rows, errors = load_table(), load_status()["errors"]
    for op, chip in (("silu_backward", "atlas-a2"), ("convolution_backward", "atlas-a2"),
                     ("silu_backward", "atlas-training")):
        mine = [r for r in rows if r.op == op and r.model == chip
                and r.counted and not r.calibrated and r.kernels and r.id in errors]
        sizes = [abs(e["error"]) for e in entries(mine, errors)]
        b = band(op, chip)
        assert b["rows"] == len(mine)
        assert b["band"] == (pytest.approx(max(sizes)) if sizes else None)


def test_a_group_backs_a_band_once_against_the_mean_of_its_measurements():
    """The CATLASS GEMV's two tiles are one npusim prediction: its band counts their entry
    (against the mean of 36.3 and 15.5 us), not the tuned row's +239% alone."""
    errors = load_status()["errors"]
    gemv = [r for r in load_table() if r.group == "catlass-1x768x5120-fp32-gemv"]
    b = band("convolution_backward", "atlas-a2", kernels=[("Conv3DBackpropInputV2", 1.0)])
    assert {r.id for r in gemv} <= set(b["ids"])
    (entry,) = entries(gemv, errors)
    assert b["band"] == pytest.approx(abs(entry["error"]))
    assert b["band"] < abs(errors["catlass-1x768x5120-fp32-tuned"])


def test_the_committed_table_backs_no_band_with_another_kernel():
    """Issue 38 item 5: SiluBackward's '±2%' came from the one row comparing SiluGrad with a
    fill; the A2's convolution band names the kernels behind it (the GEMM's dx kernel and the
    3-D dw sequence), and a 2-D dx kernel no row ran gets none."""
    silu = band("silu_backward", "atlas-a2", kernels=[("SiluGrad", 10.0)])
    assert silu["rows"] == 0 and silu["other_kernel"] == ["hbm-910b-fill"]
    assert silu["text"].startswith("no band")
    conv = band("convolution_backward", "atlas-a2")
    assert set(conv["kernels"]) == {"Conv3DBackpropInputV2", "TransData", "MemSet",
                                    "Conv3DBackpropFilter"}
    assert band("convolution_backward", "atlas-a2",
                kernels=[("Conv2DBackpropInput", 1.0)])["rows"] == 0


def _expected(summary: dict) -> dict:
    kernels = [(k["op_type"], k["cycles"]) for k in summary["kernels"]]
    return band(summary["op"], summary["chip"], kernels=kernels)


def test_run_prints_the_band_after_the_time_and_writes_it(tmp_path, capsys):
    assert main(["run", "silu_backward", "--shape", "1024", "--out", str(tmp_path / "r")]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  time  "))
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    expected = _expected(summary)
    assert lines[at + 1] == f"  error band  {expected['text']}"
    assert expected["text"].startswith("no band")     # the fill row backs none
    assert summary["band"] == expected


def test_compare_shows_each_chips_band(capsys, tmp_path):
    chips = ["atlas-training", "atlas-a2"]
    assert main(["compare", "silu_backward", "--shape", "1024", "--chips", ",".join(chips),
                 "--out", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    bands = [_expected(s) for s in json.loads((tmp_path / "c" / "compare.json").read_text())]
    row = next(line for line in out.splitlines() if line.startswith("error band "))
    assert row.split() == ["error", "band"] + " ".join(band_cell(b) for b in bands).split()
    for chip, b in zip(chips, bands, strict=True):
        assert f"{chip}: error band: {b['text']}" in out


def test_compare_gives_two_chips_of_one_name_distinct_headers(tmp_path, capsys):
    """Issue 42 item 13: a changed copy of atlas-a2.toml beside the shipped one: two columns
    both headed atlas-a2 before; now each names its file's hash, and only the shipped one
    has a band."""
    text = (models_dir() / "atlas-a2.toml").read_text()
    mine = tmp_path / "atlas-a2.toml"
    mine.write_text(text.replace("clock_hz = 1.8e9", "clock_hz = 2.0e9"))
    assert main(["compare", "silu_backward", "--shape", "1024", "--chips",
                 f"atlas-a2,{mine}"]) == 0
    out = capsys.readouterr().out.splitlines()
    head = out[1].split()
    assert len(head) == 4 and head[0] == head[2] == "atlas-a2" and head[1] != head[3]
    assert any(line.startswith(f"atlas-a2 {head[3]}: error band: no band: the chip file")
               for line in out)


def test_an_absurd_chip_is_refused(tmp_path):
    """Issue 42 item 13: a clock above 10 GHz, GM below 1 GB/s, 4,000 cores."""
    from npusim.errors import ChipModelError

    text = (models_dir() / "atlas-a2.toml").read_text()
    for old, new in (("clock_hz = 1.8e9", "clock_hz = 1e30"),
                     ("hbm_bytes_per_s = 1.6e12", "hbm_bytes_per_s = 5e8"),
                     ("ai_core_count = 24", "ai_core_count = 4000")):
        path = tmp_path / "absurd.toml"
        path.write_text(text.replace(old, new))
        with pytest.raises(ChipModelError, match="outside the plausible range"):
            load_chip(str(path))


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
        assert r["band"] == band(r["op"], r["chip"], kernels=r["kernel_us"])
        assert f"| {band_cell(r['band'])} |" in md
    for chip in ("atlas-training", "atlas-a2"):      # a total: the calls every chip runs
        ran = [(r["op"], r["total_us"], r["kernel_us"]) for r in report["rows"]
               if r["chip"] == chip and r["status"] == "ok"
               and r["call"] in report["common_calls"]]
        text = total_band(ran, chip)["text"]
        assert report["totals"][chip]["band"]["text"] == text
        assert f"  {text}  " in printed and f"| {text} |" in md


def test_predict_headline_says_no_band_and_the_speedup_has_one(tmp_path, capsys):
    """Issue 42 item 19: a chip no validation row backs says "no band" in the headline cell
    itself, and the speed-up cell and sentence carry the ratio's band (or say it has none)."""
    path = tmp_path / "tiny.toml"
    path.write_text(WORKLOAD)
    out = tmp_path / "report"
    assert main(["predict", str(path), "--out", str(out), "--jobs", "1"]) == 0
    report = json.loads((out / "report.json").read_text())
    head = report["tables"]["headline"]
    rows = {r[0]: dict(zip(head["head"], r, strict=True)) for r in head["rows"]}
    assert rows["atlas-training"]["error band"].startswith("no band")
    speed = [r["speed-up vs slowest"] for r in rows.values()]
    faster = [c["text"] for c in speed if c["text"] != "1.00x"]
    assert faster and all(" (band " in t or " (no band: " in t for t in faster), speed
    sentence = next(t for t in report["text"] if "is the fastest" in t)
    assert "band" in sentence


def test_each_report_names_version_command_date_and_chip_hashes(tmp_path, capsys):
    """Issue 42 item 18: the predict report, the validate report, the sweep report and the
    demo report each open with npusim's version, the command, the date and each chip file's
    short sha256."""
    import re

    from npusim.face.demo import _report
    from npusim.face.provenance import version
    from npusim.studies.validate.bands import file_hash

    a2 = file_hash(models_dir() / "atlas-a2.toml")
    path = tmp_path / "tiny.toml"
    path.write_text(WORKLOAD)
    assert main(["predict", str(path), "--out", str(tmp_path / "p"), "--jobs", "1",
                 "--chips", "atlas-a2"]) == 0
    assert main(["sweep", "silu_backward", "--shape", "1024", "--tiling",
                 "tile_length=512,1024", "--out", str(tmp_path / "s")]) == 0
    table = tmp_path / "t.toml"
    table.write_text("[[row]]" + next(p for p in VALIDATION.read_text().split("[[row]]")
                                      if 'id = "hbm-910b-fill"' in p))
    main(["validate", "--table", str(table), "--out", str(tmp_path / "v")])
    capsys.readouterr()
    pages = {"predict": (tmp_path / "p" / "report.md").read_text(),
             "sweep": (tmp_path / "s" / "sweep.md").read_text(),
             "validate": (tmp_path / "v" / "validation.md").read_text(),
             "demo": "\n".join(_report([], [], 1.0))}
    for name, page in pages.items():
        line = next(x for x in page.splitlines() if x.startswith("Made by")), name
        assert f"npusim {version()}; command: npusim" in line[0], line
        assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", line[0]), line
        assert f"atlas-a2 ({models_dir() / 'atlas-a2.toml'}) sha256 {a2}" in line[0], line
    assert f"command: npusim predict {path} --out" in pages["predict"]
