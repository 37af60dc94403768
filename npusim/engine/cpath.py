"""The critical path of a kernel's run: from the run's end back to cycle 0, each step the
dependency that set the time of the one after it (``npusim/engine/depgraph.py``).

Walking back from the last event, every event's time is the time of one of its dependencies
plus that dependency's cost; the walk follows that one (the binding one; on a tie, the pipe's
own order first, then the scalar). Each step's length is the difference of the two times, so
the lengths sum to the run's end exactly. A step is attributed to what took the time: a pipe's
work (``MTE2``, ``MTE1``, ``M``, ``V``, ``MTE3``, ``FIX``), the scalar (``S``: issue and scalar
instructions), or a wait (``flag``: set/wait latency, ``cross-core flag``, ``barrier``,
``SyncAll``, ``GM bandwidth``: a GM move's L2/HBM reservation, its own or one it queued behind,
``atomic add``: another add holding the range). The edges walked are counted by reason
(``pipe``, ``issue``, ``full queue``, ``flag``, ...).
"""

from collections import Counter
from dataclasses import dataclass, field

from npusim.engine.retime import EPS, as_recorded, chain_time, pop_time
from npusim.errors import NpusimError

SCALAR_KIND = {"Swait": "flag", "Sset": "flag", "Sxset": "cross-core flag",
               "Sxwait": "cross-core flag", "Sbarrier": "barrier", "Ssyncall": "SyncAll"}
STEADY = "steady state"   # a fast run's left-out iterations (isa/steady.py), shared out
PIPE_KIND = {"s": "flag", "w": "flag", "X": "cross-core flag", "W": "cross-core flag",
             "b": "barrier"}


@dataclass
class Step:
    """One step of the path: ``cycles`` of ``what`` on record ``record`` (-1: none; then
    ``core`` is -1 and ``pipe`` empty) of ``core``'s ``pipe``, ending at cycle ``until``."""

    what: str
    cycles: float
    record: int
    until: float
    core: int = -1
    pipe: str = ""


@dataclass
class KernelPath:
    """A kernel's critical path: its steps in time order and the edges walked."""

    steps: list
    length: float
    edges: Counter = field(default_factory=Counter)

    def by_what(self) -> Counter:
        """Cycles per what. A fast run's steady skips (``STEADY`` steps: the iterations it
        left out) are shared out as the rest of the kernel's path is, launch aside: the
        left-out iterations are taken to be limited as the recorded ones were."""
        out, steady = Counter(), 0.0
        for s in self.steps:
            if s.what == STEADY:
                steady += s.cycles
            else:
                out[s.what] += s.cycles
        if steady:
            basis = {w: c for w, c in out.items() if w not in ("launch", "stream gap")}
            total = sum(basis.values())
            if total <= 0:
                out[STEADY] += steady
            for w, c in basis.items():
                out[w] += steady * c / total
        return out


def kernel_path(graph, times=None) -> KernelPath:
    """The critical path of ``graph``'s run, walked on its recorded times (``as_recorded``)
    unless ``times`` (a re-timing) is given."""
    t = times if times is not None else as_recorded(graph)
    ev = _last_event(t)
    steps, edges = [], Counter()
    budget = 8 * graph.n + 16        # every event is left once: more is a walk in a circle
    while ev is not None:
        budget -= 1
        if budget < 0:
            raise NpusimError("critical path: the walk back from the run's end does not reach "
                              "cycle 0 (the recorded times do not follow from the graph)")
        what, nxt, reason = _step(graph, t, ev)
        here, there = _time(graph, t, ev), _time(graph, t, nxt)
        if what is not None and here - there > 0:
            i = ev[1] if ev[0] in "estp" else -1
            steps.append(Step(what, here - there, i, here, graph.core[i] if i >= 0 else -1,
                              graph.pipe[i] if i >= 0 else ""))
        if reason is not None:
            edges[reason] += 1
        ev = nxt if nxt[0] != "zero" else None
    steps.reverse()
    return KernelPath(steps, t.run_end, edges)


def _last_event(t):
    best, ev = -1.0, ("zero", 0)
    for i, e in enumerate(t.end):
        if e > best:
            best, ev = e, ("e", i)
    for core, e in t.scalar_end.items():
        if e > best + EPS:
            best, ev = e, ("send", core)
    return ev


def _time(graph, t, ev) -> float:
    kind, i = ev
    if kind == "e":
        return t.end[i]
    if kind == "s":
        return t.start[i]
    if kind == "t":
        return t.out[i]
    if kind == "p":      # a wait's pass: its end less the flag latency
        return t.end[i] - graph.flag_cycles
    if kind == "f":
        return t.free[i]
    if kind == "l2":
        return t.l2[i]
    if kind == "hbm":
        return t.hbm[i]
    if kind == "send":
        return t.scalar_end[i]
    return 0.0


