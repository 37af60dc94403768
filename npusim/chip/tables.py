"""Measured cost tables of a chip model: a rate against transfer size, read from CSV files.

A chip model's ``[tables]`` section names, for a data path's rate key
(``gm_to_ub_bytes_per_cycle`` ...), a CSV file (relative to the model's directory, else to the
shipped ``models/``, so that an edited copy of a shipped model keeps its tables) holding a
measurement of that path: one row per transfer size, ``transfer_bytes,gib_per_s``, after
header lines ``# key: value`` that must give the ``source``
(repository, path and a 40-hex commit), what was ``measured``, the ``unit``, the
``measured_clock_hz`` the GiB/s convert at and a ``scale`` (1 unless the file says why), and
may give a ``note`` (which of two disagreeing tables was taken, and why). The engine charges an
instruction of ``n`` bytes ``n / rate(n)`` cycles, the rate interpolated linearly between the two
nearest sizes and clamped to the first and last row, as msKPP reads the same tables
(``MovClass::Get``). Where a path has no table its ``[mte]`` number is used.

A bad file (missing, no rows, a size not increasing, a rate not positive, a header key missing,
a source without a commit) is a ``ChipModelError`` naming the file, the line and what is allowed.
"""

import math
import re
from bisect import bisect_right
from importlib import resources
from pathlib import Path

from npusim.errors import ChipModelError

HEADER_KEYS = ("source", "measured", "unit", "measured_clock_hz", "scale")
COLUMNS = "transfer_bytes,gib_per_s"
# rate keys a table may cover that have no [mte] number: the key whose number stands in
TABLE_ONLY = {"gm_to_l1_nd2nz_bytes_per_cycle": "gm_to_l1_bytes_per_cycle"}
COMMIT = re.compile(r"@[0-9a-f]{40}\b")


class RateTable:
    """One measured path: sizes (bytes) and rates (bytes per cycle at the measurement clock)."""

    def __init__(self, file: str, meta: dict, sizes: list, rates: list):
        self.file, self.meta = file, meta
        self.sizes, self.rates = tuple(sizes), tuple(rates)

    def rate(self, nbytes: float) -> float:
        """Bytes per cycle for one instruction moving ``nbytes``: linear between the nearest
        rows, clamped at both ends."""
        sizes, rates = self.sizes, self.rates
        if nbytes <= sizes[0]:
            return rates[0]
        i = bisect_right(sizes, nbytes)
        if i >= len(sizes):
            return rates[-1]
        x0, x1, y0, y1 = sizes[i - 1], sizes[i], rates[i - 1], rates[i]
        return y0 + (y1 - y0) * (nbytes - x0) / (x1 - x0)

    @property
    def plateau(self) -> float:
        """The rate of the largest transfer measured."""
        return self.rates[-1]

    def source_line(self) -> str:
        note = self.meta.get("note")
        return (f"measured, table {self.file}: {self.meta['source']}"
                + (f"; {note}" if note else ""))


def load_tables(model_path: str, tables: dict, known_keys: set) -> dict:
    """{rate key: RateTable} for a model's ``[tables]`` section (paths relative to models/)."""
    if not isinstance(tables, dict):
        raise ChipModelError(f"{model_path}: [tables] must map rate keys to CSV files")
    base = Path(model_path).parent
    shipped = Path(str(resources.files("npusim.models")))   # installed or in the checkout
    out = {}
    for key, rel in tables.items():
        if key not in known_keys and key not in TABLE_ONLY:
            raise ChipModelError(f"{model_path}: tables.{key} names no data path's rate; "
                                 f"allowed: {', '.join(sorted(known_keys | set(TABLE_ONLY)))}")
        if not isinstance(rel, str) or not rel.endswith(".csv"):
            raise ChipModelError(f"{model_path}: tables.{key} = {rel!r}: give a .csv file "
                                 "relative to the model's directory")
        path = base / rel
        if not path.exists() and (shipped / rel).exists():   # a copy of a shipped model
            path = shipped / rel
        out[key] = read_table(str(path), rel)
    return out


def read_table(path: str, name: str) -> RateTable:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise ChipModelError(f"{path}: no such cost table file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ChipModelError(f"{path}: cannot be read as UTF-8 text: {exc}") from None
    meta, rows, body = {}, [], False
    for number, line in enumerate(lines, 1):
        if not body and line.startswith("#"):
            key, _, value = line[1:].partition(":")
            meta[key.strip()] = value.strip()
        elif not body:
            if line.strip() != COLUMNS:
                raise ChipModelError(f"{path}:{number}: header {line!r}; allowed: {COLUMNS}")
            body = True
        elif line.strip():
            rows.append((number, line))
    _check_meta(path, meta)
    scale = float(meta["scale"]) * 2**30 / float(meta["measured_clock_hz"])
    sizes, rates = [], []
    for number, line in rows:
        size, rate = _row(path, number, line)
        if sizes and size <= sizes[-1]:
            raise ChipModelError(f"{path}:{number}: transfer_bytes {size} not above the "
                                 f"previous row's {sizes[-1]}; sizes must increase")
        sizes.append(size)
        rates.append(rate * scale)
    if not sizes:
        raise ChipModelError(f"{path}: no rows after the {COLUMNS} header")
    return RateTable(name, meta, sizes, rates)


def _check_meta(path: str, meta: dict) -> None:
    for key in HEADER_KEYS:
        if not meta.get(key):
            raise ChipModelError(f"{path}: header line '# {key}: ...' missing; a cost table "
                                 f"gives {', '.join(HEADER_KEYS)}")
    if not COMMIT.search(meta["source"]):
        raise ChipModelError(f"{path}: source {meta['source']!r} names no commit; give "
                             "'owner/repo path @<40-hex commit> ...'")
    for key in ("measured_clock_hz", "scale"):
        try:
            value = float(meta[key])
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0:
            raise ChipModelError(f"{path}: {key} = {meta[key]!r}: must be a positive number")


def _row(path: str, number: int, line: str) -> tuple:
    parts = line.split(",")
    try:
        size, rate = int(parts[0]), float(parts[1])
    except (ValueError, IndexError):
        raise ChipModelError(f"{path}:{number}: {line!r} is not 'transfer_bytes,gib_per_s' "
                             "(an integer and a number)") from None
    if len(parts) != 2 or size <= 0 or not math.isfinite(rate) or rate <= 0:
        raise ChipModelError(f"{path}:{number}: {line!r}: two columns, both positive")
    return size, rate
