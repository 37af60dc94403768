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

The graph is kept as flat arrays (one entry per record) rather than networkx objects, so a run
of millions of instructions fits; ``to_networkx`` gives the same graph as a ``networkx.DiGraph``
for runs up to ``NX_MAX_NODES`` records. Not represented: jitter (the graph re-times a run
without it), and any order the run could have taken but did not (the recorded FIFO order of
the shared servers and of atomic adds is kept when the graph is re-weighted).
"""

from bisect import bisect_left
from collections import defaultdict

from npusim.engine.trace import columns
from npusim.errors import NpusimError

NX_MAX_NODES = 200_000   # records up to which to_networkx builds a networkx graph
DRAIN_SEARCH = 64       # instructions back from a barrier searched for the one it waited for
PIPE_KIND = {"exec": "x", "set": "s", "wait": "w", "xset": "X", "xwait": "W", "barrier": "b",
             "skip": "x"}   # a fast run's steady skip (isa/steady.py) is the pipe's own time


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
        self.kind = [PIPE_KIND[i.kind] if p != "S" else "S" + i.kind
                     for p, i in zip(pipes, insts, strict=True)]
        self.flag_cycles = chip.flag_cycles
        n = self.n
        self.pprev, self.pexec = [-1] * n, [-1] * n
        self.cprev, self.cost = [-1] * n, [0.0] * n
        self.pop, self.pop_at = [-1] * n, {}
        self.match = [-1] * n
        self.drains: dict = {}
        self.rounds: dict = {}
        self._body = self._head = None    # built on first read (``body``, ``head``)
        self.gm = [-1] * n
        self.scalar_end: dict = {}
        lanes = self._lanes()
        self._chains(tracer, lanes)
        self._flags()
        self._cross(tracer)
        self._gm(tracer, lanes)

    def _lanes(self) -> dict:
        """{(core, pipe): record indices in execution order}, and the links along each."""
        lanes = defaultdict(list)
        for i, key in enumerate(zip(self.core, self.pipe, strict=True)):
            lanes[key].append(i)
        kind, pprev, pexec = self.kind, self.pprev, self.pexec
        for (_core, pipe), idx in lanes.items():
            if pipe == "S":
                continue
            last, last_exec = -1, -1
            for i in idx:
                pprev[i], pexec[i], last = last, last_exec, i
                if kind[i] == "x":
                    last_exec = i
        return lanes

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

    def _chains(self, tracer, lanes) -> None:
        """Per core, the scalar's issue chain in stream order, its costs, its stalls, the
        drains of its barriers and its SyncAll rounds."""
        ends = self.scalar_ends = dict(tracer.scalar_ends)
        drained = defaultdict(list)
        for core, waited in tracer.drains:
            drained[core].append(waited)
        stalls = defaultdict(dict)     # per core: (pipe, issue) -> cycle it was ready
        for c, p, t, ready in tracer.stalls:
            stalls[c][(p, t)] = ready
        syncs, rounds = defaultdict(int), defaultdict(list)
        for core, events in self._per_core():
            prev, prev_out = self._chain(core, events, stalls.get(core), lanes, drained[core],
                                         syncs, rounds)
            if core in ends:
                self.scalar_end[core] = (prev, ends[core] - prev_out)
        self.rounds = {i: members for members in rounds.values() for i in members}

    def _per_core(self):
        """(core, its records in stream order: by issue, a pipe's before the scalar's at one
        cycle, then by record), the cores in the order they first appear."""
        scalar = [p == "S" for p in self.pipe]
        rank = {c: k for k, c in enumerate(dict.fromkeys(self.core))}
        order = list(range(self.n))          # stable sorts, least significant key first
        order.sort(key=scalar.__getitem__)
        order.sort(key=self.issue.__getitem__)
        order.sort(key=list(map(rank.__getitem__, self.core)).__getitem__)
        start = 0
        for k in range(1, self.n + 1):
            if k == self.n or self.core[order[k]] != self.core[order[start]]:
                yield self.core[order[start]], order[start:k]
                start = k

    def _chain(self, core, events, stalls, lanes, drained, syncs, rounds) -> tuple:
        """One core's chain (see ``_chains``); returns its last record and the scalar's clock
        after it."""
        pipe, kind, issue, end = self.pipe, self.kind, self.issue, self.end
        cprev, cost = self.cprev, self.cost
        prev, prev_out, last = -1, 0.0, {}
        for i in events:
            t, name = issue[i], pipe[i]
            cprev[i] = prev
            if name != "S":
                ready = stalls.get((name, t)) if stalls else None
                if ready is None:
                    cost[i] = t - prev_out
                else:
                    cost[i] = ready - prev_out
                    self._stalled(i, lanes[(core, name)], t)
                prev_out, last[name] = t, i
            else:
                cost[i] = t - prev_out
                k = kind[i]
                if k in ("Sbarrier", "Ssyncall"):
                    waited = drained.pop(0) if drained else []
                    self.drains[i] = self._drained(waited, last, lanes, core)
                    if k == "Ssyncall":
                        rounds[syncs[core]].append(i)
                        syncs[core] += 1
                prev_out = end[i]
            prev = i
        return prev, prev_out

    def _stalled(self, i: int, lane: list, t: float) -> None:
        """Record ``i`` issued at the pop of the entry ``queue_depth + 1`` places before it on
        its pipe (``lane``: the pipe's records in order, ascending)."""
        q = bisect_left(lane, i) - self.chip.queue_depth - 1
        self.pop[i] = lane[q] if q >= 0 else -2
        self.pop_at[i] = t

    def _drained(self, waited, last, lanes, core) -> list:
        """The records whose end let a barrier's drain go: of each pipe the run waited for,
        the latest instruction issued before the barrier that ended when the drain did. (The
        engine lets a drain pass a pipe whose last instruction has not started yet; such a
        pipe is not waited for, and is no edge.)"""
        out = []
        for pipe, until in waited:
            i = last.get(pipe)
            lane = lanes[(core, pipe)]
            k = bisect_left(lane, i) if i is not None else -1
            stop = k - DRAIN_SEARCH
            while k >= 0 and k > stop and abs(self.end[lane[k]] - until) > 1e-6:
                k -= 1
            if k == stop:
                k = -1
            if k >= 0:
                out.append(lane[k])
        return out

    def _flags(self) -> None:
        """The n-th set of a (src, dst, id) on a core releases the n-th wait of it there."""
        sets, waits = defaultdict(list), defaultdict(list)
        inst, core = self.inst, self.core    # a flag's sets (waits) are all on one pipe
        for i, kind in enumerate(self.kind):
            if kind == "s" or kind == "Sset":
                sets[(core[i], inst[i].key)].append(i)
            elif kind == "w" or kind == "Swait":
                waits[(core[i], inst[i].key)].append(i)
        for key, ws in waits.items():
            ss = sets.get(key, [])
            if len(ss) < len(ws):
                raise NpusimError(f"dependency graph: {len(ws)} waits on flag {key[1]} of core "
                                  f"{key[0]} but {len(ss)} sets recorded")
            for w, s in zip(ws, ss, strict=False):
                self.match[w] = s

    def visible(self, i, s, e) -> float:
        """When a cross-core set becomes visible to its peers: at once on S, else at its end."""
        return s if self.pipe[i] == "S" else e

    def _cross(self, tracer) -> None:
        """The n-th cross-core set reaching a core (in the time it became visible) releases
        the n-th cross-core wait of that flag there."""
        sets, waits = defaultdict(list), defaultdict(list)
        for i in range(self.n):
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

    def _gm(self, tracer, lanes) -> None:
        """Link each GM exec record to its transfer and each transfer to the ones before it
        on the L2 server, the HBM server and its atomic range."""
        per_lane = defaultdict(list)
        for g, (core, pipe, *_rest) in enumerate(tracer.gm):
            per_lane[(core, pipe)].append(g)
        self.grec = [0] * len(tracer.gm)
        for key, gs in per_lane.items():
            recs = [i for i in lanes.get(key, ()) if self.kind[i] == "x"
                    and self.inst[i].touches_gm]
            for g, i in zip(gs, recs, strict=True):
                self.gm[i], self.grec[g] = g, i
        self.gl2 = [x[2] for x in tracer.gm]
        self.ghbm = [x[3] for x in tracer.gm]
        self.ghprev, self.gaprev = [-1] * len(tracer.gm), [-1] * len(tracer.gm)
        last_hbm, last_key = -1, {}
        for g, (*_head, hbm, key) in enumerate(tracer.gm):
            if hbm > 0:
                self.ghprev[g], last_hbm = last_hbm, g
            if key is not None:
                self.gaprev[g] = last_key.get(key, -1)
                last_key[key] = g

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
