"""Predictions held against published hardware measurements: the validation table.

Each row of ``validation.toml`` (beside this module) is a public measurement of an Ascend chip
(source, chip, shape, dtype, what was timed and how) and the npusim case that reproduces it.
``validate`` turns the rows into points (one per distinct case: two measurements of the same
GEMM share a run), runs them timing-only on the study executor and gives each row

- the measured time: the published time, or ``work / rate`` for a published rate (TFLOPS,
  TB/s); for a vector-rate row, the vector element operations the kernel issues over the rate;
- the predicted time: the named kernel's cycles (``compare = "kernel"``) or the op's, over the
  chip model's clock; the op's whole time is kept beside it;
- the error ``predicted / measured - 1`` and whether it is within the row's tolerance.

The table's figures count every row that ran: over the counted entries (a row, or the rows of
a ``group`` npusim predicts with one number, once, against the mean of their measurements) and
over every entry, the rows measuring what npusim does not have at all (``not_modelled``)
included. What is not modelled: host launch
gaps in host-timed rows (torch.mm's event timing), and every difference between the measured
kernel and npusim's (a GEMM row runs npusim's convolution gradInput kernel; see the table).
"""

import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from npusim.errors import NpusimError
from npusim.studies.executor import kernel_cycles, run_points
from npusim.studies.validate import ranking

TABLE = Path(__file__).with_name("validation.toml")
STATUS = Path(__file__).with_name("validation_status.toml")   # the figures the tests hold
UNITS = {"us": 1.0, "TFLOPS": 1e12, "TB/s": 1e12}
RATES = ("work", "vector_ops")
COMPARES = ("kernel", "kernels", "op")   # one named kernel; the sum of the kernels; the op
VECTOR_OPS = {"abs", "add", "adds", "block_reduce_max", "block_reduce_sum", "brcb", "cast",
              "compare", "div", "duplicate", "exp", "gather", "ln", "max", "maxs", "min",
              "mins", "mul", "muls", "reciprocal", "reduce_max", "reduce_sum", "relu",
              "select", "sort", "sqrt", "sub", "whole_reduce_sum"}   # PIPE-V compute
REQUIRED = ("id", "measurement", "source", "url", "chip", "model", "timed", "value", "unit",
            "op", "shape", "dtype", "compare", "tolerance", "covers", "note")


@dataclass(frozen=True, kw_only=True)
class Row:
    """One published measurement and the npusim case that reproduces it."""

    id: str
    measurement: str
    source: str
    url: str
    chip: str
    model: str
    timed: str
    value: float
    unit: str
    op: str
    shape: tuple
    dtype: str
    compare: str
    tolerance: float
    covers: str
    note: str
    work: float = 0.0
    params: dict = field(default_factory=dict)
    kernel: str = ""
    rate: str = "work"
    lane_slots: float = 1.0   # fp16 lane slots one vector element operation takes (2: fp32)
    slow: bool = False
    tiling: dict = field(default_factory=dict)
    not_modelled: str = ""    # what npusim does not have at all: shown apart, in "all rows"
    kernels: tuple = ()       # the kernels (CANN op types) measured that npusim's case runs
    calibrated: str = ""      # the model numbers fitted on this row (then it backs no band)
    group: str = ""           # rows npusim predicts with one number: one entry, mean measured

    @property
    def counted(self) -> bool:
        """Whether the row counts in the table's figures (a row npusim cannot model does not)."""
        return not self.not_modelled

    @property
    def entry(self) -> str:
        """The name the row counts under: its group's, else its own id."""
        return self.group or self.id

    def point(self) -> dict:
        return {"op": self.op, "chip": self.model, "shape": list(self.shape),
                "dtype": self.dtype, "params": dict(self.params),
                "tiling": dict(self.tiling) or None,
                "numerics": False, "check": False, "seed": 0}

    def key(self) -> tuple:
        return (self.op, self.model, tuple(self.shape), self.dtype,
                tuple(sorted(self.params.items())), tuple(sorted(self.tiling.items())))


def load_table(path=None) -> list:
    """The rows of the validation table (``path``: another TOML file of the same form)."""
    path = Path(path) if path else TABLE
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise NpusimError(f"validation table {path}: {(exc.strerror or str(exc)).lower()}; "
                          "give a TOML file of [[row]] entries (the form of "
                          "npusim/studies/validate/validation.toml)") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise NpusimError(f"validation table {path}: {' '.join(str(exc).split())}") from None
    rows = [_row(entry, i, path) for i, entry in enumerate(raw.get("row", []), 1)]
    if not rows:
        raise NpusimError(f"validation table {path}: no [[row]] entries")
    ids = [r.id for r in rows]
    if len(set(ids)) != len(ids):
        raise NpusimError(f"validation table {path}: row ids repeat")
    _check_groups(rows, path)
    return rows


