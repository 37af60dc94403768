"""Why a run takes its cycles: its critical path, attributed, and what-if estimates.

An operator's kernels run back to back on one stream, so its critical path is, kernel by kernel,
the stream's gap before it, its start-up on its cores (``launch``) and its own run's path
(``npusim/engine/cpath.py``), plus ``rounding``: each kernel's cycles are its run's end rounded
up to a whole cycle. The lengths sum to ``result.cycles`` exactly.

What-ifs re-time each kernel's dependency graph (``npusim/engine/retime.py``) with one pipe's
instruction bodies halved or made free, or the HBM servers' share halved, and add the fixed
costs back: no second simulation. They keep the order the run took at shared resources; the
estimate says so (``bound``) where that order could move (see ``whatif``).
"""

from collections import Counter
from dataclasses import dataclass, field

from npusim.engine.cpath import kernel_path
from npusim.engine.depgraph import RunGraph
from npusim.engine.retime import retime
from npusim.errors import NpusimError

PIPES = ("MTE2", "MTE1", "M", "V", "MTE3", "FIX", "S")
WAITS = ("flag", "cross-core flag", "barrier", "SyncAll", "GM bandwidth", "atomic add",
         "launch", "stream gap", "rounding")


@dataclass
class KernelShare:
    """One kernel of the operator on the path: its name, cycles and where they went."""

    name: str
    cycles: int
    by_what: Counter
    edges: Counter
    path: object = None      # its KernelPath (None for a result without kernels' runs)
    graph: object = None


@dataclass
class CriticalPath:
    """An operator's critical path: per kernel the attribution; ``by_what`` the totals."""

    cycles: int
    kernels: list = field(default_factory=list)

    @property
    def by_what(self) -> Counter:
        out = Counter()
        for k in self.kernels:
            out.update(k.by_what)
        return out

    @property
    def length(self) -> float:
        return sum(self.by_what.values())

    def largest(self) -> tuple:
        """(what, cycles, share of the run) with the largest share of the path."""
        what, cycles = max(self.by_what.items(), key=lambda kv: kv[1])
        return what, cycles, cycles / self.cycles if self.cycles else 0.0


def kernel_runs(result) -> list:
    """[(name, stream gap, launch cycles, Result)] of the kernels behind ``result``: itself for
    a single launch."""
    if result.mode != "timed" or result.tracer is None:
        raise NpusimError("the critical path needs a timed run with trace=True (mode="
                          f"{result.mode!r}, trace={'on' if result.tracer else 'off'})")
    parts = getattr(result, "parts", None)
    if not parts:
        return [("kernel", 0, 0, result)]
    return [(p.name, p.wait_cycles, p.launch_cycles, p.result) for p in parts]


def critical_path(result) -> CriticalPath:
    """The critical path of ``result`` (see the module docstring)."""
    out = CriticalPath(result.cycles)
    for name, gap, launch, run in kernel_runs(result):
        graph = RunGraph(run.tracer, run.chip)
        path = kernel_path(graph)
        by = path.by_what()
        if gap:
            by["stream gap"] += gap
        if launch:
            by["launch"] += launch
        rounding = run.cycles - path.length
        if rounding > 1e-9:
            by["rounding"] += rounding
        out.kernels.append(KernelShare(name, gap + launch + run.cycles, by, path.edges, path,
                                       graph))
    return out


@dataclass
class WhatIf:
    """A what-if: ``label``, the estimated cycles, and why it is only a bound (or "")."""

    label: str
    cycles: int
    base: int
    bound: str = ""

    @property
    def saving(self) -> float:
        return 1 - self.cycles / self.base if self.base else 0.0


def estimate(cp: CriticalPath, runs: list, scale: dict, hbm: float = 1.0) -> int:
    """The operator's cycles with each kernel's graph re-weighted (``retime``)."""
    total = 0
    for share, (_name, gap, launch, _run) in zip(cp.kernels, runs, strict=True):
        end = retime(share.graph, scale, hbm).run_end
        total += gap + launch + _ceil(end)
    return total


def _ceil(x: float) -> int:
    n = int(x)
    return n + 1 if x - n > 1e-9 else n


def what_ifs(result, cp: CriticalPath | None = None) -> list:
    """The what-ifs of every pipe and of HBM on the path: 2x faster and free (HBM: 2x)."""
    cp = cp or critical_path(result)
    runs = kernel_runs(result)
    by = cp.by_what
    out = []
    for pipe in PIPES[:-1]:
        if by.get(pipe, 0) <= 0:
            continue
        for label, factor in (("2x faster", 0.5), ("free", 0.0)):
            est = estimate(cp, runs, {pipe: factor})
            out.append(WhatIf(f"{pipe} {label}", est, cp.cycles, _bound(cp, pipe)))
    if by.get("GM bandwidth", 0) > 0:
        est = estimate(cp, runs, {}, hbm=0.5)
        out.append(WhatIf("HBM 2x bandwidth", est, cp.cycles, _bound(cp, "HBM")))
    return sorted(out, key=lambda w: w.cycles)


def _bound(cp: CriticalPath, what: str) -> str:
    """Why the estimate may be only a bound: the run queued GM transfers of several cores
    behind each other (their order can move when their timing does) or had atomic adds
    wait for each other (their order too)."""
    edges = Counter()
    for k in cp.kernels:
        edges.update(k.edges)
    reasons = []
    if edges.get("GM bandwidth"):
        reasons.append("GM transfers queued behind each other on the path; their order is "
                       "kept as recorded")
    if edges.get("atomic"):
        reasons.append("atomic adds into one range waited for each other; their order is kept")
    return "; ".join(reasons)
