"""npusim sweep: every point a row, the same rows whatever runs them (in-process, a process
pool, a Dask LocalCluster), --resume reruns nothing, and bad input is one clear line."""

import csv
import shutil

import pytest

from npusim.errors import NpusimError
from npusim.face.cli import main
from npusim.studies.sweep import store as sweep_store
from npusim.studies.sweep import study as sweep_mod
from npusim.studies.sweep.space import parse_space, points
from npusim.studies.sweep.study import sweep

SILU = dict(chip="atlas-a2", shape=(64, 1024),
            space=["tile_length=pow2:1024:8192", "buffer_num=1,2", "block_dim=8:24:8"])


def _plain(rows):
    """Rows without their wall time, nor the critical path that the best point's check adds."""
    return [{k: v for k, v in r.items() if k not in ("wall_s", "path")} for r in rows]


@pytest.fixture(scope="module")
def silu_rows(tmp_path_factory):
    out = tmp_path_factory.mktemp("silu") / "sweep"
    return sweep("silu_backward", **SILU, jobs=1, out=out), out


def test_every_point_is_a_row_and_what_does_not_fit_says_why(silu_rows):
    rows, out = silu_rows
    assert len(rows) == 4 * 2 * 3
    tilings = {tuple(r["tiling"].values()) for r in rows}
    assert len(tilings) == 24
    bad = [r for r in rows if r["status"] != "ok"]
    assert bad and all(r["status"] == "does not fit" and "UB" in r["error"] for r in bad)
    assert all(r["tiling"]["tile_length"] == 8192 for r in bad)
    ok = [r for r in rows if r["status"] == "ok"]
    assert all(r["cycles"] > 0 and 0 < r["roofline_ratio"] <= 1 for r in ok)
    with open(out / "sweep.csv") as f:
        assert len(list(csv.DictReader(f))) == 24
    text = (out / "sweep.md").read_text()
    assert "ranks" in text and "x the default's speed" in text and "bit-identical" in text
    for name in ("sweep.json", "sweep.png", "pareto.png"):
        assert (out / name).stat().st_size > 1000


def test_process_pool_gives_the_same_rows(silu_rows):
    rows, _ = silu_rows
    assert _plain(sweep("silu_backward", **SILU, jobs=2, check="none")) == \
        _plain([{**r, "check": ""} for r in rows])


def test_a_dask_local_cluster_gives_the_same_rows(silu_rows):
    distributed = pytest.importorskip("distributed")
    rows, _ = silu_rows
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            got = sweep("silu_backward", **SILU, scheduler=client, check="none")
    assert _plain(got) == _plain([{**r, "check": ""} for r in rows])


def test_resume_finishes_with_the_same_rows_and_reruns_none(silu_rows, tmp_path,
                                                            monkeypatch):
    rows, out = silu_rows
    half = tmp_path / "half"
    half.mkdir()
    lines = (out / "sweep.csv").read_text().splitlines()
    (half / "sweep.csv").write_text("\n".join(lines[:13]) + "\n")   # header + 12 points
    shutil.copy(out / sweep_store.IDENTITY, half)
    ran = []
    real = sweep_mod.run_points

    def counting(pts, **kw):
        ran.extend(pts)
        return real(pts, **kw)

    monkeypatch.setattr(sweep_mod, "run_points", counting)
    again = sweep("silu_backward", **SILU, jobs=1, out=half, resume=True, check="none")
    assert len(ran) == 12
    done = {tuple(r["tiling"].values()) for r in again}
    assert len(done) == 24
    key = lambda r: tuple(r["tiling"].values())  # noqa: E731
    old = {key(r): (r["status"], r["cycles"]) for r in rows}
    assert {key(r): (r["status"], r["cycles"]) for r in again} == old


def test_conv_sweep_over_base_blocks_on_both_chips(tmp_path):
    for chip in ("atlas-a2", "atlas-training"):
        rows = sweep("convolution_backward", chip=chip, shape=(2, 32, 8, 8),
                     params={"weight": "32x3"}, space={"base_m": [32, 64], "base_n": [32, 64]},
                     jobs=1, out=tmp_path / chip)
        assert len(rows) == 4 and all(r["status"] == "ok" for r in rows)
        assert "bit-identical" in (tmp_path / chip / "sweep.md").read_text()


