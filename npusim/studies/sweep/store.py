"""A sweep's folder: what the sweep is, and its rows as they finish.

``sweep.id.json`` records everything that defines the sweep (operator, chip name and the
SHA-256 of its model file, shape, dtype, parameters, mode, swept fields and their values, the
``--samples`` draw, npusim version); it is
written, whole, before the first row. ``sweep.csv`` grows one whole row per finished point (one
``write`` of the encoded line, then ``fsync``), so an interrupted sweep keeps every row it
finished; a half-written last line (the process killed mid-write) is dropped on ``--resume``.
``--resume`` refuses a folder whose record differs from this sweep's, naming the first field
that differs, and a folder that records nothing (an older npusim's). The other files are
written whole (by rename) at the end.
"""

import csv
import hashlib
import io
import json
import os

from npusim.errors import NpusimError
from npusim.studies.executor import BUFFERS, PIPES

IDENTITY = "sweep.id.json"
STATUSES = ("ok", "does not fit", "not allowed", "error", "mismatch")
METRICS = ["status", "cycles", "time_us", "roofline_ratio", "bound", "bound_us",
           *(f"busy_{p}" for p in PIPES),
           *(f"peak_{b}" for b in BUFFERS), "wall_s", "numerics", "check", "error"]


def identity(case, base: dict, check: str, spaces: dict, samples: int | None = None,
             seed: int = 0) -> dict:
    """What defines a sweep: two sweeps with equal identities give the same rows (the swept
    fields and their values, and the draw of ``--samples`` with its seed)."""
    from npusim.chip import load_chip
    from npusim.studies.sweep.space import described

    chip = load_chip(base["chip"])
    with open(chip.path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    params = case.parse_params(base["params"])
    return {"op": case.name, "chip": chip.name, "chip_sha256": digest,
            "shape": list(base["shape"]), "dtype": base["dtype"],
            "params": {k: str(v) for k, v in params.items()},
            "mode": "timed, every point checked" if check == "all" else "timed, timing only",
            "fields": list(spaces), "values": described(spaces),
            "samples": None if samples is None else f"{samples} drawn with seed {seed}",
            "npusim": npusim_version()}


def npusim_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("npusim")
    except PackageNotFoundError:
        return "unknown"


def read_identity(folder) -> dict | None:
    path = os.path.join(os.fspath(folder), IDENTITY)
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise NpusimError(f"{path}: unreadable ({exc}); choose another --out") from None
    return data if isinstance(data, dict) else {}


def same_sweep(mine: dict, theirs: dict | None, shown) -> None:
    """One clear NpusimError unless the folder ``shown`` holds the sweep ``mine``."""
    if theirs is None:
        raise NpusimError(f"{shown} holds a sweep.csv but no {IDENTITY} (an older npusim's), "
                          "so it does not record what it swept and --resume cannot tell "
                          "whether it is this sweep; choose another --out")
    for key, value in mine.items():
        if theirs.get(key) != value:
            raise NpusimError(f"{shown} holds another sweep: its {key} = "
                              f"{_shown(theirs.get(key))}, this one's {key} = {_shown(value)};"
                              " --resume finishes the same sweep only: run it as it was, "
                              "or choose another --out")


def _shown(value) -> str:
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return "x".join(map(str, value))
    return "(none)" if value is None else repr(value)


def key_of(tiling: dict, fields: list) -> tuple:
    return tuple(str(tiling.get(f)).lower() for f in fields)


class SweepStore:
    """The sweep's folder: ``sweep.csv`` grown row by row, the rest written whole at the end."""

    def __init__(self, out, ident: dict, resume: bool):
        self.dir, self.fields = os.path.abspath(os.fspath(out)), ident["fields"]
        self.csv = os.path.join(self.dir, "sweep.csv")
        self.kept: dict = {}
        if os.path.exists(self.dir) and not os.path.isdir(self.dir):
            raise NpusimError(f"cannot write to {out}: it exists and is not a folder")
        if os.path.exists(self.csv):
            if not resume:
                raise NpusimError(f"{out} already holds a sweep (sweep.csv); add --resume to "
                                  "finish it, or choose another --out")
            same_sweep(ident, read_identity(self.dir), out)
            self._load(out)
        self.made_dir = not os.path.exists(self.dir)
        os.makedirs(self.dir, exist_ok=True)
        self.new = not os.path.exists(self.csv)
        if self.new:
            self.write_text(IDENTITY, json.dumps(ident, indent=1) + "\n")
            self.write_text("sweep.csv", _line([*self.fields, *METRICS]))

    def _load(self, out) -> None:
        _drop_half_line(self.csv)
        with open(self.csv, newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames != [*self.fields, *METRICS]:
                raise NpusimError(f"{out}/sweep.csv is a sweep of other fields "
                                  f"({', '.join((reader.fieldnames or [])[:4])}...); "
                                  "choose another --out")
            for row in reader:
                try:
                    record = record_from_row(row, self.fields)
                except (ValueError, KeyError, TypeError):
                    raise NpusimError(f"{out}/sweep.csv, line {reader.line_num}: not a row "
                                      f"this sweep wrote ({_first_cells(row)}); remove the "
                                      "line to resume, or choose another --out") from None
                self.kept[key_of(record["tiling"], self.fields)] = record

    def finished(self, tiling: dict):
        return self.kept.get(key_of(tiling, self.fields))

    def append(self, record: dict) -> None:
        """One whole row, in one write: an interrupt leaves the row or nothing."""
        data = _line(row_of(record, self.fields)).encode()
        fd = os.open(self.csv, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)

    def discard(self) -> None:
        """Remove what this sweep began (a sweep where no point ran leaves no half report);
        a resumed folder is left as it was found plus its new rows."""
        if not self.new:
            return
        for name in (IDENTITY, "sweep.csv"):
            os.remove(self.path(name))
        if self.made_dir and not os.listdir(self.dir):
            os.rmdir(self.dir)

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def write_text(self, name: str, text: str) -> None:
        tmp = self.path(f".{name}.tmp")
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.path(name))


def _first_cells(row: dict) -> str:
    cells = [str(v) for v in row.values() if v not in (None, "")][:3]
    return ", ".join(repr(c[:20]) for c in cells) or "empty"


def _line(cells: list) -> str:
    buf = io.StringIO()
    csv.writer(buf).writerow(cells)
    return buf.getvalue()


def _drop_half_line(path: str) -> None:
    """Cut a last line the writer did not finish (no line end)."""
    with open(path, "rb+") as f:
        data = f.read()
        if data and not data.endswith(b"\n"):
            f.truncate(data.rfind(b"\n") + 1)


def row_of(record: dict, fields: list) -> list:
    busy, peak = record.get("busy") or {}, record.get("peak_bytes") or {}
    return [*(record["tiling"].get(f) for f in fields), record["status"], record["cycles"],
            record["time_us"], record["roofline_ratio"], record.get("bound", ""),
            record.get("bound_us", ""), *(busy.get(p, "") for p in PIPES),
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
    text = ("status", "check", "error", "bound")
    get = {k: _num(v) if k not in text else v for k, v in row.items()}
    if get["status"] not in STATUSES:
        raise ValueError(f"status {get['status']!r}")
    if get["status"] == "ok" and not (isinstance(get["cycles"], int) and get["cycles"] > 0
                                      and isinstance(get["time_us"], int | float)):
        raise ValueError("an ok row without its cycles and time")
    return {"tiling": {f: get[f] for f in fields}, "status": get["status"],
            "error": get["error"], "cycles": get["cycles"], "time_us": get["time_us"],
            "roofline_ratio": get["roofline_ratio"], "bound": get["bound"] or None,
            "bound_us": get["bound_us"],
            "busy": {p: get[f"busy_{p}"] for p in PIPES if get[f"busy_{p}"] is not None},
            "peak_bytes": {b: get[f"peak_{b}"] for b in BUFFERS
                           if get[f"peak_{b}"] is not None},
            "numerics": bool(get["numerics"]), "check": get["check"], "wall_s": get["wall_s"],
            "effective_tiling": {}}
