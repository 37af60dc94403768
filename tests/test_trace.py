"""Observability: the Chrome trace, the line trace, stats, memory timeline and plots."""

import json

import pytest

from kernels import run_copy
from npusim.errors import NpusimError
from npusim.face import plot
from trace_check import check_trace


def test_copy_trace_passes_the_schema(chip_name, tmp_path):
    r, _ = run_copy(chip_name, block_dim=2, tiles=4)
    data = check_trace(r, tmp_path / "t.json")
    flows = [e for e in data["traceEvents"] if e["ph"] in ("s", "f")]
    assert flows and len(flows) % 2 == 0


def test_trace_file_grows_linearly(tmp_path):
    sizes = []
    for tiles in (16, 32, 64):
        r, _ = run_copy(block_dim=1, tiles=tiles)
        sizes.append((tmp_path / f"{tiles}.json").stat().st_size
                     if r.write_trace(tmp_path / f"{tiles}.json") else 0)
    ratio = (sizes[2] - sizes[1]) / (sizes[1] - sizes[0])
    assert 1.8 < ratio < 2.2, sizes


def test_unwritable_trace_path_is_an_error_and_leaves_nothing(tmp_path):
    r, _ = run_copy(block_dim=1, tiles=2)
    with pytest.raises(NpusimError, match=r"the folder .*missing-dir does not exist"):
        r.write_trace(tmp_path / "missing-dir" / "t.json")
    assert list(tmp_path.iterdir()) == []


def test_functional_run_has_no_trace(tmp_path):
    r, _ = run_copy(block_dim=1, tiles=2, mode="functional")
    with pytest.raises(NpusimError, match="no trace"):
        r.write_trace(tmp_path / "t.json")
    assert not (tmp_path / "t.json").exists()


def test_stats_are_json_and_account_for_the_bytes(chip_name):
    r, x0 = run_copy(chip_name, block_dim=2, tiles=4, tile=1024)
    s = json.loads(json.dumps(r.stats))
    assert s["bytes_by_path"] == {"GM->UB": x0.nbytes, "UB->GM": x0.nbytes}
    assert s["instruction_counts"]["data_copy"] == 2 * 2 * 4
    assert s["peak_bytes"]["UB"] == 2 * 1024 * 2
    assert 1024 * 2 <= s["peak_live_bytes"]["UB"] <= s["peak_bytes"]["UB"]
    core = s["core_labels"][0]
    assert 0 < s["per_core"][core]["MTE2"]["utilisation"] <= 1
    assert "MTE2" in r.summary()


def test_line_trace_says_why_instructions_waited():
    r, _ = run_copy(block_dim=1, tiles=3)
    text = r.line_trace(0)
    assert "waited" in text and "for flag MTE2->MTE3" in text
    assert "pipe busy with data_copy" in text
    assert len(text.splitlines()) == 1 + sum(1 for rec in r.tracer.records if rec[0] == 0)


def test_line_trace_names_bandwidth_contention():
    r, _ = run_copy(block_dim=48, tiles=4, tile=4096)
    assert any("GM bandwidth shared" in r.line_trace(c) for c in (0, 47))


def test_plots_render_headless(tmp_path, chip_name):
    r, _ = run_copy(chip_name, block_dim=2, tiles=4)
    for fn, name in ((plot.pipeline, "p.png"), (plot.memory, "m.png")):
        path = fn(r, tmp_path / name)
        data = (tmp_path / name).read_bytes()
        assert path.endswith(name) and data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_packed_records_read_back_as_the_rows(monkeypatch, tmp_path):
    """A large run keeps its records a column each; reading them gives the same rows, and the
    Chrome trace written from them is the same file."""
    import pickle

    import npusim.engine.trace as trace_module
    from npusim.micro.vector import run_vector

    plain = run_vector("exp_mul", tiles=4, block_dim=4)
    monkeypatch.setattr(trace_module, "PACK_MIN_ROWS", 1)
    packed = run_vector("exp_mul", tiles=4, block_dim=4)
    def named(row):   # two runs: two sets of instruction objects, so compare by name
        return tuple(getattr(v, "name", v) if not isinstance(v, str) else v for v in row)

    for name in ("records", "marks"):
        rows, cols = getattr(plain.tracer, name), getattr(packed.tracer, name)
        assert isinstance(cols, trace_module.PackedRows) and isinstance(rows, list)
        assert len(cols) == len(rows) and named(cols[3]) == named(rows[3])
        assert named(cols[-1]) == named(rows[-1])
        assert list(map(named, cols[2:7])) == list(map(named, rows[2:7]))
        assert list(map(named, cols)) == list(map(named, rows))
    again = pickle.loads(pickle.dumps(packed.tracer.marks))
    assert list(again) == list(packed.tracer.marks)
    plain.write_trace(tmp_path / "a.json")
    packed.write_trace(tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert packed.stats["peak_live_bytes"] == plain.stats["peak_live_bytes"]


def test_trace_and_plots_get_the_modes_the_umask_asks_for(tmp_path):
    """As the commands' files (0644 under umask 022), not mkstemp's private 0600."""
    import os

    r, _ = run_copy("atlas-a2", block_dim=2, tiles=4)
    old = os.umask(0o022)
    try:
        paths = [r.write_trace(tmp_path / "t.json"), plot.pipeline(r, tmp_path / "p.png"),
                 plot.memory(r, tmp_path / "m.png")]
    finally:
        os.umask(old)
    assert [oct(os.stat(p).st_mode & 0o777) for p in paths] == ["0o644"] * 3