def _check_groups(rows: list, path) -> None:
    """A group's rows run one npusim case (one prediction) at one tolerance, all counted or
    none; a group of one row is a typo."""
    groups = {}
    for r in rows:
        if r.group:
            groups.setdefault(r.group, []).append(r)
    for name, same in groups.items():
        keys = {(r.key(), r.compare, r.kernel, r.tolerance, r.counted) for r in same}
        if len(same) < 2 or len(keys) > 1:
            raise NpusimError(f"validation table {path}: group {name!r} ("
                              f"{', '.join(r.id for r in same)}): a group is two or more rows "
                              "of one npusim case (op, chip, shape, dtype, params, tiling, "
                              "compare, tolerance), predicted with one number")


@lru_cache(maxsize=1)
def default_table() -> tuple:
    """The committed table's rows, read once per process (the fidelity rule and the error
    bands read it on every run)."""
    return tuple(load_table())


def _row(entry: dict, i: int, path) -> Row:
    missing = [k for k in REQUIRED if k not in entry]
    if missing:
        raise NpusimError(f"validation table {path}: row {i} lacks {', '.join(missing)}")
    if entry["unit"] not in UNITS or entry.get("rate", "work") not in RATES:
        raise NpusimError(f"validation table {path}: row {entry['id']}: unit "
                          f"{entry['unit']!r} (allowed {', '.join(UNITS)}) or rate "
                          f"{entry.get('rate')!r} (allowed {', '.join(RATES)})")
    if entry["compare"] not in COMPARES:
        raise NpusimError(f"validation table {path}: row {entry['id']}: compare "
                          f"{entry['compare']!r} (allowed {', '.join(COMPARES)})")
    if entry["compare"] == "kernel" and not entry.get("kernel"):
        raise NpusimError(f"validation table {path}: row {entry['id']}: compare = \"kernel\" "
                          "needs kernel = the kernel's name")
    _check_run_fields(entry, path)
    known = set(Row.__dataclass_fields__)
    values = {k: v for k, v in entry.items() if k in known}
    values["shape"] = tuple(entry["shape"])
    values["params"] = {k: str(v) for k, v in entry.get("params", {}).items()}
    values["tiling"] = dict(entry.get("tiling", {}))
    values["kernels"] = tuple(str(k) for k in entry.get("kernels", ()))
    return Row(**values)


def _check_run_fields(entry: dict, path) -> None:
    """What the row runs and compares: a known op and chip model, a shape of positive
    integers, a dtype the op takes, a positive value and tolerance; one NpusimError naming the
    row and the field, before anything runs."""
    from npusim.cases import find_case, parse_dtype
    from npusim.chip import load_chip

    where = f"validation table {path}: row {entry['id']}"
    try:
        case = find_case(str(entry["op"]))
        load_chip(str(entry["model"]))
        parse_dtype(str(entry["dtype"]), case)
    except NpusimError as exc:
        raise NpusimError(f"{where}: {exc}") from None
    shape = entry["shape"]
    if not (isinstance(shape, list) and shape and all(
            isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape)):
        raise NpusimError(f"{where}: shape = {shape!r}: a list of positive integers, "
                          "e.g. [1, 4096, 64, 64]")
    for key in ("value", "tolerance"):
        v = entry[key]
        if isinstance(v, bool) or not isinstance(v, int | float) or not v > 0:
            raise NpusimError(f"{where}: {key} = {v!r}: a positive number")


def validate(rows=None, *, jobs: int = 1, scheduler=None, slow: bool = True,
             on_record=None, fast: bool = False) -> dict:
    """{"rows": one result dict per row, "mae": mean |error| over the rows that ran,
    "within": rows within tolerance, "ran": rows that ran, "pairs": the ranking pairs whose
    rows ran (``npusim.studies.validate.ranking``), "pairs_missed": those outside their tolerance}.
    ``slow=False`` leaves the rows marked slow out (listed with status "skipped"); ``fast``
    runs every row as a fast run (``npusim/engine/fast.py``)."""
    rows = load_table() if rows is None else rows
    todo = [r for r in rows if slow or not r.slow]
    keys = list(dict.fromkeys(r.key() for r in todo))
    first = {r.key(): r for r in reversed(todo)}
    records = run_points([first[k].point() for k in keys], jobs=jobs, scheduler=scheduler,
                         on_record=on_record, fast=fast)
    by_key = dict(zip(keys, records, strict=True))
    results = [result(r, by_key.get(r.key())) for r in rows]
    ranked = ranking.pair_results(rows, results)
    return {"rows": results, **summary(results), "pairs": ranked,
            "pairs_missed": [p["pair"] for p in ranked if not p["within"]]}