def test_spaces_parse_lists_ranges_and_powers_of_two():
    assert parse_space("tile_length=2048,4096") == ("tile_length", [2048, 4096])
    assert parse_space("block_dim=8:48:8") == ("block_dim", range(8, 49, 8))
    assert list(parse_space("block_dim=8:48:8")[1]) == [8, 16, 24, 32, 40, 48]
    assert parse_space("t=pow2:1024:16384")[1] == [1024, 2048, 4096, 8192, 16384]
    assert parse_space("deterministic=true,false")[1] == [True, False]
    drawn = points({"a": list(range(10)), "b": list(range(10))}, samples=7, seed=3)
    assert len(drawn) == 7 and len({tuple(d.values()) for d in drawn}) == 7
    assert drawn == points({"a": list(range(10)), "b": list(range(10))}, samples=7, seed=3)


def test_a_huge_range_is_counted_not_built():
    """Issue 42 item 11: tile_length=1:100000000 was built whole (11.8 GB) before the size
    check; a range is now counted, refused without --samples, and sampled without being
    built (tracemalloc: a built list of 1e8 ints would take gigabytes)."""
    import tracemalloc

    tracemalloc.start()
    field, values = parse_space("tile_length=1:100000000")
    with pytest.raises(NpusimError, match="100,000,000 points"):
        points({field: values})
    drawn = points({field: values}, samples=5, seed=1)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(drawn) == 5 and all(1 <= d["tile_length"] <= 100_000_000 for d in drawn)
    assert peak < 10_000_000, peak
    with pytest.raises(NpusimError, match="at most 100,000 points"):
        points({field: values}, samples=10**8)


