"""The validation table: every row within its stated tolerance of its published measurement,
and the table's machinery (loading, the command, its files, its errors).

The rows marked slow (the 6144^3 and 8192^3 GEMMs: about 15 s and 35 s of simulation) run only
with NPUSIM_SLOW=1; the 4096^3 rows cover the same kernel at a quarter (an eighth) of the work.
"""

import json
import os

import pytest

from npusim.errors import NpusimError
from npusim.face.cli import main
from npusim.studies import validate as val

ROWS = val.load_table()
SLOW = os.environ.get("NPUSIM_SLOW") == "1"


@pytest.fixture(scope="module")
def table():
    """Every row's result, each distinct case run once (slow rows only with NPUSIM_SLOW=1)."""
    return {x["id"]: x for x in val.validate(ROWS, jobs=1, slow=SLOW)["rows"]}


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_row_is_within_its_tolerance(table, row):
    if row.slow and not SLOW:
        pytest.skip(f"slow row (NPUSIM_SLOW=1 runs it): {row.note}")
    x = table[row.id]
    assert x["status"] == "ok", x["why"]
    assert abs(x["error"]) <= row.tolerance, (
        f"{row.id}: predicted {x['predicted_us']:.1f} us against {x['measured_us']:.1f} us "
        f"measured ({x['error']:+.1%}; tolerance +-{row.tolerance:.0%})")


def test_every_row_names_its_source_and_how_it_was_timed():
    for row in ROWS:
        assert row.url.startswith("https://") and row.source and row.timed and row.note
        assert row.covers in ("cube", "hbm", "vector")
        assert 0 < row.tolerance <= 1.0
        assert row.unit == "us" or row.work or row.rate == "vector_ops"
    assert len({r.id for r in ROWS}) == len(ROWS)


def test_measured_time_follows_the_published_figure():
    row = next(r for r in ROWS if r.id == "mm-910b2-4096")
    assert val.measured_us(row, {}) == pytest.approx(2 * 4096 ** 3 / 314.52e12 * 1e6)
    hbm = next(r for r in ROWS if r.covers == "hbm")
    assert val.measured_fraction(hbm) == pytest.approx(1.493 / 1.6)
    record = {"effective_tiling": {"tile_length": 100},
              "instruction_counts": {"add": 3, "exp": 2, "data_copy": 9, "set_flag": 4}}
    assert val.vector_ops(record) == 500


def small_table(tmp_path, ids=("catlass-160x6144x2048",)):
    text = (val.TABLE.read_text()).split("[[row]]")
    keep = [part for part in text[1:] if any(f'id = "{i}"' in part for i in ids)]
    path = tmp_path / "table.toml"
    path.write_text("".join("[[row]]" + part for part in keep))
    return path


def test_command_prints_the_table_and_writes_its_files(tmp_path, capsys):
    out = tmp_path / "v"
    status = main(["validate", "--table", str(small_table(tmp_path)), "--jobs", "1",
                   "--out", str(out)])
    text = capsys.readouterr().out
    assert "catlass-160x6144x2048" in text and "mean absolute error" in text
    assert sorted(os.listdir(out)) == ["validation.csv", "validation.json", "validation.md",
                                       "validation.png"]
    data = json.loads((out / "validation.json").read_text())
    assert data["ran"] == 1 and data["rows"][0]["measured_us"] == 40.6
    assert status == (0 if data["rows"][0]["within"] else 1)    # 1: a row out of tolerance
    assert "https://github.com/hicann/catlass" in (out / "validation.md").read_text()


def test_skip_slow_lists_the_slow_rows_without_running_them(tmp_path, capsys):
    path = small_table(tmp_path, ("mm-910b2-8192",))
    assert main(["validate", "--table", str(path), "--skip-slow"]) == 0
    out = capsys.readouterr().out
    assert "skipped" in out and "0 rows ran" in out


@pytest.mark.parametrize("text, words", [
    ("[[row]]\nid = 1\n", "lacks"),
    ("not toml [", "validation table"),
    ("", "no [[row]] entries"),
])
def test_bad_table_is_one_line(tmp_path, capsys, text, words):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(NpusimError, match=words.replace("[", r"\[")):
        val.load_table(path)
    assert main(["validate", "--table", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and words in err