def summary(results: list) -> dict:
    """The table's figures. Over the counted entries that ran (a row, or a group of rows npusim
    predicts with one number, against the mean of their measurements): "mae" (mean |error|),
    "ran", "within", "missed" (entries outside); "not_modelled" (ids of the rows measuring what
    npusim does not have, shown apart); "all": the same figures over every entry that ran,
    those rows included; "entries": each entry's figures (``entries``)."""
    ran = [x for x in results if x["status"] == "ok"]
    found = entries([x["row"] for x in ran], {x["id"]: x["error"] for x in ran},
                    {x["id"]: x["measured_us"] for x in ran})
    counted = [e for e in found if e["counted"]]
    return {**figures(counted), "missed": [e["entry"] for e in counted if not e["within"]],
            "not_modelled": [x["id"] for x in results if not x["row"].counted],
            "all": figures(found), "entries": found}


def figures(found: list) -> dict:
    """{"ran", "within", "mae"} over entries (``entries``)."""
    mae = sum(abs(e["error"]) for e in found) / len(found) if found else 0.0
    return {"ran": len(found), "within": sum(e["within"] for e in found), "mae": mae}


def entries(rows, errors: dict, measured: dict | None = None) -> list:
    """One entry per row in ``errors`` ({id: error}), the rows of a group (``Row.group``) as
    one: its error is the one prediction over the mean of the group's measurements, less 1
    (``measured``: {id: us}, else each row's ``measured_us`` from its published figure). Each
    entry: {"entry", "ids", "counted", "error", "within", "tolerance"}."""
    by_entry = {}
    for r in rows:
        if r.id in errors:
            by_entry.setdefault(r.entry, []).append(r)
    out = []
    for name, same in by_entry.items():
        if len(same) == 1:
            error = float(errors[same[0].id])
        else:
            times = [(measured or {}).get(r.id) or measured_us(r, {}) for r in same]
            predicted = (1.0 + float(errors[same[0].id])) * times[0]
            error = predicted / (sum(times) / len(times)) - 1.0
        out.append({"entry": name, "ids": [r.id for r in same], "counted": same[0].counted,
                    "error": error, "within": abs(error) <= same[0].tolerance,
                    "tolerance": same[0].tolerance})
    return out


def _without_slow(note: str) -> str:
    """The note without its own leading "Slow:" (the reason already says it)."""
    head, sep, rest = note.partition(":")
    return rest.strip() if sep and head.strip().lower() == "slow" else note


def result(row: Row, record) -> dict:
    """One row's comparison from its point's record (None: the row was skipped)."""
    out = {"id": row.id, "row": row, "status": "skipped", "measured_us": None,
           "predicted_us": None, "op_us": None, "error": None, "within": False, "why": ""}
    if record is None:
        return {**out, "why": "marked slow: " + _without_slow(row.note)}
    if record["status"] != "ok":
        return {**out, "status": record["status"], "why": record["error"]}
    from npusim.chip import load_chip

    clock = load_chip(row.model).clock_hz
    kernel_cycles = _kernel_cycles(row, record)
    if kernel_cycles is None:
        names = ", ".join(k["name"] for k in record["kernels"]) or "none"
        return {**out, "status": "error",
                "why": f"the op ran no kernel named {row.kernel} (kernels: {names})"}
    predicted = kernel_cycles / clock * 1e6
    measured = measured_us(row, record)
    error = predicted / measured - 1.0
    return {**out, "status": "ok", "measured_us": measured, "predicted_us": predicted,
            "op_us": record["time_us"], "error": error,
            "within": abs(error) <= row.tolerance, "kernels": record["kernels"]}


def _kernel_cycles(row: Row, record: dict):
    if row.compare == "kernels":    # device time: the kernels' own spans, gaps excluded
        return sum(k["cycles"] for k in record["kernels"])
    return record["cycles"] if row.compare == "op" else kernel_cycles(record, row.kernel)


