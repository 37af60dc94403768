"""Tiling sweeps: a space of tilings in, the rows out, fastest first in the report.

``sweep`` runs the operator's default tiling once (timing only), checks the swept fields
against it, turns the space into points and hands them to the executor. Each point runs timing
only (numerics off) where the kernel allows it; a tiling that does not fit is a row with its
TilingError. With ``out``, rows are appended to ``sweep.csv`` as points finish, so an interrupted
sweep keeps its work and ``resume=True`` skips the points already there; ``sweep.json``,
``sweep.md``, ``sweep.png`` and ``pareto.png`` are written (each whole, by rename) at the end.
``check="best"`` reruns the fastest point with numerics on and compares it bit for bit with
the golden; ``"all"`` checks every point; ``"none"`` none.
"""

import csv
import os

from npusim.errors import NpusimError
from npusim.face.progress import Bar
from npusim.studies.executor import BUFFERS, PIPES, connect, run_point, run_points
from npusim.studies.space import parse_space, points

CHECKS = ("best", "all", "none")
METRICS = ["status", "cycles", "time_us", "roofline_ratio", *(f"busy_{p}" for p in PIPES),
           *(f"peak_{b}" for b in BUFFERS), "wall_s", "numerics", "check", "error"]


def sweep(op_name, *, chip="atlas-a2", shape=None, dtype=None, params=None, space,
          samples=None, seed=0, jobs=1, scheduler=None, check="best", out=None,
          resume=False, progress=None) -> list[dict]:
    """Run ``op_name`` over the tiling ``space`` ({field: values}, or ``FIELD=SPACE`` texts);
    return one record per point (``tiling``, ``status``, ``cycles``, ``time_us``, ...)."""
    from npusim.cases import find_case, parse_dtype

    case = find_case(op_name)
    if check not in CHECKS:
        raise NpusimError(f"--check {check!r}: allowed {', '.join(CHECKS)}")
    base = {"op": case.name, "chip": chip, "shape": list(shape or case.default_shape),
            "dtype": parse_dtype(dtype or case.dtypes[0], case), "params": dict(params or {}),
            "seed": 0}
    case.parse_params(base["params"])
    spaces = _spaces(space)
    default = run_point({**base, "tiling": None, "explain": True})   # what limits it
    if default["status"] != "ok":
        raise NpusimError(f"{case.name} does not run on {chip} at shape "
                          f"{'x'.join(map(str, base['shape']))}: {default['error']}")
    _check_fields(case, spaces, default)
    pts = [{**base, "tiling": t, "numerics": check == "all", "check": check == "all"}
           for t in points(spaces, samples, seed)]
    client = connect(scheduler) if isinstance(scheduler, str) else scheduler
    try:
        store = SweepStore(out, list(spaces), resume) if out else None
        rows = _execute(pts, store, jobs, client, progress)
    finally:
        if client is not None and isinstance(scheduler, str):
            client.close()
    best = _check_best(rows, base) if check == "best" else None
    if store is not None:
        from npusim.studies.sweep_report import write_report

        write_report(store, case, base, rows, default, best, list(spaces))
    return rows


def _spaces(space) -> dict:
    if isinstance(space, dict):
        spaces = {k: list(v) for k, v in space.items()}
    else:
        spaces = dict(parse_space(item) for item in space)
    if not spaces or any(not v for v in spaces.values()):
        raise NpusimError("give at least one --tiling FIELD=SPACE with at least one value")
    return spaces


def _check_fields(case, spaces: dict, default: dict) -> None:
    fields = default["effective_tiling"]
    unknown = [f for f in spaces if f not in fields]
    if unknown:
        raise NpusimError(f"{case.name} has no tiling field {unknown[0]!r}; fields: "
                          f"{', '.join(fields)}")