def _chain_event(graph, p):
    if p < 0:
        return ("zero", 0)
    return ("e", p) if graph.pipe[p] == "S" else ("t", p)


def _step(graph, t, ev):
    """(what the step from ``ev`` back is, the event before it, the edge's reason)."""
    kind, i = ev
    if kind == "send":
        last, _cost = graph.scalar_end[i]
        return "S", _chain_event(graph, last), "issue"
    if kind == "t":
        return _issue_step(graph, t, i)
    if kind == "f":
        k = graph.kind[i]
        return None, (("e", i) if k == "x" else ("s", i) if k == "s" else
                      ("p", i) if k == "w" else ("e", i)), None
    if kind == "s":
        return _start_step(graph, t, i)
    if kind == "e":
        return _end_step(graph, t, i)
    if kind == "p":
        return _pass_step(graph, t, i)
    return _server_step(graph, t, kind, i)


def _issue_step(graph, t, i):
    if graph.pipe[i] != "S" and pop_time(graph, t, i) > chain_time(graph, t, i) + EPS:
        q = graph.pop[i]
        if q >= 0:
            return None, ("f", q), "full queue"
        return "S", ("zero", 0), "full queue"
    return "S", _chain_event(graph, graph.cprev[i]), "issue"


def _start_step(graph, t, i):
    if graph.pipe[i] != "S":
        p = graph.pprev[i]
        if p >= 0 and t.end[p] >= t.out[i] - EPS:
            return None, ("e", p), "pipe"
        return None, ("t", i), None
    start, kind = t.start[i], graph.kind[i]
    if start <= t.out[i] + EPS:
        return None, ("t", i), None
    if kind == "Swait":
        return None, ("e", graph.match[i]), "flag"
    if kind == "Sxwait":
        m = graph.match[i]
        return None, (("s", m) if graph.pipe[m] == "S" else ("e", m)), "cross-core flag"
    members = graph.rounds.get(i, (i,))
    for j in members:
        for d in graph.drains.get(j, ()):
            if t.end[d] >= start - EPS:
                return None, ("e", d), "barrier" if kind == "Sbarrier" else "SyncAll"
        if t.out[j] >= start - EPS:
            return None, ("t", j), "SyncAll"
    return None, ("t", i), None


def _end_step(graph, t, i):
    kind = graph.kind[i]
    if graph.pipe[i] == "S":
        return SCALAR_KIND.get(kind, "S"), ("s", i), None
    if kind in ("w", "W"):
        return PIPE_KIND[kind], ("p", i), None
    if kind != "x":
        return PIPE_KIND[kind], ("s", i), None
    start, end = t.start[i], t.end[i]
    p = graph.pexec[i]
    last = t.end[p] if p >= 0 else -1.0
    body, head = graph.exec_cost(i)
    body *= t.scale.get(graph.pipe[i], 1.0)
    own = start + body + (head if start > last + EPS else 0.0)
    if own >= end - EPS:
        return (STEADY if graph.inst[i].kind == "skip" else graph.pipe[i]), ("s", i), None
    g = graph.gm[i]
    a = graph.gaprev[g]
    if a >= 0 and t.end[graph.grec[a]] > start and t.end[graph.grec[a]] + body >= end - EPS:
        return "atomic add", ("e", graph.grec[a]), "atomic"
    if graph.ghbm[g] > 0 and t.hbm[g] >= end - EPS:
        return None, ("hbm", g), None
    if t.l2[g] < end - EPS:    # queued behind the transfers a fast run left out (isa/steady.py)
        return "GM bandwidth", ("l2", g), None
    return None, ("l2", g), None


def _pass_step(graph, t, i):
    m = graph.match[i]
    passed = t.end[i] - graph.flag_cycles
    if t.start[i] >= passed - EPS:
        return None, ("s", i), None
    if graph.kind[i] == "w":
        return None, ("e", m), "flag"
    return None, (("s", m) if graph.pipe[m] == "S" else ("e", m)), "cross-core flag"


def _server_step(graph, t, kind, g):
    rec = graph.grec[g]
    if kind == "hbm":
        h, free = graph.ghprev[g], t.hbm
    else:
        h, free = g - 1, t.l2
    if h >= 0 and free[h] > t.start[rec] + EPS:
        return "GM bandwidth", (kind, h), "GM bandwidth"
    return "GM bandwidth", ("s", rec), None
