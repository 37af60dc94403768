"""The second validation block: published whole-step training times against npusim's step.

Each row of ``steps.toml`` names a workload, a per-card batch, the formats the framework ran
(graph mode: ``internal``) and the chip model; its prediction is the workload's step on that
chip, every call counted, in those formats (``npusim.studies.predict.step``). A row whose
workload did not run every call on its chip is compared without those calls and counted only
when what did not run takes at most 1% of the step where it ran (``MISSING_SHARE``, set before
any row ran); its line says which calls and their share either way.
``step_errors`` reads a prediction that has already run (``npusim predict`` prints them);
``steps_run.run_steps`` predicts every row's workload and batch (``npusim validate --steps``;
minutes, the study-point cache makes a second run quick). The tolerance, +-25%, was set before any
row ran; no model number is changed to fit these rows (DESIGN.md, the fidelity rule).
"""

import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from npusim.errors import NpusimError

UNITS = ("ms/step", "images/s")
FIELDS = ("id", "measurement", "source", "url", "chip", "model", "framework", "cards",
          "workload", "batch", "formats", "value", "unit", "tolerance", "note")


@dataclass(frozen=True)
class StepRow:
    id: str
    measurement: str
    source: str
    url: str
    chip: str
    model: str
    framework: str
    cards: int
    workload: str
    batch: int
    formats: str
    value: float
    unit: str
    tolerance: float
    note: str

    @property
    def measured_ms(self) -> float:
        """The published figure as one card's step time."""
        return self.value if self.unit == "ms/step" else self.batch / self.value * 1000.0


def load_steps(path=None) -> list:
    """The rows of ``steps.toml`` (or ``path``), each checked."""
    where = Path(path) if path else Path(str(resources.files("npusim.studies.validate"))) \
        / "steps.toml"
    raw = tomllib.loads(where.read_text(encoding="utf-8"))
    rows = [_row(entry, where) for entry in raw.get("row", [])]
    ids = [r.id for r in rows]
    if len(set(ids)) != len(ids):
        raise NpusimError(f"{where}: two rows share an id")
    return rows


def _row(entry: dict, where) -> StepRow:
    missing = [f for f in FIELDS if f not in entry]
    if missing or set(entry) - set(FIELDS):
        raise NpusimError(f"{where}: row {entry.get('id', '?')}: fields {', '.join(FIELDS)}; "
                          f"missing {missing}, unknown {sorted(set(entry) - set(FIELDS))}")
    row = StepRow(**entry)
    if row.unit not in UNITS or not row.value > 0 or not 0 < row.tolerance < 1:
        raise NpusimError(f"{where}: row {row.id}: unit one of {', '.join(UNITS)}, value > 0, "
                          f"0 < tolerance < 1; got {row.unit!r}, {row.value}, {row.tolerance}")
    if row.formats not in ("aclnn", "internal"):
        raise NpusimError(f"{where}: row {row.id}: formats {row.formats!r}: aclnn or internal")
    return row


def formats_us(rows: list, formats: str) -> float:
    """The rows' time x count as aclnn runs each call (``aclnn``) or in graph mode
    (``internal``: each call's graph form where it has one, ``npusim.studies.predict.graph``),
    whatever formats they were reported in."""
    return sum(r[f"{formats}_us"] * r["count"] for r in rows)


def predicted_ms(result: dict, row: StepRow):
    """(the step's time on the row's chip in its formats, in ms; None and why when the
    prediction cannot give it)."""
    chip = row.model
    if chip not in result["chips"]:
        return None, f"{chip} not among the chips predicted"
    mine = [r for r in result["rows"] if r["chip"] == chip]
    every = [r for r in mine if r["status"] == "ok"]
    us = formats_us(every, row.formats)
    missing = [r["call"] for r in mine if r["status"] not in ("ok", "not on this product")]
    if not missing:
        return us / 1000.0, ""
    elsewhere = _elsewhere_us(result, missing)
    calls = ", ".join(map(str, missing))
    if elsewhere is None:
        return None, f"calls {calls} ran on no chip: the step is incomplete"
    share = elsewhere / us if us else 1.0
    return us / 1000.0, (f"without calls {calls}, not run on {chip}: {elsewhere:.1f} us "
                         f"where they ran, {share:.1%} of the step"
                         + ("" if share <= MISSING_SHARE else "; not counted"))


MISSING_SHARE = 0.01   # set before any row ran: a step missing more is not compared


def _elsewhere_us(result: dict, calls: list):
    """The most the ``calls`` take x count on any chip that ran them; None when one ran on
    none."""
    total = 0.0
    for call in calls:
        ran = [r["total_us"] for r in result["rows"] if r["call"] == call and r["status"] == "ok"]
        if not ran:
            return None
        total += max(ran)
    return total


def step_errors(result: dict, rows=None) -> list:
    """[{row, predicted_ms, error, within, why}] for the rows of this prediction's workload
    and batch."""
    name, batch = result["workload"].name, result["batch"]
    out = []
    for row in rows if rows is not None else load_steps():
        if row.workload != name or row.batch != batch:
            continue
        ms, why = predicted_ms(result, row)
        error = ms / row.measured_ms - 1 if ms is not None else None
        counted = error is not None and not why.endswith("not counted")
        out.append({"row": row, "predicted_ms": ms, "error": error, "why": why,
                    "counted": counted, "within": counted and abs(error) <= row.tolerance})
    return out


def rows_elsewhere(result: dict, rows=None) -> list:
    """The rows of this workload at another batch (the report says how to run them)."""
    name, batch = result["workload"].name, result["batch"]
    return [r for r in (rows if rows is not None else load_steps())
            if r.workload == name and r.batch != batch]


def lines(found: list) -> list:
    """One line a row, then the figure."""
    out = []
    for x in found:
        r = x["row"]
        head = (f"{r.id} ({r.model}, batch {r.batch}, {r.cards} card{'s' if r.cards > 1 else ''}"
                f", formats {r.formats}): measured {r.measured_ms:.1f} ms/step")
        if x["error"] is None:
            out.append(f"{head}; no prediction: {x['why']}")
        else:
            note = f"; {x['why']}" if x["why"] else ""
            verdict = ("within" if x["within"] else "OUTSIDE") if x["counted"] else "not"
            out.append(f"{head}, predicted {x['predicted_ms']:.1f} ms: {x['error']:+.1%} "
                       f"({verdict} +-{r.tolerance:.0%}){note}")
    ran = [x for x in found if x["counted"]]
    if ran:
        mae = sum(abs(x["error"]) for x in ran) / len(ran)
        out.append(f"whole-step rows: {len(ran)} ran, {sum(x['within'] for x in ran)} within "
                   f"tolerance; mean absolute error {mae:.1%}")
    return out
