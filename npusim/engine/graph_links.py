"""The dependency graph's links, computed a column at a time (numpy) rather than a record at a
time: a batch-256 kernel has millions of records, and a Python pass per link kind took longer
than walking the path.

Each function fills arrays of ``npusim/engine/depgraph.py``'s ``RunGraph`` (whose docstring
says what each link means) from the run's columns; ``tests/test_critical_path.py`` holds the
result, on every kernel of ``tests/test_every_kernel.py``, to a record-by-record construction
written out in ``tests/graph_reference.py``. The few records whose links need the run's order
one by one (barriers, SyncAll rounds, cross-core flags, atomic ranges) are still walked in
Python.
"""

from array import array
from collections import defaultdict, deque
from itertools import count
from operator import itemgetter

import numpy as np

from npusim.errors import NpusimError

DRAIN_SEARCH = 64       # instructions back from a barrier searched for the one it waited for


def int_array(values) -> array:
    """An ``array('q')`` of ``values`` (a numpy array or a sequence of ints)."""
    out = array("q")
    out.frombytes(np.ascontiguousarray(values, dtype=np.int64).tobytes())
    return out


def float_array(values) -> array:
    out = array("d")
    out.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
    return out


class Lanes:
    """The records of each (core, pipe) in record order: ``order[first[g]:first[g + 1]]`` are
    lane ``g``'s; ``code[(core, pipe)]`` and ``by_id[core * len(names) + pipe's place]`` are
    its ``g``."""

    def __init__(self, core: np.ndarray, pipe_code: np.ndarray, names: tuple):
        n, width = len(core), len(names)
        lane = core * width + pipe_code
        self.order = np.argsort(lane, kind="stable")
        ids = lane[self.order]
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if n else np.zeros(0, int)
        self.first = np.r_[starts, n]
        self.group = np.repeat(np.arange(len(starts)), np.diff(self.first))
        self.by_id = {i: g for g, i in enumerate(ids[starts].tolist())}
        self.code = {(i // width, names[i % width]): g for i, g in self.by_id.items()}
        self.is_scalar = np.array([names[i % width] == "S" for i in self.by_id], bool)

    def records(self, g: int) -> np.ndarray:
        return self.order[self.first[g]:self.first[g + 1]]


def pipe_links(lanes: Lanes, is_exec: np.ndarray) -> tuple:
    """(pprev, pexec): per record the previous record on its pipe and the previous exec
    record there (-1: none, and always on the scalar's S lane)."""
    n = len(is_exec)
    order, group = lanes.order, lanes.group
    first = np.r_[True, group[1:] != group[:-1]] if n else np.zeros(0, bool)
    prev = np.r_[-1, order[:-1]] if n else np.zeros(0, np.int64)
    prev[first] = -1
    span = n + 1                        # per group: group * span + (record + 1), then a max scan
    base = group * span
    key = base + np.where(is_exec[order], order + 1, 0)
    scan = np.maximum.accumulate(key) if n else key
    last = np.r_[0, scan[:-1]] if n else scan
    last[first] = base[first]
    pexec_sorted = last - base - 1
    scalar = lanes.is_scalar[group] if n else np.zeros(0, bool)
    prev[scalar] = -1
    pexec_sorted[scalar] = -1
    pprev, pexec = np.empty(n, np.int64), np.empty(n, np.int64)
    pprev[order], pexec[order] = prev, pexec_sorted
    return pprev, pexec


class Stream:
    """Each core's records in stream order: by issue, a pipe's before the scalar's at one
    cycle, then by record; the cores in the order they first appear. ``order`` holds them
    core after core, ``rank[i]`` is record i's place in it, ``ends[k]`` core k's last."""

    def __init__(self, core: np.ndarray, issue: np.ndarray, scalar: np.ndarray):
        n = len(core)
        ids, firsts = np.unique(core, return_index=True)
        by_first = ids[np.argsort(firsts)]
        self.cores = by_first.tolist()
        crank = np.zeros(n, np.int64)
        if n:
            rank_of = np.zeros(int(ids[-1]) - int(ids[0]) + 1, np.int64)
            rank_of[by_first - ids[0]] = np.arange(len(by_first))
            crank = rank_of[core - ids[0]]
        self.order = np.lexsort((np.arange(n), scalar, issue, crank))
        self.rank = np.empty(n, np.int64)
        self.rank[self.order] = np.arange(n)
        by_core = crank[self.order]
        self.starts = np.flatnonzero(np.r_[True, by_core[1:] != by_core[:-1]]) if n else \
            np.zeros(0, np.int64)
        self.ends = np.r_[self.starts[1:], n] - 1


def chain_links(stream: Stream, issue, end, scalar, ready) -> tuple:
    """(cprev, cost, out after each record in stream order): the scalar's issue chain of each
    core. ``ready``: the cycle a stalled issue was ready (NaN where none)."""
    n = len(issue)
    order = stream.order
    out = np.where(scalar, end, issue)[order]
    prev_out = np.r_[0.0, out[:-1]] if n else out
    prev = np.r_[-1, order[:-1]] if n else order.copy()
    prev_out[stream.starts] = 0.0
    prev[stream.starts] = -1
    base = np.where(np.isnan(ready), issue, ready)[order]
    cprev, cost = np.empty(n, np.int64), np.empty(n, np.float64)
    cprev[order] = prev
    cost[order] = base - prev_out
    return cprev, cost, out


def stall_links(tracer, lanes: Lanes, lane_code, issue: np.ndarray, depth: int) -> tuple:
    """(ready, pop, pop_at): an issue the scalar made when its pipe popped an entry of a full
    queue (``Tracer.stalls``: core, pipe, issue, cycle it was ready) was released by the record
    ``depth + 1`` places before it on that pipe (-2: before the run's first; -1: not
    stalled)."""
    n = len(issue)
    ready, pop = np.full(n, np.nan), np.full(n, -1, np.int64)
    if tracer.stalls:
        rows = tracer.stalls
        lane = lane_code(rows)
        at = np.fromiter(map(itemgetter(2), rows), np.float64, len(rows))
        when = np.fromiter(map(itemgetter(3), rows), np.float64, len(rows))
        order = np.lexsort((np.arange(len(lane)), at, lane))     # a repeated key: the last
        lane, at, when = lane[order], at[order], when[order]
        last = np.r_[(lane[1:] != lane[:-1]) | (at[1:] != at[:-1]), True]
        lane, at, when = lane[last], at[last], when[last]
        for lane_id in np.unique(lane).tolist():
            g = lanes.by_id.get(lane_id)
            if g is None or lanes.is_scalar[g]:
                continue
            lo, hi = np.searchsorted(lane, [lane_id, lane_id + 1])
            _stalled_on(lanes.records(g), at[lo:hi], when[lo:hi], issue, depth, ready, pop)
    stalled = np.flatnonzero(pop != -1)
    return ready, pop, dict(zip(stalled.tolist(), issue[stalled].tolist(), strict=True))


def _stalled_on(recs, ts, whens, issue, depth: int, ready, pop) -> None:
    """Mark the records of one lane (``recs``) issued at a stall's cycle (``ts``, sorted)."""
    mine = issue[recs]
    k = np.minimum(np.searchsorted(ts, mine), len(ts) - 1)
    hit = ts[k] == mine
    stalled = recs[hit]
    ready[stalled] = whens[k[hit]]
    q = np.flatnonzero(hit) - depth - 1
    pop[stalled] = np.where(q >= 0, recs[np.maximum(q, 0)], -2)


def drain_links(tracer, stream: Stream, lanes: Lanes, kind: list, marks, core: list,
                end: list):
    """(drains, rounds): for each barrier and SyncAll on the scalar, the records whose end let
    its drain go (of each pipe the run waited for, the latest instruction issued before it
    that ended when the drain did: the engine lets a drain pass a pipe whose last instruction
    has not started yet, and such a pipe is no edge), and the records of each SyncAll round.
    ``marks``: the barrier and SyncAll records."""
    drained = defaultdict(deque)
    for c, waited in tracer.drains:
        drained[c].append(waited)
    drains, syncs, rounds, ranks = {}, defaultdict(int), defaultdict(list), {}
    for i in marks[np.argsort(stream.rank[marks])].tolist():
        c = core[i]
        waited = drained[c].popleft() if drained[c] else []
        out = []
        for pipe, until in waited:
            g = lanes.code.get((c, pipe)) if pipe != "S" else None
            k = _last_before(lanes, g, stream, ranks, int(stream.rank[i])) if g is not None \
                else -1
            lane = lanes.records(g) if g is not None else ()
            stop = k - DRAIN_SEARCH
            while k >= 0 and k > stop and abs(end[lane[k]] - until) > 1e-6:
                k -= 1
            if k >= 0 and k != stop:
                out.append(int(lane[k]))
        drains[i] = out
        if kind[i] == "Ssyncall":
            rounds[syncs[c]].append(i)
            syncs[c] += 1
    return drains, {i: members for members in rounds.values() for i in members}


def _last_before(lanes: Lanes, g: int, stream: Stream, cache: dict, rank: int) -> int:
    """The place in lane ``g`` of its last record before stream place ``rank`` (-1: none)."""
    ranks = cache.get(g)
    if ranks is None:
        ranks = cache[g] = stream.rank[lanes.records(g)]
        cache[(g, "sorted")] = bool(np.all(ranks[1:] > ranks[:-1]))
    if cache[(g, "sorted")]:
        return int(np.searchsorted(ranks, rank)) - 1
    before = np.flatnonzero(ranks < rank)        # a lane out of stream order: search it all
    return int(before[np.argmax(ranks[before])]) if len(before) else -1


def flag_links(sets: np.ndarray, waits: np.ndarray, insts: list, core: np.ndarray,
               n: int) -> np.ndarray:
    """match: the n-th set of a (src, dst, id) on a core releases the n-th wait of it there
    (``sets``, ``waits``: the set_flag and wait_flag records, ascending)."""
    code, keys = _flag_codes(np.r_[sets, waits], insts, core)
    scode, wcode = code[:len(sets)], code[len(sets):]
    skey, sidx = _ranked(scode, sets, n)
    wkey, widx = _ranked(wcode, waits, n)
    k = np.minimum(np.searchsorted(skey, wkey), max(len(skey) - 1, 0))
    found = skey[k] == wkey if len(skey) else np.zeros(len(wkey), bool)
    if not found.all():
        _missing_sets(scode, wcode, keys)
    match = np.full(n, -1, np.int64)
    match[widx] = sidx[k]
    return match


def _flag_codes(idx: np.ndarray, insts: list, core: np.ndarray) -> tuple:
    """(a code per record of ``idx`` for its (core, flag key), equal for equal pairs; the
    distinct keys, a code being core * len(keys) + the key's place). A kernel issues a few
    flag objects many times: each object's key is read once."""
    objects = {}     # id -> the place of the object's first record (count() runs with idx)
    first = np.fromiter(map(objects.setdefault, map(id, map(insts.__getitem__, idx.tolist())),
                            count()), np.int64, len(idx))
    keys, key_at = {}, np.zeros(len(idx), np.int64)
    for j in objects.values():
        key_at[j] = keys.setdefault(insts[int(idx[j])].key, len(keys))
    return core[idx] * max(len(keys), 1) + key_at[first], list(keys)


def _ranked(code: np.ndarray, idx: np.ndarray, n: int) -> tuple:
    """(code * (n + 1) + place among the records of that code, sorted; their records)."""
    order = np.argsort(code, kind="stable")
    sorted_code = code[order]
    starts = np.flatnonzero(np.r_[True, sorted_code[1:] != sorted_code[:-1]]) \
        if len(code) else np.zeros(0, np.int64)
    first = np.repeat(starts, np.diff(np.r_[starts, len(code)]))
    return sorted_code * (n + 1) + (np.arange(len(code)) - first), idx[order]


def _missing_sets(scode, wcode, keys: list) -> None:
    """Raise for the first flag (in the order its waits appear) with more waits than sets."""
    size = int(max(scode.max(initial=0), wcode.max(initial=0))) + 1
    sets_of, waits_of = np.bincount(scode, minlength=size), np.bincount(wcode, minlength=size)
    seen = set()
    for c in wcode.tolist():
        if c not in seen and waits_of[c] > sets_of[c]:
            core, key = divmod(c, max(len(keys), 1))
            raise NpusimError(f"dependency graph: {waits_of[c]} waits on flag {keys[key]} of "
                              f"core {core} but {sets_of[c]} sets recorded")
        seen.add(c)


def gm_links(tracer, lane_id: np.ndarray, is_move: np.ndarray, lane_code, n: int) -> tuple:
    """(gm, grec): each GM exec record's transfer and each transfer's record, matched in order
    on their (core, pipe)."""
    g_lane = lane_code(tracer.gm)
    recs = np.flatnonzero(is_move)
    recs = recs[np.argsort(lane_id[recs], kind="stable")]
    gs = np.argsort(g_lane, kind="stable")
    if not np.array_equal(lane_id[recs], g_lane[gs]):
        raise NpusimError("dependency graph: the run's GM transfers do not match its GM "
                          "instructions pipe by pipe")
    gm, grec = np.full(n, -1, np.int64), np.zeros(len(g_lane), np.int64)
    gm[recs], grec[gs] = gs, recs
    return gm, grec


def server_links(tracer) -> tuple:
    """(ghprev, gaprev): per transfer the previous one on the HBM server (only those that
    reached HBM) and the previous atomic add into its range."""
    hbm = np.array([x[3] for x in tracer.gm], np.float64)
    ghprev = np.full(len(hbm), -1, np.int64)
    on = np.flatnonzero(hbm > 0)
    ghprev[on[1:]] = on[:-1]
    gaprev, last_key = np.full(len(hbm), -1, np.int64), {}
    for g, (*_head, key) in enumerate(tracer.gm):
        if key is not None:
            gaprev[g] = last_key.get(key, -1)
            last_key[key] = g
    return ghprev, gaprev
