"""The fit of the A2 model's TBE start-up and L0B img2col rate (npusim/studies/validate/refit.py):
the committed numbers are what the fit gives, and the held-out half meets issue 29's targets."""

import pytest

from npusim.chip import load_chip
from npusim.studies.validate import refit
from npusim.studies.validate.refit import FIT_IDS, Body

# issue 29's targets, set before the fit: mean |error| at most 15%, 14 of 17 within +-20%,
# on the half not fitted as well as on all (14 of 17 scaled to the 8 held out: 7)
TARGET_MAE = 0.15
TARGET_WITHIN = {17: 14, 8: 7}


@pytest.fixture(scope="module")
def committed():
    """The 17 rows run at the model's own L0B rate: {rate: bodies}."""
    chip = load_chip(refit.MODEL)
    rate = chip.load3d_l0b_bytes_per_cycle
    return chip, {rate: refit.bodies(rate)}


def test_the_model_keeps_the_start_up_fitted_on_all_rows(committed):
    """At the committed rate (the rate grid itself is too slow for the suite: run
    ``python -m npusim.studies.validate.refit``), the start-up with the least mean |error| on all 17
    is the model's, and both meet the targets."""
    chip, table = committed
    (rows,) = table.values()
    assert len(rows) == 17
    _, _, start = refit.best(table)
    assert round(start * 1e-6 * chip.clock_hz) == chip.tbe_kernel_start_cycles
    mae, within = refit.figures(rows, start)
    assert mae <= TARGET_MAE and within >= TARGET_WITHIN[17]


def test_the_half_held_out_meets_the_targets_and_the_source_quotes_it(committed):
    chip, table = committed
    (rows,) = table.values()
    _, _, start = refit.best(table, FIT_IDS)
    held = [b for b in rows if b.id not in FIT_IDS]
    mae, within = refit.figures(held, start)
    assert len(held) == 8 and mae <= TARGET_MAE and within >= TARGET_WITHIN[8]
    source = chip.sources["mte.load3d_l0b_bytes_per_cycle"]
    assert f"and {start:.2f} us" in source
    assert f"MAE {100 * mae:.1f}%, {within} of 8 within" in source


def test_best_finds_the_start_up_and_rate_that_made_the_rows():
    def rows(rate_bias):
        return [Body(f"r{i}", 10.0 + i, 10.0 + i - n * 6.5 + rate_bias * i, n)
                for i, n in enumerate((5, 5, 7, 5, 7), 1)]
    table = {128.0: rows(0.4), 64.0: rows(0.0), 32.0: rows(-0.3)}
    assert refit.best(table) == (0.0, 64.0, 6.5)
    assert refit.best(table, {"r1", "r2"})[1:] == (64.0, 6.5)


def test_bad_rates_are_one_line(capsys):
    assert refit.main(["--rates", "64,fast"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "'64,fast'" in err
