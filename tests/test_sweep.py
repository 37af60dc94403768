"""npusim sweep: every point a row, the same rows whatever runs them (in-process, a process
pool, a Dask LocalCluster), --resume reruns nothing, and bad input is one clear line."""

import csv
import shutil

import pytest

from npusim.face.cli import main
from npusim.studies import sweep as sweep_mod
from npusim.studies.space import parse_space, points
from npusim.studies.sweep import sweep

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
    assert parse_space("block_dim=8:48:8") == ("block_dim", [8, 16, 24, 32, 40, 48])
    assert parse_space("t=pow2:1024:16384")[1] == [1024, 2048, 4096, 8192, 16384]
    assert parse_space("deterministic=true,false")[1] == [True, False]
    drawn = points({"a": list(range(10)), "b": list(range(10))}, samples=7, seed=3)
    assert len(drawn) == 7 and len({tuple(d.values()) for d in drawn}) == 7
    assert drawn == points({"a": list(range(10)), "b": list(range(10))}, samples=7, seed=3)


BAD = {
    "unknown field": (["--tiling", "tile_size=1024"], "no tiling field 'tile_size'"),
    "empty space": (["--tiling", "tile_length="], "FIELD=SPACE"),
    "malformed list": (["--tiling", "tile_length=1024,x"], "not an integer"),
    "backwards range": (["--tiling", "block_dim=48:8"], "start <= stop"),
    "bad pow2": (["--tiling", "tile_length=pow2:0"], "pow2:lo:hi"),
    "no tiling": ([], "--tiling"),
    "bad samples": (["--tiling", "block_dim=8:16", "--samples", "0"], "positive integer"),
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
    err = capsys.readouterr().err.strip().splitlines()
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
