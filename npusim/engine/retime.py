"""Re-timing a run's dependency graph: every record's times computed from its dependencies.

With the recorded weights the pass gives back the run's own times (a test holds it to the
engine on every operator); with re-weighted ones (a pipe's instruction bodies scaled, the HBM
servers' share scaled) it is the what-if estimate of ``npusim/engine/whatif.py``. The rules are
the engine's (``npusim/engine/processes.py``): an instruction starts at the later of its issue
and its pipe's previous end; an exec instruction takes its body, plus its head when its pipe was
idle before; a GM move also ends no earlier than its L2 and HBM reservations, each starting at
the later of its own start and the server's previous reservation; an atomic add into a range
the previous one holds ends no earlier than that one's end plus its own body; a wait passes at
the matching set's visible time and holds its pipe ``flag_cycles``; a barrier or SyncAll on the
scalar waits for the last instruction of each pipe (and SyncAll for every core).

What it keeps fixed: the order the run took at shared resources (GM transfers, atomic adds,
which set released which wait) and the scalar's own costs.

``as_recorded`` gives the same ``Times`` without re-timing: the run's own issue, start and end
of each record, and the servers' reservations computed from the recorded starts (the critical
path with the recorded weights walks these; re-timing them agrees to float rounding, which
``tests/test_critical_path.py`` holds for every operator).
"""

from dataclasses import dataclass, field

from npusim.errors import NpusimError

EPS = 1e-9


@dataclass
class Times:
    """A re-timed run: per record its issue (the scalar reaching it, after any full-queue
    stall), start, end and free time (when its pipe could pop the next entry), the servers'
    reservations per GM transfer, each core's scalar end and the run's end."""

    out: list
    start: list
    end: list
    free: list
    l2: list
    hbm: list
    scalar_end: dict
    run_end: float
    scale: dict = field(default_factory=dict)
    hbm_scale: float = 1.0


def order(graph) -> list:
    """A topological order of the graph's nodes (``RunGraph.deps``), cached on the graph."""
    cached = getattr(graph, "_order", None)
    if cached is not None:
        return cached
    state, out = bytearray(2 * graph.n), []
    for root in range(2 * graph.n):
        if state[root]:
            continue
        stack = [root]
        while stack:
            node = stack[-1]
            if state[node] == 2:
                stack.pop()
            elif state[node] == 0:
                state[node] = 1
                for d in graph.deps(node):
                    if state[d] == 0:
                        stack.append(d)
                    elif state[d] == 1:
                        i = d >> 1
                        raise NpusimError(f"dependency graph has a cycle through record {i} "
                                          f"({graph.inst[i].name} on core {graph.core[i]})")
            else:
                state[node] = 2
                out.append(node)
                stack.pop()
    graph._order = out
    return out


