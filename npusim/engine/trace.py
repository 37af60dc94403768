"""The tracer hook: one record per executed instruction, fed by the engine's pipe processes.

A record is ``(core index, pipe, instruction, issue cycle, start cycle, end cycle)``. The same
records feed the stats, and later the Chrome trace and the plots. Nothing in SimPy is patched:
the engine calls ``record`` explicitly.
"""

from array import array
from collections.abc import Sequence
from operator import itemgetter

PACK_MIN_ROWS = 100_000   # rows from which a finished run's records are packed


class PackedRows(Sequence):
    """A finished run's rows (records or marks) stored a column each: typed arrays for numbers,
    small codes for the few distinct names, one reference per instruction; about 35 bytes a
    record instead of a tuple's 160. Reading gives tuples equal to those appended (numbers in
    float columns come back as floats)."""

    def __init__(self, rows: list, kinds: str):
        """``kinds``: a letter per column: ``H``/``q``/``d`` an array of that typecode, ``n``
        a name (coded), ``o`` any object (kept as is)."""
        self._kinds, self._n = kinds, len(rows)
        self._cols, self._names = [], []
        for j, kind in enumerate(kinds):
            col = list(map(itemgetter(j), rows))
            if kind == "n":
                names = tuple(dict.fromkeys(col))
                code = {name: i for i, name in enumerate(names)}
                self._names.append(names)
                col = array("H", map(code.__getitem__, col))
            elif kind != "o":
                col = array(kind, col)
            self._cols.append(col)

    def _columns(self):
        names = iter(self._names)
        return [map(next(names).__getitem__, col) if kind == "n" else col
                for kind, col in zip(self._kinds, self._cols, strict=True)]

    def __len__(self) -> int:
        return self._n

    def __iter__(self):
        return zip(*self._columns(), strict=True)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        names = iter(self._names)
        return tuple(next(names)[col[i]] if kind == "n" else col[i]
                     for kind, col in zip(self._kinds, self._cols, strict=True))


def columns(rows) -> tuple:
    """The rows (a list of tuples or ``PackedRows``) as one list per column."""
    if isinstance(rows, PackedRows):   # numeric columns stay typed arrays (no copy)
        return tuple(col if isinstance(col, array) else list(col) for col in rows._columns())
    return tuple(list(map(itemgetter(j), rows)) for j in range(6))   # 4x zip(*rows)


class Tracer:
    """Collects instruction records of a timed run."""

    def __init__(self):
        self.records: list[tuple] = []
        self.marks: list[tuple] = []   # (core index, time, buffer name, delta bytes, label)
        # for the dependency graph (npusim/engine/depgraph.py):
        self.stalls: list[tuple] = []  # (core, pipe, issue cycle, cycle it was ready to issue)
        self.gm: list[tuple] = []      # (core, pipe, L2 cycles, HBM cycles, atomic range)
        self.scalar_ends: list[tuple] = []   # (core, cycle its scalar finished the stream)
        self.drains: list[tuple] = []  # per barrier/SyncAll: (core, [(pipe waited for, until)])
        self.peers: list = []          # per core, the cores its cross-core sets reach
        self.jittered = False          # the run added random latency (no critical path then)

    def record(self, core: int, pipe: str, inst, issue: float, start: float, end: float):
        self.records.append((core, pipe, inst, issue, start, end))

    def mark(self, core: int, inst, time: float):
        self.marks.append((core, time, inst.buffer.name, inst.delta, inst.label))

    def pack(self) -> None:
        """The run is over: keep a large run's records and marks a column each (``PackedRows``:
        packing costs about 0.35 us a row, so runs under ``PACK_MIN_ROWS`` keep their lists)."""
        if len(self.records) >= PACK_MIN_ROWS:
            self.records = PackedRows(self.records, "Hnoddd")
        if len(self.marks) >= PACK_MIN_ROWS:
            self.marks = PackedRows(self.marks, "Hdnqn")

    def __len__(self) -> int:
        return len(self.records)


class LazyTracer:
    """A tracer whose records and marks are built on first read by ``build()``, which returns
    ``(records, marks)``: an operator's merged trace costs nothing until it is looked at."""

    def __init__(self, build):
        self._build, self._records, self._marks = build, None, None

    def _fill(self) -> None:
        if self._records is None:
            self._records, self._marks = self._build()
            self._build = None

    @property
    def records(self) -> list:
        self._fill()
        return self._records

    @property
    def marks(self) -> list:
        self._fill()
        return self._marks

    def record(self, core: int, pipe: str, inst, issue: float, start: float, end: float):
        self.records.append((core, pipe, inst, issue, start, end))

    def mark(self, core: int, inst, time: float):
        self.marks.append((core, time, inst.buffer.name, inst.delta, inst.label))

    def __len__(self) -> int:
        return len(self.records)