BAD = {
    "unknown field": (["--tiling", "tile_size=1024"], "no tiling field 'tile_size'"),
    "empty space": (["--tiling", "tile_length="], "FIELD=SPACE"),
    "malformed list": (["--tiling", "tile_length=1024,x"], "not an integer"),
    "backwards range": (["--tiling", "block_dim=48:8"], "start <= stop"),
    "bad pow2": (["--tiling", "tile_length=pow2:0"], "pow2:lo:hi"),
    "no tiling": ([], "--tiling"),
    "bad samples": (["--tiling", "block_dim=8:16", "--samples", "0"], "positive integer"),
    # issue 42 item 14: no point ran is an error naming why, not an empty report
    "no point ran": (["--tiling", "tile_length=1000,1001"],
                     "2 not allowed); the first, tile_length=1000: aclnnSiluBackward: "
                     "tile_length = 1000: must be a positive multiple of 16"),
    "scheduler that does not answer": (["--tiling", "block_dim=8:16", "--scheduler",
                                        "tcp://127.0.0.1:9"], "cannot reach the Dask scheduler"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_sweep_input_is_one_line_and_no_files(case, tmp_path, capsys):
    args, message = BAD[case]
    out = tmp_path / "out"
    try:
        status = main(["sweep", "silu_backward", "--shape", "64x1024", *args, "--jobs", "1",
                       "--out", str(out)])
    except SystemExit as exc:
        status = exc.code
    err = [line for line in capsys.readouterr().err.strip().splitlines()
           if not line.startswith("sweep [")]     # the points' progress bar
    assert status not in (0, None, 3)
    assert len(err) == 1 and "Traceback" not in err[0] and message in err[0], err
    assert not out.exists()


def test_an_existing_sweep_is_not_overwritten_without_resume(silu_rows, tmp_path, capsys):
    _, out = silu_rows
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    before = (copy / "sweep.csv").read_text()
    status = main(["sweep", "silu_backward", "--shape", "64x1024", "--tiling", "block_dim=8",
                   "--out", str(copy)])
    assert status == 2 and "--resume" in capsys.readouterr().err
    assert (copy / "sweep.csv").read_text() == before


RESUMED_WITH = {
    "chip": (dict(chip="atlas-training"), "chip"),
    "shape": (dict(shape=(32, 1024)), "shape"),
    "dtype": (dict(dtype="float32"), "dtype"),
    "mode": (dict(check="all"), "mode"),
    # issue 42 item 10: the same fields with other values is another sweep
    "values": (dict(space=["tile_length=4096,512", "buffer_num=1,2", "block_dim=8:24:8"]),
               "values"),
    "samples": (dict(samples=5), "samples"),
}


@pytest.mark.parametrize("what", list(RESUMED_WITH))
def test_resume_refuses_another_sweep_naming_the_difference(what, silu_rows, tmp_path):
    _, out = silu_rows
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    before = (copy / "sweep.csv").read_text()
    change, name = RESUMED_WITH[what]
    with pytest.raises(NpusimError) as info:
        sweep("silu_backward", **{**SILU, **change}, jobs=1, out=copy, resume=True)
    text = str(info.value)
    assert f"{name} = " in text and "--resume" in text and "another --out" in text, text
    assert (copy / "sweep.csv").read_text() == before


def test_resume_refuses_a_changed_chip_file_or_other_params(silu_rows, tmp_path):
    from npusim.chip import models_dir

    _, out = silu_rows
    chip = tmp_path / "a2.toml"
    chip.write_text((models_dir() / "atlas-a2.toml").read_text() + "\n# edited\n")
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    with pytest.raises(NpusimError, match="chip_sha256"):
        sweep("silu_backward", **{**SILU, "chip": str(chip)}, jobs=1, out=copy, resume=True)
    ident = sweep_store.read_identity(copy)
    with pytest.raises(NpusimError, match="params = "):
        sweep_store.same_sweep({**ident, "params": {"x": "1"}}, ident, copy)
    with pytest.raises(NpusimError, match="npusim = "):
        sweep_store.same_sweep({**ident, "npusim": "0.0.1"}, ident, copy)


def test_resume_refuses_a_folder_that_does_not_say_what_it_swept(silu_rows, tmp_path):
    _, out = silu_rows
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    (copy / sweep_store.IDENTITY).unlink()
    with pytest.raises(NpusimError, match="does not record what it swept"):
        sweep("silu_backward", **SILU, jobs=1, out=copy, resume=True)


def test_resume_drops_a_half_written_last_row(silu_rows, tmp_path):
    rows, out = silu_rows
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    lines = (copy / "sweep.csv").read_text().splitlines()
    (copy / "sweep.csv").write_text("\n".join(lines[:13]) + "\n" + lines[13][:9])
    again = sweep("silu_backward", **SILU, jobs=1, out=copy, resume=True, check="none")
    assert len(again) == 24
    with open(copy / "sweep.csv") as f:
        assert len(list(csv.DictReader(f))) == 24


@pytest.mark.parametrize("garbage", ["garbage,,,", "1024,1,8,banana,5", "1024,1,8,ok,x,1.0"])
def test_resume_over_a_garbage_row_is_one_line_naming_it(garbage, silu_rows, tmp_path):
    """Issue 42 item 12: a garbage row in sweep.csv then --resume was an internal error
    (ValueError)."""
    _, out = silu_rows
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    with open(copy / "sweep.csv", "a") as f:
        f.write(garbage + "\n")
    with pytest.raises(NpusimError, match=r"sweep.csv, line 26: not a row this sweep wrote"):
        sweep("silu_backward", **SILU, jobs=1, out=copy, resume=True, check="none")


def test_the_report_says_what_limits_ranks_among_the_points_and_counts_every_failure(
        silu_rows):
    from npusim.cases import CASES
    from npusim.studies.sweep.report import markdown

    rows, out = silu_rows
    text = (out / "sweep.md").read_text()
    # the default and the best from their critical paths (issue 26), the others as predict
    assert "What limits the default: it is held by" in text and "of the critical path" in text
    assert "Bottleneck:" not in text
    plain = {k: v for k, v in rows[0].items() if k != "path"}
    from npusim.studies.sweep.report import what_limits
    assert what_limits(plain).startswith("reaches") or "roofline" in what_limits(plain)
    ran = sum(r["status"] == "ok" for r in rows)
    default = dict(rows[0], effective_tiling=dict(rows[0]["tiling"]))   # one of the points
    base = {"chip": "atlas-a2", "shape": [64, 1024], "dtype": "float16", "params": {}}
    fields = list(rows[0]["tiling"])
    md = markdown(CASES["silu_backward"], base, rows, default, None, fields)
    assert f" of {ran}." in md and "not one of the points" not in md
    failed = [dict(r, status="does not fit", error="x") for r in rows[:1]] * 23
    md = markdown(CASES["silu_backward"], base, rows + failed, default, None, fields)
    more = len(rows) - ran + 23 - 20
    assert md.count("- tile_length=") == 20 and f"- ... and {more} more (every point" in md


def test_sweep_png_marks_default_and_best_on_a_categorical_axis_for_few_values():
    from npusim.cases import CASES
    from npusim.studies.sweep.report import axis, title

    assert axis([1, 2, 2, 1]) == ([0.0, 1.0, 1.0, 0.0], ["1", "2"])
    assert axis([True, False]) == ([1.0, 0.0], ["False", "True"])
    assert axis([8, 16, 24, 32, 40]) == ([8.0, 16.0, 24.0, 32.0, 40.0], None)
    base = {"chip": "atlas-a2", "shape": [64, 1024], "dtype": "float16"}
    assert title(CASES["silu_backward"], base) == \
        "aclnnSiluBackward on atlas-a2, float16 64x1024"


def test_small_conv_base_blocks_derive_within_the_event_ids(tmp_path):
    """Issue 42 item 16: at base_m = base_n = 32 the derived dx_step_m was 32 C blocks in L0C,
    more than the 6 event ids per pipe pair (half the README's Dask sweep example failed);
    the derivation now stays within them, and a dx_step_m set above them is one clear
    TilingError naming the field."""
    from npusim.chip import load_chip

    ids = load_chip("atlas-a2").event_ids
    rows = sweep("convolution_backward", chip="atlas-a2", shape=(1, 64, 56, 56),
                 space={"base_m": [32, 64], "base_n": [32]}, jobs=1, check="none",
                 out=tmp_path / "s")
    assert all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
    assert all(1 <= r["effective_tiling"]["dx_step_m"] <= ids for r in rows)
    rows = sweep("convolution_backward", chip="atlas-a2", shape=(1, 64, 56, 56),
                 space={"dx_step_m": [ids + 1, 1], "base_m": [32], "base_n": [32]}, jobs=1,
                 check="none")
    bad = rows[0]
    assert bad["status"] == "does not fit", bad
    assert f"dx_step_m = {ids + 1}" in bad["error"] and f"{ids} event ids" in bad["error"]
    assert rows[1]["status"] == "ok"


def test_out_of_event_ids_in_the_report_names_the_fields_that_set_buffer_counts(silu_rows):
    from npusim.cases import CASES
    from npusim.studies.sweep.report import markdown

    rows, _ = silu_rows
    failed = dict(rows[0], status="does not fit", error="queue 'q': out of event ids for M->FIX")
    default = dict(rows[0], effective_tiling={"tile_length": 1024, "buffer_num": 2})
    base = {"chip": "atlas-a2", "shape": [64, 1024], "dtype": "float16", "params": {}}
    md = markdown(CASES["silu_backward"], base, [*rows, failed], default, None,
                  list(rows[0]["tiling"]))
    assert "The fields that set buffer counts here: buffer_num" in md


def test_the_table_says_busiest_pipe_alike_for_every_row(silu_rows):
    """Issue 42 item 14: rank 1 showed its critical-path share, the others their busy %,
    in one column; now every row shows its busiest pipe's busy share, labelled so."""
    rows, out = silu_rows
    text = (out / "sweep.md").read_text()
    assert "| busiest pipe (% of the time busy) |" in text
    table = [line for line in text.splitlines() if line.startswith("| 1 |")]
    assert table and "critical path" not in table[0]
    ok = sorted((r for r in rows if r["status"] == "ok"), key=lambda r: r["cycles"])
    pipe = max(ok[0]["busy"], key=ok[0]["busy"].get)
    assert f"| {pipe} {ok[0]['busy'][pipe]:.0%} |" in table[0]


def test_a_tiling_value_the_field_does_not_take_is_not_called_does_not_fit():
    from npusim.studies.executor import run_point

    rec = run_point({"op": "silu_backward", "chip": "atlas-a2", "shape": [64, 1024],
                     "dtype": "float16", "params": {}, "tiling": {"tile_length": 1000}})
    assert rec["status"] == "not allowed" and "multiple of 16" in rec["error"]
