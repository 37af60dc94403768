"""docs/modelling/costs.md holds, per chip and instruction class, what models/ charges and
where it comes from (npusim/studies/validate/costs_page.py)."""

from pathlib import Path

from npusim import load_chip
from npusim.chip import chips, models_dir
from npusim.studies.validate import costs_page

PAGE = Path(__file__).resolve().parent.parent / "docs" / "modelling" / "costs.md"


def parsed() -> dict:
    """{chip: {class: (figure, kind, source)}} read off the page."""
    out, chip = {}, None
    for line in PAGE.read_text().splitlines():
        if line.startswith("## "):
            chip = out.setdefault(line[3:].strip(), {})
        elif chip is not None and line.startswith("| ") and not line.startswith("| class"):
            label, fig, kind, source = (c.strip() for c in line.strip("|").split(" | ", 3))
            chip[label] = (fig, kind, source)
    return out


def test_the_page_is_what_the_models_give():
    assert PAGE.read_text() == costs_page.page(), (
        "docs/modelling/costs.md is out of date: python -m npusim.studies.validate.costs_page "
        "> docs/modelling/costs.md")


def test_every_chip_and_class_has_a_row_with_its_figure_and_kind():
    page = parsed()
    assert sorted(page) == chips()
    for name in chips():
        chip = load_chip(name)
        rows = costs_page.rows(chip)
        assert len(page[name]) == len(rows)
        for label, fig, kind, _ in rows:
            assert page[name][label][:2] == (fig, kind)
            assert kind in ("measured", "documented", "assumed")
        for table in chip.rate_tables.values():
            assert (models_dir() / table.file).exists()
            assert any(f"models/{table.file}" in f for f, _, _ in page[name].values())


def test_a2_data_paths_are_measured_and_start_ups_not_assumed():
    page = parsed()["atlas-a2"]
    for label in ("DataCopy GM->UB (MTE2)", "DataCopy UB->GM (MTE3)", "FixPipe L0C->GM",
                  "LoadData2D L1->L0B (MTE1)", "kernel start-up, TBE", "vector add f32"):
        assert page[label][1] == "measured", label
    assert parsed()["atlas-training"]["kernel start-up, TBE"][1] == "assumed"
