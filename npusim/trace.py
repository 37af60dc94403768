"""The tracer hook: one record per executed instruction, fed by the engine's pipe processes.

A record is ``(core index, pipe, instruction, issue cycle, start cycle, end cycle)``. The same
records feed the stats, and later the Chrome trace and the plots. Nothing in SimPy is patched:
the engine calls ``record`` explicitly.
"""


class Tracer:
    """Collects instruction records of a timed run."""

    def __init__(self):
        self.records: list[tuple] = []
        self.marks: list[tuple] = []   # (core index, time, buffer name, delta bytes, label)

    def record(self, core: int, pipe: str, inst, issue: float, start: float, end: float):
        self.records.append((core, pipe, inst, issue, start, end))

    def mark(self, core: int, inst, time: float):
        self.marks.append((core, time, inst.buffer.name, inst.delta, inst.label))

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