def _execute(pts: list, store, jobs, client, progress) -> list:
    rows = [None] * len(pts)
    todo = []
    for i, p in enumerate(pts):
        kept = store.finished(p["tiling"]) if store else None
        if kept is not None:
            rows[i] = kept
        else:
            todo.append(i)
    bar = Bar(len(pts), len(pts) - len(todo), progress)

    def finished(k, record):
        rows[todo[k]] = record
        if store:
            store.append(record)
        bar.step()

    run_points([pts[i] for i in todo], jobs=jobs, scheduler=client, on_record=finished)
    bar.close()
    return rows


def _check_best(rows: list, base: dict):
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        return None
    best = min(ok, key=lambda r: r["cycles"])
    checked = run_point({**base, "tiling": best["tiling"], "numerics": True, "check": True,
                         "explain": True})
    best["check"] = checked["check"] or checked["error"]
    best["path"] = checked.get("path")
    if checked["status"] != "ok":
        best["status"] = checked["status"]
    return best


def key_of(tiling: dict, fields: list) -> tuple:
    return tuple(str(tiling.get(f)).lower() for f in fields)


class SweepStore:
    """The sweep's folder: ``sweep.csv`` grown row by row, the rest written whole at the end."""

    def __init__(self, out, fields: list, resume: bool):
        self.dir, self.fields = os.path.abspath(os.fspath(out)), fields
        self.csv = os.path.join(self.dir, "sweep.csv")
        self.kept: dict = {}
        if os.path.exists(self.dir) and not os.path.isdir(self.dir):
            raise NpusimError(f"cannot write to {out}: it exists and is not a folder")
        if os.path.exists(self.csv):
            if not resume:
                raise NpusimError(f"{out} already holds a sweep (sweep.csv); add --resume to "
                                  "finish it, or choose another --out")
            self._load(out)
        os.makedirs(self.dir, exist_ok=True)
        if not os.path.exists(self.csv):
            with open(self.csv, "w", newline="") as f:
                csv.writer(f).writerow([*fields, *METRICS])

    def _load(self, out) -> None:
        with open(self.csv, newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames != [*self.fields, *METRICS]:
                raise NpusimError(f"{out}/sweep.csv is a sweep of other fields "
                                  f"({', '.join((reader.fieldnames or [])[:4])}...); "
                                  "choose another --out")
            for row in reader:
                record = record_from_row(row, self.fields)
                self.kept[key_of(record["tiling"], self.fields)] = record

    def finished(self, tiling: dict):
        return self.kept.get(key_of(tiling, self.fields))

    def append(self, record: dict) -> None:
        with open(self.csv, "a", newline="") as f:
            csv.writer(f).writerow(row_of(record, self.fields))
            f.flush()
            os.fsync(f.fileno())

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def write_text(self, name: str, text: str) -> None:
        tmp = self.path(f".{name}.tmp")
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.path(name))


def row_of(record: dict, fields: list) -> list:
    busy, peak = record.get("busy") or {}, record.get("peak_bytes") or {}
    return [*(record["tiling"].get(f) for f in fields), record["status"], record["cycles"],
            record["time_us"], record["roofline_ratio"], *(busy.get(p, "") for p in PIPES),
            *(peak.get(b, "") for b in BUFFERS), record["wall_s"], record["numerics"],
            record["check"], record["error"]]


def _num(text: str):
    if text in ("", "None"):
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        return int(text)
    except ValueError:
        return float(text)


def record_from_row(row: dict, fields: list) -> dict:
    """A record read back from sweep.csv (for --resume)."""
    get = {k: _num(v) if k not in ("status", "check", "error") else v for k, v in row.items()}
    return {"tiling": {f: get[f] for f in fields}, "status": get["status"],
            "error": get["error"], "cycles": get["cycles"], "time_us": get["time_us"],
            "roofline_ratio": get["roofline_ratio"],
            "busy": {p: get[f"busy_{p}"] for p in PIPES if get[f"busy_{p}"] is not None},
            "peak_bytes": {b: get[f"peak_{b}"] for b in BUFFERS
                           if get[f"peak_{b}"] is not None},
            "numerics": bool(get["numerics"]), "check": get["check"], "wall_s": get["wall_s"],
            "effective_tiling": {}}