def measured_us(row: Row, record: dict) -> float:
    """The published figure as a time in microseconds."""
    if row.unit == "us":
        return row.value
    work = vector_ops(record) * row.lane_slots if row.rate == "vector_ops" else row.work
    return work / (row.value * UNITS[row.unit]) * 1e6


def vector_ops(record: dict) -> float:
    """Vector element operations the kernel issued: every vector compute instruction
    (``VECTOR_OPS``; moves, flags and cube work are not) over one UB tile of
    ``tile_length`` elements, as SiluGrad issues them (the last, shorter tile counted whole:
    under one tile in thousands)."""
    tile = record["effective_tiling"].get("tile_length")
    if not tile:
        raise NpusimError("a vector-rate row needs a kernel with a tile_length tiling field")
    count = sum(n for name, n in record["instruction_counts"].items()
                if name in VECTOR_OPS)
    return float(count) * tile


def measured_fraction(row: Row) -> float:
    """The measured rate as a fraction of the chip model's peak for what the row covers
    (cube: its dtype's cube peak; hbm: the GM bandwidth); 0 for other rows."""
    from npusim.chip import load_chip

    chip = load_chip(row.model)
    if row.covers == "cube" and row.work:
        dtype = row.dtype if row.dtype in chip.input_dtypes else "float16"
        tflops = row.value * 1e12 if row.unit == "TFLOPS" else row.work / (row.value * 1e-6)
        return tflops / chip.peak_flops(dtype)
    if row.covers == "hbm" and row.unit == "TB/s":
        return row.value * 1e12 / chip.hbm_bytes_per_s
    return 0.0


def load_status(path=None) -> dict:
    """The committed figures of the table (``validation_status.toml``): {"within", "counted",
    "mae" (over the counted entries), "all": {"ran", "within", "mae"} (over every entry, the
    rows not modelled included), "errors": {row id: error}, "pairs": {ranking pair: error}};
    the test suite holds a
    fresh run to them (a ratchet), and the error bands beside predictions
    (``npusim.studies.validate.bands``) come from them."""
    path = Path(path) if path else STATUS
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise NpusimError(f"validation status {path}: {' '.join(str(exc).split())}") from None
    try:
        return {"within": int(raw["within"]), "counted": int(raw["counted"]),
                "mae": float(raw["mae"]), "all": {k: raw["all"][k] for k in
                                                  ("ran", "within", "mae")},
                "errors": dict(raw.get("errors", {})), "pairs": dict(raw.get("pairs", {}))}
    except (KeyError, TypeError, ValueError) as exc:
        raise NpusimError(f"validation status {path}: missing or bad figure {exc}; record it "
                          "again with npusim validate --record") from None


@lru_cache(maxsize=1)
def default_status() -> dict:
    """The committed figures (``load_status()``), read once per process."""
    return load_status()


def write_status(result: dict, path=None) -> Path:
    """Record a whole run of the table (slow rows included) as the committed figures."""
    skipped = [x["id"] for x in result["rows"] if x["status"] != "ok"]
    if skipped:
        raise NpusimError(f"validation status: every row must run to be recorded; not run: "
                          f"{', '.join(skipped)}")
    path = Path(path) if path else STATUS
    every = result["all"]
    lines = ["# The validation table's figures as last recorded (npusim validate --record),",
             "# after the model changes they judge. tests/test_validate.py holds a fresh run to",
             "# them: no fewer counted entries within tolerance, no larger mean error, every",
             "# entry recorded within still within, and every row's error where it was",
             "# recorded. An entry is a row, or the rows of a group (one npusim prediction)",
             "# against the mean of their measurements. counted/within/mae: the counted",
             "# entries; [all]: every entry, the rows not modelled included.",
             "# [errors]: each row's own error (predicted / its measurement - 1).",
             "# [pairs]: each ranking pair's error (npusim's ratio of its two rows' times over",
             f"# the measured ratio, less 1); a pair recorded within +-{ranking.TOLERANCE:.0%} "
             "must stay within.",
             f"counted = {result['ran']}", f"within = {result['within']}",
             f"mae = {result['mae']:.6f}", "", "[all]", f"ran = {every['ran']}",
             f"within = {every['within']}", f"mae = {every['mae']:.6f}", "", "[errors]"]
    lines += [f'"{x["id"]}" = {x["error"]:.6f}' for x in result["rows"]]
    lines += ["", "[pairs]"] + [f'"{p["pair"]}" = {p["error"]:.6f}' for p in result["pairs"]]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