def retime(graph, scale: dict | None = None, hbm: float = 1.0) -> Times:
    """The run's times with each pipe's exec bodies multiplied by ``scale[pipe]`` (0.5: twice
    as fast, 0: free) and each transfer's HBM share by ``hbm``."""
    scale = scale or {}
    n, ng = graph.n, len(graph.gl2)
    t = Times([0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * ng, [0.0] * ng, {}, 0.0,
              scale, hbm)
    arrivals: dict = {}
    pipe = graph.pipe
    for node in order(graph):
        i = node >> 1
        if not node & 1:
            t.out[i] = chain_time(graph, t, i) if pipe[i] == "S" else \
                max(chain_time(graph, t, i), pop_time(graph, t, i))
        elif pipe[i] == "S":
            _scalar(graph, t, i, arrivals)
        else:
            _pipe(graph, t, i, scale.get(pipe[i], 1.0), hbm)
    for core, (last, cost) in graph.scalar_end.items():
        t.scalar_end[core] = (chain_out(graph, t, last) if last >= 0 else 0.0) + cost
    t.run_end = max([*t.end, *t.scalar_end.values(), 0.0])
    return t


def as_recorded(graph) -> Times:
    """The run's own times as ``Times`` (see the module docstring), in one pass per column."""
    start, end, kind = list(graph.start), list(graph.end), graph.kind
    flag = graph.flag_cycles
    free = [s if k == "s" else e - flag if k == "w" else e
            for k, s, e in zip(kind, start, end, strict=True)]
    ng = len(graph.gl2)
    l2, hbm = [0.0] * ng, [0.0] * ng
    last_l2, grec, gl2, ghbm, ghprev = 0.0, graph.grec, graph.gl2, graph.ghbm, graph.ghprev
    for g in range(ng):
        at = start[grec[g]]
        last_l2 = l2[g] = (at if at > last_l2 else last_l2) + gl2[g]
        if ghbm[g] > 0:
            h = ghprev[g]
            before = hbm[h] if h >= 0 else 0.0
            hbm[g] = (at if at > before else before) + ghbm[g]
    scalar_end = dict(graph.scalar_ends)
    run_end = max([*end, *scalar_end.values(), 0.0])
    return Times(list(graph.issue), start, end, free, l2, hbm, scalar_end, run_end)


def chain_out(graph, t: Times, p: int) -> float:
    """Where the scalar's clock stands after record ``p``: its issue, or the end of a scalar
    record."""
    return t.end[p] if graph.pipe[p] == "S" else t.out[p]


def chain_time(graph, t: Times, i: int) -> float:
    """When the scalar reaches record ``i`` in its stream (before any stall)."""
    p = graph.cprev[i]
    return (chain_out(graph, t, p) if p >= 0 else 0.0) + graph.cost[i]


def pop_time(graph, t: Times, i: int) -> float:
    """When the pipe freed the queue entry a stalled issue waited for (-inf: not stalled)."""
    q = graph.pop[i]
    if q >= 0:
        return t.free[q]
    return graph.pop_at[i] if q == -2 else float("-inf")


def _pipe(graph, t: Times, i: int, factor: float, hbm: float) -> None:
    issue = t.out[i]
    p = graph.pprev[i]
    start = max(issue, t.end[p]) if p >= 0 else issue
    kind, free = graph.kind[i], None
    if kind == "x":
        end = _exec_end(graph, t, i, start, factor, hbm)
    elif kind in ("w", "W"):
        m = graph.match[i]
        passed = max(start, t.end[m] if kind == "w" else graph.visible(m, t.start[m], t.end[m]))
        end = passed + graph.flag_cycles
        free = passed if kind == "w" else end
    else:                         # set, cross-core set, pipe barrier: their recorded length
        end = start + (graph.end[i] - graph.start[i])
        free = start if kind == "s" else end
    t.start[i], t.end[i] = start, end
    t.free[i] = end if free is None else free


def _exec_end(graph, t: Times, i: int, start: float, factor: float, hbm: float) -> float:
    p = graph.pexec[i]
    last = t.end[p] if p >= 0 else -1.0
    body = graph.body[i] * factor
    end = start + body + (graph.head[i] if start > last + EPS else 0.0)
    g = graph.gm[i]
    if g < 0:
        return end
    l2_free = t.l2[g - 1] if g > 0 else 0.0
    t.l2[g] = max(start, l2_free) + graph.gl2[g]
    end = max(end, t.l2[g])
    if graph.ghbm[g] > 0:
        h = graph.ghprev[g]
        t.hbm[g] = max(start, t.hbm[h] if h >= 0 else 0.0) + graph.ghbm[g] * hbm
        end = max(end, t.hbm[g])
    a = graph.gaprev[g]
    if a >= 0:
        held = t.end[graph.grec[a]]
        if held > start:
            end = max(end, held + body)
    return end


def arrival(graph, t: Times, i: int) -> float:
    """When the scalar at barrier or SyncAll ``i`` has drained every pipe of its core."""
    at = t.out[i]
    for d in graph.drains.get(i, ()):
        at = max(at, t.end[d])
    return at


def _scalar(graph, t: Times, i: int, arrivals: dict) -> None:
    reached = t.out[i]
    kind = graph.kind[i]
    start = reached
    if kind == "Swait":
        start = max(reached, t.end[graph.match[i]])
    elif kind == "Sxwait":
        m = graph.match[i]
        start = max(reached, graph.visible(m, t.start[m], t.end[m]))
    elif kind == "Sbarrier":
        start = arrival(graph, t, i)
    elif kind == "Ssyncall":
        members = graph.rounds[i]
        key = members[0]
        if key not in arrivals:
            arrivals[key] = max(arrival(graph, t, j) for j in members)
        start = arrivals[key]
    end = start + (graph.end[i] - graph.start[i])
    t.start[i], t.end[i], t.free[i] = start, end, end
