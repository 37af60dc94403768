"""The dependency graph's links built record by record, in plain Python, straight from the
definitions in ``npusim/engine/depgraph.py``'s docstring: the oracle the column-at-a-time
construction (``npusim/engine/graph_links.py``) is held to."""

from bisect import bisect_left
from collections import defaultdict

SEARCH_BACK = 64   # as the engine's drain search (graph_links.DRAIN_SEARCH)


def reference_links(graph, tracer) -> dict:
    """Every link array of ``graph`` (a RunGraph built from ``tracer``) recomputed."""
    n, core, pipe, kind = graph.n, graph.core, graph.pipe, graph.kind
    out = {"pprev": [-1] * n, "pexec": [-1] * n, "cprev": [-1] * n, "cost": [0.0] * n,
           "pop": [-1] * n, "pop_at": {}, "match": [-1] * n, "drains": {}, "scalar_end": {}}
    lanes = defaultdict(list)
    for i in range(n):
        lanes[(core[i], pipe[i])].append(i)
    for (_c, p), recs in lanes.items():
        if p == "S":
            continue
        before, before_exec = -1, -1
        for i in recs:
            out["pprev"][i], out["pexec"][i] = before, before_exec
            before = i
            before_exec = i if kind[i] == "x" else before_exec
    _chains(graph, tracer, lanes, out)
    _flags(graph, out)
    out["gm"], out["grec"] = _gm(graph, tracer, lanes)
    last_hbm, last_key = -1, {}
    out["ghprev"], out["gaprev"] = [-1] * len(tracer.gm), [-1] * len(tracer.gm)
    for g, (*_rest, hbm, key) in enumerate(tracer.gm):
        if hbm > 0:
            out["ghprev"][g], last_hbm = last_hbm, g
        if key is not None:
            out["gaprev"][g] = last_key.get(key, -1)
            last_key[key] = g
    return out


def _stream(graph) -> list:
    """Each core's records by issue, a pipe's before the scalar's at one cycle, then by
    record; the cores in the order they first appear."""
    rank = {c: k for k, c in enumerate(dict.fromkeys(graph.core))}
    return sorted(range(graph.n), key=lambda i: (rank[graph.core[i]], graph.issue[i],
                                                 graph.pipe[i] == "S", i))


def _chains(graph, tracer, lanes, out) -> None:
    stalls = {(c, p, t): ready for c, p, t, ready in tracer.stalls}
    drained = defaultdict(list)
    for c, waited in tracer.drains:
        drained[c].append(waited)
    ends = dict(tracer.scalar_ends)
    state = {}    # core -> (previous record, scalar clock after it, {pipe: last record})
    syncs, rounds = defaultdict(int), defaultdict(list)
    for i in _stream(graph):
        c, p, t = graph.core[i], graph.pipe[i], graph.issue[i]
        prev, clock, last = state.get(c, (-1, 0.0, {}))
        out["cprev"][i] = prev
        if p != "S":
            ready = stalls.get((c, p, t))
            out["cost"][i] = (t if ready is None else ready) - clock
            if ready is not None:
                lane = lanes[(c, p)]
                q = lane.index(i) - graph.chip.queue_depth - 1
                out["pop"][i], out["pop_at"][i] = (lane[q] if q >= 0 else -2), t
            last = {**last, p: i}
            clock = t
        else:
            out["cost"][i] = t - clock
            if graph.kind[i] in ("Sbarrier", "Ssyncall"):
                waited = drained[c].pop(0) if drained[c] else []
                out["drains"][i] = _drained(graph, waited, last, lanes, c)
                if graph.kind[i] == "Ssyncall":
                    rounds[syncs[c]].append(i)
                    syncs[c] += 1
            clock = graph.end[i]
        state[c] = (i, clock, last)
    for c, (prev, clock, _last) in state.items():
        if c in ends:
            out["scalar_end"][c] = (prev, ends[c] - clock)
    out["rounds"] = {i: members for members in rounds.values() for i in members}


def _drained(graph, waited, last, lanes, c) -> list:
    found = []
    for p, until in waited:
        if p not in last:
            continue
        lane = lanes[(c, p)]
        k = bisect_left(lane, last[p])
        for back in range(SEARCH_BACK):
            if k - back < 0:
                break
            if abs(graph.end[lane[k - back]] - until) <= 1e-6:
                found.append(lane[k - back])
                break
    return found


def _flags(graph, out) -> None:
    sets, waits = defaultdict(list), defaultdict(list)
    for i, k in enumerate(graph.kind):
        if k in ("s", "Sset"):
            sets[(graph.core[i], graph.inst[i].key)].append(i)
        elif k in ("w", "Swait"):
            waits[(graph.core[i], graph.inst[i].key)].append(i)
    for key, ws in waits.items():
        for w, s in zip(ws, sets.get(key, []), strict=False):
            out["match"][w] = s
    for i, k in enumerate(graph.kind):        # cross-core flags: as recorded by the graph
        if k in ("X", "W", "Sxset", "Sxwait") and graph.match[i] >= 0:
            out["match"][i] = graph.match[i]


def _gm(graph, tracer, lanes) -> tuple:
    gm, grec = [-1] * graph.n, [0] * len(tracer.gm)
    per_lane = defaultdict(list)
    for g, (c, p, *_rest) in enumerate(tracer.gm):
        per_lane[(c, p)].append(g)
    for key, gs in per_lane.items():
        recs = [i for i in lanes.get(key, ()) if graph.kind[i] == "x"
                and graph.inst[i].touches_gm]
        for g, i in zip(gs, recs, strict=True):
            gm[i], grec[g] = g, i
    return gm, grec


def assert_links_match(graph, tracer) -> None:
    """Every link of ``graph`` equals the record-by-record construction."""
    want = reference_links(graph, tracer)
    for name, value in want.items():
        got = getattr(graph, name)
        assert (got == value if isinstance(value, dict) else list(got) == value), name
