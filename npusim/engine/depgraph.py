"""The dependency graph of one kernel's timed run, built from what the run recorded.

A node is an executed instruction (core, pipe, issue, start, end: the tracer's records). Its
edges are every reason it could not start earlier, each found in the recording, never guessed
from times:

- ``pipe``: program order on its pipe (the previous instruction's end);
- ``issue``: the scalar issuing it, a chain per core in stream order whose links cost the
  scalar's issue and scalar-instruction cycles (``cost``);
- ``full queue``: an issue the scalar could make only when the pipe popped an entry of its full
  queue (``Tracer.stalls``): the instruction ``queue_depth + 1`` places before it on that pipe
  released it;
- ``flag``: ``set_flag`` -> ``wait_flag``, the n-th set of a (src, dst, id) with the n-th wait
  on the same core (flags count, as in ``npusim/engine/timed.py``); queue hand-offs are such
  flags (``enque``/``deque`` lower to them);
- ``cross-core flag``: the n-th set reaching a core with the n-th wait of that flag there;
- ``barrier``: ``PipeBarrier(ALL)`` and ``SyncAll`` drain every pipe of the core (the last
  instruction issued to each); ``SyncAll`` also waits for every core's arrival;
- ``GM bandwidth``: each GM transfer's reservation of the shared L2 and HBM servers follows the
  previous one in the order the run made them (``Tracer.gm``);
- ``atomic``: an atomic add into the range the previous one still holds.

The graph is kept as flat arrays (one entry per record, 8 bytes each) rather than networkx
objects, so a run of millions of instructions fits; the links are computed a column at a time
(``npusim/engine/graph_links.py``). ``to_networkx`` gives the same graph as a ``networkx.DiGraph``
for runs up to ``NX_MAX_NODES`` records. Not represented: jitter (the graph re-times a run
without it), and any order the run could have taken but did not (the recorded FIFO order of
the shared servers and of atomic adds is kept when the graph is re-weighted).
"""

from collections import defaultdict
from itertools import repeat
from operator import attrgetter, itemgetter

import numpy as np

from npusim.engine.graph_links import (
    Lanes,
    Stream,
    chain_links,
    drain_links,
    flag_links,
    float_array,
    gm_links,
    int_array,
    pipe_links,
    server_links,
    stall_links,
)
from npusim.engine.trace import columns
from npusim.errors import NpusimError

NX_MAX_NODES = 200_000   # records up to which to_networkx builds a networkx graph
PIPE_KIND = {"exec": "x", "set": "s", "wait": "w", "xset": "X", "xwait": "W", "barrier": "b",
             "skip": "x"}   # a fast run's steady skip (isa/steady.py) is the pipe's own time
_CROSS = frozenset(("X", "W", "Sxset", "Sxwait"))   # kinds of cross-core flag records


