"""The fit of the convolution operators' fitted numbers, to run again after a model change.

Two numbers of the Atlas A2 model were fitted on the Conv3DBackpropFilter rows of the
validation table (cann-bench on 910B2, issue 29): ``launch.tbe_kernel_start_cycles`` (the
start-up of a TBE or TIK kernel) and ``mte.load3d_l0b_bytes_per_cycle`` (the img2col rate into
L0B). The fit runs the rows once per L0B rate of the grid, takes each kernel sequence's time
without the TBE start-ups (``body``), and then picks the rate and start-up that give the least
mean |relative error|, the start-up in 0.05 us steps over 5-10 us: first on the rows of
``FIT_IDS`` alone, judged on the rows held out, then on all of them (the values the model
keeps). Each kernel's start-up is additive in the sequence's kernel time, so the start-up needs
no run of its own.

``python -m npusim.studies.validate.refit`` prints the fit, its held-out half and the residuals, the
figures the model's source lines quote. Nothing is written: the maintainer puts the values in
``models/`` with their new source line and re-records the table (``npusim validate --record``).
"""

import argparse
import re
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from npusim.chip import load_chip, models_dir
from npusim.errors import NpusimError
from npusim.studies.executor import run_points
from npusim.studies.validate.study import load_table

MODEL = "atlas-a2"
ROW_PREFIX = "conv3d-dw-910b2-"
# the odd-listed rows of the table (cann-bench cases 1, 4, 6, 8, 10, 12, 14, 16, 20)
FIT_IDS = tuple(f"{ROW_PREFIX}{n:02d}" for n in (1, 4, 6, 8, 10, 12, 14, 16, 20))
RATES = (128.0, 96.0, 80.0, 72.0, 64.0, 56.0, 48.0, 40.0, 32.0, 28.4)   # PERF-LOAD's range
STARTS_US = tuple(round(5.0 + 0.05 * k, 2) for k in range(101))
RATE_KEY = "load3d_l0b_bytes_per_cycle"


@dataclass(frozen=True)
class Body:
    """A row's measured time and npusim's kernel time without the TBE start-ups."""

    id: str
    measured_us: float
    body_us: float
    tbe_kernels: int

    def error(self, start_us: float) -> float:
        return (self.body_us + self.tbe_kernels * start_us) / self.measured_us - 1.0


def conv_rows() -> list:
    """The table's Conv3DBackpropFilter rows, in table order."""
    return [r for r in load_table() if r.id.startswith(ROW_PREFIX)]


def chip_text(rate: float) -> str:
    """The A2 model's TOML with its L0B img2col rate set to ``rate``."""
    text = (models_dir() / f"{MODEL}.toml").read_text(encoding="utf-8")
    new, n = re.subn(rf"(?m)^{RATE_KEY} = .*$", f"{RATE_KEY} = {float(rate)}", text)
    if n != 1:
        raise NpusimError(f"refit: models/{MODEL}.toml has {n} lines '{RATE_KEY} = ...'; "
                          "the fit needs exactly one")
    return new


def bodies(rate: float, rows=None, jobs: int = 1) -> list:
    """Each row's ``Body`` on the A2 model with the L0B rate ``rate`` (B/cycle)."""
    rows = conv_rows() if rows is None else rows
    chip = load_chip(MODEL)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{MODEL}-l0b-{rate}.toml"
        path.write_text(chip_text(rate), encoding="utf-8")
        records = run_points([replace(r, model=str(path)).point() for r in rows], jobs=jobs)
    out = []
    for row, rec in zip(rows, records, strict=True):
        if rec["status"] != "ok":
            raise NpusimError(f"refit: row {row.id} did not run: {rec['error']}")
        tbe = sum(k["impl"] == "tbe" for k in rec["kernels"])
        cycles = sum(k["cycles"] for k in rec["kernels"]) - tbe * chip.tbe_kernel_start_cycles
        out.append(Body(row.id, row.value, cycles / chip.clock_hz * 1e6, tbe))
    return out


def figures(rows: list, start_us: float, tolerance: float = 0.2) -> tuple:
    """(mean |error|, rows within ``tolerance``) of ``rows`` at the start-up ``start_us``."""
    errors = [abs(b.error(start_us)) for b in rows]
    return sum(errors) / len(errors), sum(e <= tolerance for e in errors)


def best(table: dict, ids=None) -> tuple:
    """(mean |error|, rate, start-up in us) with the least mean |error| over the rows ``ids``
    (None: all), ``table`` mapping each rate to its rows' ``Body``; ties go to the earlier
    rate of the table and the smaller start-up."""
    found = None
    for rate, rows in table.items():
        use = [b for b in rows if ids is None or b.id in ids]
        for start in STARTS_US:
            cand = (round(figures(use, start)[0], 9), rate, start)
            if found is None or cand[0] < found[0]:
                found = cand
    return found


def summary(rows: list, start_us: float, tolerance: float = 0.2) -> str:
    mae, within = figures(rows, start_us, tolerance)
    return f"MAE {100 * mae:.1f}%, {within} of {len(rows)} within {tolerance:.0%}"


def report(table: dict) -> list:
    """The fit's lines: on FIT_IDS and judged on the rest, then on all rows, with residuals."""
    _, rate, start = best(table, FIT_IDS)
    rows = table[rate]
    fit = [b for b in rows if b.id in FIT_IDS]
    held = [b for b in rows if b.id not in FIT_IDS]
    lines = [f"fitted on the {len(fit)} rows {', '.join(b.id[-2:] for b in fit)}: "
             f"{rate:g} B/cycle and {start:.2f} us, {summary(fit, start)}",
             f"judged on the {len(held)} held out {', '.join(b.id[-2:] for b in held)}: "
             f"{summary(held, start)}"]
    _, rate, start = best(table)
    rows = table[rate]
    lines += [f"fitted on all {len(rows)}: {rate:g} B/cycle and {start:.2f} us, "
              f"{summary(rows, start)}",
              "residuals on all: " + ", ".join(f"{b.id[-2:]} {100 * b.error(start):+.1f}%"
                                                for b in rows)]
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m npusim.studies.validate.refit",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", default=",".join(f"{r:g}" for r in RATES),
                        help="L0B img2col rates to try, B/cycle, comma-separated")
    parser.add_argument("--jobs", type=int, default=1, help="local processes")
    args = parser.parse_args(argv)
    try:
        rates = [float(r) for r in args.rates.split(",")]
    except ValueError:
        print(f"refit: --rates {args.rates!r}: give numbers separated by commas",
              file=sys.stderr)
        return 2
    table = {}
    try:
        for rate in rates:
            table[rate] = bodies(rate, jobs=args.jobs)
            print(f"ran the {len(table[rate])} rows at {rate:g} B/cycle", flush=True)
    except NpusimError as exc:
        print(f"refit: {exc}", file=sys.stderr)
        return 2
    print("\n".join(report(table)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
