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

FREE_PIPES = 2      # pipes (the largest shares) whose "free" what-if is estimated
PIPES = ("MTE2", "MTE1", "M", "V", "MTE3", "FIX", "S")
WAITS = ("flag", "cross-core flag", "barrier", "SyncAll", "GM bandwidth", "atomic add",
         "launch", "stream gap", "rounding")


@dataclass
class KernelShare:
    """One kernel of the operator on the path: its name, cycles and where they went; ``ends``
    its run's end re-timed per what-if scenario (``SCENARIOS`` of the pipes on its path)."""

    name: str
    cycles: int
    by_what: Counter
    edges: Counter
    path: object = None      # its KernelPath
    end: float = 0.0         # its run's end (before rounding up)
    ends: dict = field(default_factory=dict)


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


def scenarios(by_what) -> list:
    """The what-if scenarios ``(label, {pipe: body factor}, HBM factor)`` worth re-timing for
    a path with these shares: each pipe on it 2x faster and free, HBM 2x if GM bandwidth is on
    it. A pipe not on a kernel's path cannot shorten it (the re-timed graph's longest path
    keeps its length), so its scenario is that kernel's own end."""
    out = []
    for pipe in PIPES[:-1]:
        if by_what.get(pipe, 0) > 0:
            out += [(f"{pipe} 2x faster", {pipe: 0.5}, 1.0), (f"{pipe} free", {pipe: 0.0}, 1.0)]
    if by_what.get("GM bandwidth", 0) > 0:
        out.append(("HBM 2x bandwidth", {}, 0.5))
    return out


def critical_path(result, with_what_ifs: bool = False) -> CriticalPath:
    """The critical path of ``result`` (see the module docstring); with ``with_what_ifs``
    each kernel's graph is also re-timed for its ``scenarios`` before it is dropped (one
    kernel's graph in memory at a time). An operator run with ``trace="path"`` took each
    kernel's share as the kernel ended and kept no records: its path is returned as taken,
    and the what-ifs, which re-time the graphs, need a run with ``trace=True``."""
    if result.kernel_paths is not None:
        if with_what_ifs:
            raise NpusimError("the what-ifs re-time each kernel's dependency graph: they need "
                              "a run with trace=True (this one, trace='path', kept only each "
                              "kernel's critical path)")
        return CriticalPath(result.cycles, list(result.kernel_paths))
    out = CriticalPath(result.cycles)
    for name, gap, launch, run in kernel_runs(result):
        out.kernels.append(kernel_share(name, gap, launch, run, with_what_ifs))
    return out


def kernel_share(name: str, gap: int, launch: int, run, with_what_ifs: bool = False):
    """One kernel's KernelShare from its timed, traced ``run``: its path's cycles by what, plus
    the stream gap before it and its launch."""
    return share_of(name, gap, launch, run.cycles, run_path(name, run, with_what_ifs))


def run_path(name: str, run, with_what_ifs: bool = False, take_records: bool = False) -> tuple:
    """(cycles by what, edges, KernelPath, what-if ends) of ``run``'s own path: what
    ``share_of`` makes a KernelShare of (``npusim/engine/launch_memo.py`` keeps it). With
    ``take_records`` the run's tracer is left without records (``RunGraph``)."""
    if getattr(run.tracer, "jittered", False):
        raise NpusimError(f"kernel {name}: the run was made with jitter: its dependency graph "
                          "cannot re-time a run made with jitter (run without it for the "
                          "critical path)")
    graph = RunGraph(run.tracer, run.chip, take_records)
    path = kernel_path(graph)
    by = path.by_what()
    ends = {label: retime(graph, scale, hbm).run_end
            for label, scale, hbm in scenarios(by)} if with_what_ifs else {}
    del graph
    return by, path.edges, path, ends


def share_of(name: str, gap: int, launch: int, cycles: int, own: tuple):
    """The KernelShare of a kernel of ``cycles`` whose path is ``own`` (``run_path``), after
    a stream gap of ``gap`` and a launch of ``launch`` cycles."""
    by, edges, path, ends = own
    by = Counter(by)
    if gap:
        by["stream gap"] += gap
    if launch:
        by["launch"] += launch
    rounding = cycles - path.length
    if not -1e-6 <= rounding < 1:
        raise NpusimError(f"kernel {name}: its dependency graph gives {path.length:.3f} "
                          f"cycles, the run {cycles}: the graph cannot re-time a run "
                          "made with jitter")
    if rounding > 1e-9:
        by["rounding"] += rounding
    return KernelShare(name, gap + launch + cycles, by, edges, path, path.length, ends)


@dataclass
class WhatIf:
    """A what-if: ``label``, the estimated cycles, and why it is only approximate (or "")."""

    label: str
    cycles: int
    base: int
    bound: str = ""

    @property
    def saving(self) -> float:
        return 1 - self.cycles / self.base if self.base else 0.0


def estimate(cp: CriticalPath, runs: list, label: str) -> int:
    """The operator's cycles in scenario ``label``: each kernel's re-timed end (its own end
    where the scenario's pipe is not on its path), rounded up, plus its fixed costs."""
    total = 0
    for share, (_name, gap, launch, _run) in zip(cp.kernels, runs, strict=True):
        total += gap + launch + _ceil(share.ends.get(label, share.end))
    return total


def _ceil(x: float) -> int:
    n = int(x)
    return n + 1 if x - n > 1e-9 else n


def what_ifs(result, cp: CriticalPath | None = None) -> list:
    """The what-ifs, fastest first: every pipe on the path 2x faster, the ``FREE_PIPES``
    pipes with the largest shares free, and HBM 2x when GM bandwidth is on the path. ``cp``
    must come from ``critical_path(result, with_what_ifs=True)``."""
    cp = cp or critical_path(result, with_what_ifs=True)
    runs = kernel_runs(result)
    by = cp.by_what
    on_path = [p for p in PIPES[:-1] if by.get(p, 0) > 0]
    labels = [f"{p} 2x faster" for p in on_path]
    labels += [f"{p} free" for p in sorted(on_path, key=lambda p: -by[p])[:FREE_PIPES]]
    if by.get("GM bandwidth", 0) > 0:
        labels.append("HBM 2x bandwidth")
    out = [WhatIf(label, estimate(cp, runs, label), cp.cycles, _bound(cp, label))
           for label in labels]
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