class RunGraph:
    """The arrays of the graph of one kernel's run (see the module docstring)."""

    def __init__(self, tracer, chip, take_records: bool = False):
        """``take_records``: the tracer's records are dropped once read (a run whose records
        are not wanted after its path: the graph then grows into the memory they held)."""
        records = tracer.records
        if take_records:
            tracer.records = []
        cores, pipes, insts, issue, start, end = columns(records)
        del records
        self.chip, self.n = chip, len(insts)
        self.core, self.pipe, self.inst = cores, pipes, insts
        self.issue, self.start, self.end = issue, start, end
        raw = list(map(attrgetter("kind"), insts))
        scalar_kind = {k: "S" + k for k in set(raw)}
        self.kind = [scalar_kind[k] if p == "S" else PIPE_KIND[k]
                     for p, k in zip(pipes, raw, strict=True)]
        del raw
        self.flag_cycles = chip.flag_cycles
        self._body = self._head = None    # built on first read (``body``, ``head``)
        self._links(tracer, chip)

    def _links(self, tracer, chip) -> None:
        """Every link array (``npusim/engine/graph_links.py``)."""
        n, names = self.n, tuple(dict.fromkeys(self.pipe))
        code = {name: k for k, name in enumerate(names)}
        width = len(names)

        def lane_code(rows):      # (core, pipe, ...) rows: their lanes' ids (-1: no such)
            c = np.fromiter(map(itemgetter(0), rows), np.int64, len(rows))
            p = np.fromiter(map(code.get, map(itemgetter(1), rows), repeat(-1)), np.int64,
                            len(rows))
            return np.where(p >= 0, c * width + p, -1)

        core = np.fromiter(self.core, np.int64, n)
        pipe = np.fromiter(map(code.__getitem__, self.pipe), np.int64, n)
        issue = np.fromiter(self.issue, np.float64, n)
        kinds = {k: j for j, k in enumerate(dict.fromkeys(self.kind))}
        kind = np.fromiter(map(kinds.__getitem__, self.kind), np.int64, n)

        def where(*names):
            return np.flatnonzero(np.isin(kind, [kinds[k] for k in names if k in kinds]))

        is_exec = kind == kinds.get("x", -1)
        scalar = pipe == code.get("S", -1)
        lanes = Lanes(core, pipe, names)
        pprev, pexec = pipe_links(lanes, is_exec)
        self.pprev, self.pexec = int_array(pprev), int_array(pexec)
        ready, pop, self.pop_at = stall_links(tracer, lanes, lane_code, issue, chip.queue_depth)
        self.pop = int_array(pop)
        stream = Stream(core, issue, scalar)
        end = np.fromiter(self.end, np.float64, n)
        cprev, cost, out = chain_links(stream, issue, end, scalar, ready)
        self.cprev, self.cost = int_array(cprev), float_array(cost)
        ends = self.scalar_ends = dict(tracer.scalar_ends)
        self.scalar_end = {c: (int(stream.order[last]), ends[c] - float(out[last]))
                           for c, last in zip(stream.cores, stream.ends.tolist(), strict=True)
                           if c in ends}
        self.drains, self.rounds = drain_links(tracer, stream, lanes, self.kind,
                                               where("Sbarrier", "Ssyncall"), self.core,
                                               self.end)
        self.match = flag_links(where("s", "Sset"), where("w", "Swait"), self.inst, core, n)
        self._cross(tracer, where(*_CROSS).tolist())
        self.match = int_array(self.match)
        self._gm_links(tracer, core * width + pipe, is_exec, lane_code)

    def _gm_links(self, tracer, lane_id, is_exec, lane_code) -> None:
        """Each GM move's transfer and the transfers' order on the servers."""
        execs = np.flatnonzero(is_exec)
        touches = np.zeros(self.n, bool)
        touches[execs] = np.fromiter(map(attrgetter("touches_gm"),
                                         map(self.inst.__getitem__, execs.tolist())),
                                     bool, len(execs))
        gm, grec = gm_links(tracer, lane_id, touches, lane_code, self.n)
        self.gm, self.grec = int_array(gm), int_array(grec)
        self.gl2 = [x[2] for x in tracer.gm]
        self.ghbm = [x[3] for x in tracer.gm]
        ghprev, gaprev = server_links(tracer)
        self.ghprev, self.gaprev = int_array(ghprev), int_array(gaprev)

    @property
    def body(self) -> list:
        """Each exec record's body on the chip, as the engine charges it (0 for the others);
        built on first read (the path's walk asks ``exec_cost`` of its few records)."""
        if self._body is None:
            self._costs()
        return self._body

    @property
    def head(self) -> list:
        """Each exec record's head (see ``body``)."""
        if self._head is None:
            self._costs()
        return self._head

    def exec_cost(self, i: int) -> tuple:
        """(body, head) of exec record ``i``."""
        if self._body is not None:
            return self._body[i], self._head[i]
        return self.inst[i].body(self.chip), self.inst[i].head(self.chip)

    def _costs(self) -> None:
        chip, cache = self.chip, {}
        self._body, self._head = [0.0] * self.n, [0.0] * self.n
        for i, inst in enumerate(self.inst):
            if self.kind[i] != "x":
                continue
            hit = cache.get(id(inst))
            if hit is None:
                hit = cache[id(inst)] = (inst.body(chip), inst.head(chip))
            self._body[i], self._head[i] = hit

    def visible(self, i, s, e) -> float:
        """When a cross-core set becomes visible to its peers: at once on S, else at its end."""
        return s if self.pipe[i] == "S" else e

    def _cross(self, tracer, records: list) -> None:
        """The n-th cross-core set reaching a core (in the time it became visible) releases
        the n-th cross-core wait of that flag there."""
        sets, waits = defaultdict(list), defaultdict(list)
        for i in records:
            kind = self.inst[i].kind
            if kind == "xset":
                at = self.visible(i, self.start[i], self.end[i])
                for peer in tracer.peers[self.core[i]]:
                    sets[(peer, self.inst[i].flag_id)].append((at, i))
            elif kind == "xwait":
                waits[(self.core[i], self.inst[i].flag_id)].append(i)
        for key, ws in waits.items():
            ss = sorted(sets.get(key, []))
            for w, (_at, s) in zip(sorted(ws, key=self.start.__getitem__), ss, strict=False):
                self.match[w] = s

    def deps(self, node: int) -> list:
        """The nodes node ``node``'s time is computed from. Each record is two nodes: its issue
        (``2 * i``: the scalar reaching it) and its run (``2 * i + 1``)."""
        i = node >> 1
        if not node & 1:
            p, q = self.cprev[i], self.pop[i]
            out = [2 * p + (self.pipe[p] == "S")] if p >= 0 else []
            return out + [2 * q + 1] if q >= 0 else out
        out = [2 * i] + [2 * d + 1 for d in (self.pprev[i], self.match[i]) if d >= 0]
        g = self.gm[i]
        if g >= 0:
            out += [2 * self.grec[h] + 1 for h in (g - 1, self.ghprev[g], self.gaprev[g])
                    if h >= 0]
        for j in self.rounds.get(i, (i,)):
            out += [2 * d + 1 for d in self.drains.get(j, ())] + [2 * j]
        return out

    def to_networkx(self):
        """The graph as a ``networkx.DiGraph``: a node per record (core, pipe, name, start,
        end), an edge per dependency with its ``reason``."""
        import networkx as nx

        if self.n > NX_MAX_NODES:
            raise NpusimError(f"dependency graph of {self.n:,} instructions: to_networkx builds "
                              f"graphs of up to {NX_MAX_NODES:,} (the flat graph, the critical "
                              "path and the what-ifs work at any size)")
        g = nx.DiGraph()
        for i in range(self.n):
            g.add_node(i, core=self.core[i], pipe=self.pipe[i], name=self.inst[i].name,
                       start=self.start[i], end=self.end[i])
        for i in range(self.n):
            for d, reason in self._reasons(i):
                g.add_edge(d, i, reason=reason)
        return g

    def _reasons(self, i):
        yield from ((d, r) for d, r in ((self.cprev[i], "issue"), (self.pprev[i], "pipe"),
                                       (self.match[i], _match_reason(self.inst[i].kind)),
                                       (self.pop[i], "full queue")) if d >= 0)
        for d in self.drains.get(i, ()):
            yield d, "barrier"
        for j in self.rounds.get(i, ()):
            if j != i:
                yield self.cprev[j], "SyncAll"
        g = self.gm[i]
        if g > 0:
            yield self.grec[g - 1], "GM bandwidth"
        if g >= 0 and self.gaprev[g] >= 0:
            yield self.grec[self.gaprev[g]], "atomic"


def _match_reason(kind: str) -> str:
    return "cross-core flag" if kind == "xwait" else "flag"
