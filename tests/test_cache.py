"""The cache of study points (npusim/studies/cache.py): a point run again is read, not
simulated; a changed chip file or code is a miss; a corrupted entry is recomputed, never
trusted; --no-cache neither reads nor writes; ``npusim cache clear`` empties it."""

import json
import shutil

import pytest

from npusim.chip import models_dir
from npusim.face.cli import main
from npusim.studies import cache, executor

POINT = {"op": "silu_backward", "chip": "atlas-a2", "shape": [4096], "dtype": "float16",
         "params": {}, "tiling": None, "numerics": False, "check": False, "seed": 0,
         "explain": False}


@pytest.fixture
def runs(monkeypatch):
    """The points actually simulated (not read from the cache)."""
    simulated = []
    real = executor.run_point

    def counted(point):
        simulated.append(point)
        return real(point)

    monkeypatch.setattr(executor, "run_point", counted)
    return simulated


def _entries():
    return sorted(cache.cache_dir().glob("*/*.json"))


def test_a_point_run_again_is_read_from_the_cache(runs):
    first = executor.run_points([POINT])
    assert len(runs) == 1 and first[0]["status"] == "ok" and len(_entries()) == 1
    again = executor.run_points([POINT, {**POINT, "shape": [8192]}])
    assert len(runs) == 2 and runs[-1]["shape"] == [8192]     # only the new point ran
    assert again[0] == first[0]
    assert not list(cache.cache_dir().glob("*/.tmp-*"))       # no temporary file left


def test_a_changed_chip_file_is_a_miss(runs, tmp_path):
    chip = tmp_path / "chip.toml"
    shutil.copy(models_dir() / "atlas-a2.toml", chip)
    point = {**POINT, "chip": str(chip)}
    executor.run_points([point])
    executor.run_points([point])
    assert len(runs) == 1
    chip.write_text(chip.read_text() + "\n# the same model, another file\n")
    executor.run_points([point])
    assert len(runs) == 2


def test_other_code_is_a_miss(runs, monkeypatch):
    executor.run_points([POINT])
    monkeypatch.setattr(cache, "code_version", lambda: "another version")
    executor.run_points([POINT])
    assert len(runs) == 2


@pytest.mark.parametrize("damage", ["truncated", "not json", "record edited", "other key"])
def test_a_corrupted_entry_is_recomputed(runs, damage):
    first = executor.run_points([POINT])[0]
    (path,) = _entries()
    text = path.read_text()
    entry = json.loads(text)
    if damage == "truncated":
        path.write_text(text[:len(text) // 2])
    elif damage == "not json":
        path.write_bytes(b"\x00\xff garbage")
    elif damage == "record edited":         # the checksum no longer matches
        entry["record"]["cycles"] += 1
        path.write_text(json.dumps(entry))
    else:                                   # a valid entry of another point, moved here
        entry["key"] = "0" * 64
        path.write_text(json.dumps(entry))
    assert cache.load(POINT) is None
    again = executor.run_points([POINT])[0]
    assert len(runs) == 2 and again["cycles"] == first["cycles"]
    assert cache.load(POINT) == again       # stored afresh


def test_no_cache_neither_reads_nor_writes(runs):
    with cache.disabled():
        executor.run_points([POINT])
        assert not _entries()
    executor.run_points([POINT])
    with cache.disabled():
        executor.run_points([POINT])
    assert len(runs) == 3


def test_errors_are_not_cached(runs):
    bad = {**POINT, "tiling": {"tile_length": 3}}
    record = executor.run_points([bad])[0]
    assert record["status"] != "ok"
    if record["status"] != "does not fit":
        assert not _entries()


def test_cache_clear_command(capsys):
    executor.run_points([POINT])
    assert _entries()
    assert main(["cache", "clear"]) == 0
    assert not _entries()
    assert "removed 1 cached point" in capsys.readouterr().out
    assert main(["cache", "path"]) == 0
    assert str(cache.cache_dir()) in capsys.readouterr().out


def test_the_no_cache_option_of_a_study_command(tmp_path):
    args = ["sweep", "silu_backward", "--shape", "4096", "--tiling", "tile_length=1024,2048",
            "--check", "none", "--jobs", "1"]
    assert main([*args, "--no-cache", "--out", str(tmp_path / "a")]) == 0
    assert not _entries()
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    assert len(_entries()) >= 2
    assert cache.enabled()             # --no-cache ended with its command
