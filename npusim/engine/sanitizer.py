"""The race detector of the timed run: happens-before with vector clocks (as FastTrack does).

Every pipe of every core is a thread with a vector clock. Happens-before edges come only from
what orders pipes on the chip: program order inside a pipe; ``set_flag`` -> the ``wait_flag`` it
releases (the set's clock travels with the flag); cross-core flags; ``PipeBarrier(ALL)`` and
``SyncAll``, after which the scalar knows every drained pipe's clock; and issue: an instruction
cannot run before the scalar issued it, so it inherits what the scalar knew then. The scalar's
own UB writes (``set_value``) are not ordered by issue: as on the chip they need a flag.

Clocks are small. On-chip buffers belong to one core, and cores order each other only through
cross-core flags (between peers: one AIC and its AIVs) and ``SyncAll``. So the threads of each
group of peers (a connected component of ``core.peers``) keep clock entries for that group's
threads only, plus one entry counting the ``SyncAll``s they know of: an access of another group
(which no kernel here makes) is ordered before one of ours exactly when a ``SyncAll`` we know of
came after it. As in FastTrack, a thread's own entry (its epoch) moves on only after it
releases its clock (a set, a cross-core set, a drain or ``SyncAll`` that the scalar learns it
by): the accesses between two releases are ordered alike against every other thread.

Each on-chip buffer keeps a short list of recent accesses as byte intervals. An access races
with an earlier one on another thread when the intervals overlap, one of them writes, and the
earlier one does not happen-before it: a ``HazardError`` naming both instructions, their pipes
and the byte range. As in FastTrack, an access that covers an earlier entry which happens-before
it replaces that entry (a read replaces only earlier reads): any later access that would race
with the old entry races with the new one too, so the list stays as short as the buffers in
flight. The list is kept per segment of the buffer: the buffer is cut at the ends of every
entry (and joined again when one access leaves the same entries on many neighbouring segments),
and each segment lists the entries over it, so an access that matches a segment, as tiled
kernels' accesses do, looks only at the entries over its own bytes, oldest first (the cut sets
how much is scanned, never what is found). GM is not checked (cores reach GM through atomics
or SyncAll by design of the kernels here).
"""

from bisect import bisect_left, bisect_right
from collections import deque
from functools import cache

from npusim.engine.memory import Buffer
from npusim.engine.race_message import raise_race
from npusim.engine.unwritten import UNCHECKED, Unwritten

_END = 1 << 62    # past the end of every buffer
JOIN_AT = 8       # an access over more segments than this joins them when it can
BLOCK = 32        # a move from GM writes on-chip memory in whole 32-byte blocks (unwritten.py)


class _Segments(dict):
    """One buffer's history: start -> the entries overlapping the segment [start, end), oldest
    first. Segments split at every entry's ends (so an entry covers each segment it overlaps)
    and join again when one access leaves the same entries on all of them. ``group`` is the
    group of peers whose threads made every entry (None once two groups touched the buffer)."""

    __slots__ = ("group", "ends", "bounds")

    def __init__(self, group):
        super().__init__({0: []})
        self.group = group
        self.ends = {0: _END}             # start -> end
        self.bounds = [0, _END]           # every start, and _END

    def covering(self, lo: int, hi: int) -> list[int]:
        """The starts of the segments that make up [lo, hi), splitting those that stick out."""
        bounds = self.bounds
        i = bisect_right(bounds, lo) - 1
        if bounds[i] != lo:
            self._split(i, lo)
            i += 1
        j = bisect_left(bounds, hi, i)
        if bounds[j] != hi:
            self._split(j - 1, hi)
        return bounds[i:j]

    def _split(self, i: int, at: int) -> None:
        start = self.bounds[i]
        self.bounds.insert(i + 1, at)
        self.ends[at], self.ends[start] = self.ends[start], at
        self[at] = list(self[start])

    def join(self, starts: list[int]) -> None:
        """Make the adjacent segments ``starts`` one when they hold the same entries."""
        if len(starts) < 2:
            return
        seqs = [e[0] for e in self[starts[0]]]
        if any([e[0] for e in self[s]] != seqs for s in starts[1:]):
            return
        i = bisect_left(self.bounds, starts[1])
        del self.bounds[i:i + len(starts) - 1]
        self.ends[starts[0]] = self.ends[starts[-1]]
        for s in starts[1:]:
            del self[s], self.ends[s]


class Sanitizer:
    """Vector clocks of every pipe thread and the access history of every on-chip buffer.

    A history entry is ``(seq, lo, hi, slot, epoch, write, inst, thread)``: ``slot`` is the
    thread's entry in its group's clocks, ``seq`` numbers entries in the order they are made."""

    def __init__(self, cores, recheck=None):
        self.tid: dict[tuple[int, str], int] = {}
        self.group: list[int] = []        # thread -> its group of peers
        self.slot: list[int] = []         # thread -> its entry in the group's clocks (0: SyncAll)
        self.group_tids: list[list[int]] = []
        for g, members in enumerate(_peer_groups(cores)):
            tids = []
            for core in members:
                for pipe in core.pipes:
                    self.tid[(core.index, pipe)] = t = len(self.tid)
                    self.group.append(g)
                    self.slot.append(len(tids) + 1)
                    tids.append(t)
            self.group_tids.append(tids)
        self.vc = [[0] * (len(self.group_tids[g]) + 1) for g in self.group]
        for t, vc in enumerate(self.vc):
            vc[self.slot[t]] = 1          # the first epoch; 0 means "knows nothing of it"
        self.names = {self.tid[(c.index, p)]: f"{c.label} PIPE-{p}" for c in cores for p in c.pipes}
        self.core_tids = {c.index: [self.tid[(c.index, p)] for p in c.pipes] for c in cores}
        self.issue_clock = {c.index: [0] * len(self.vc[self.core_tids[c.index][0]])
                            for c in cores if c.pipes}
        self.joined = [None] * len(self.vc)   # the issue clock each thread last joined
        self.join = [_joiner(len(vc)) for vc in self.vc]   # each thread's clock join
        self.history: dict = {}              # buffer -> _Segments
        self.seq = 0                          # entries numbered in the order they are made
        self.sync_seqs = [0]                  # seq reached when each SyncAll was released
        self.flag_clocks: dict[tuple, deque] = {}
        self.counts = [{} for _ in self.vc]   # thread -> instruction name -> runs so far
        self.thread_info = {self.tid[(c.index, p)]: (c, p) for c in cores for p in c.pipes}
        self.written = Unwritten()
        # the program-order check to ask about a race (race_message.raise_race): a function of
        # the cores (race_order.first_race), given by the timed run; None in that check itself
        self.recheck = recheck if recheck and all(hasattr(c, "stream") for c in cores) else None
        self.recheck_cores = cores

    # clocks ------------------------------------------------------------------------------------
    def _join_issue(self, t: int, issue_clock) -> list:
        """Thread ``t`` learns the issue clock its instruction was issued under."""
        vc = self.vc[t] = self.join[t](self.vc[t], issue_clock)
        self.joined[t] = issue_clock
        return vc

    def _clock(self, core: int, pipe: str, issue_clock) -> tuple[int, list]:
        t = self.tid[(core, pipe)]
        if issue_clock is not None and issue_clock is not self.joined[t]:
            return t, self._join_issue(t, issue_clock)
        return t, self.vc[t]

    def on_set(self, core: int, pipe: str, key, issue_clock=None) -> None:
        t = self.tid[(core, pipe)]
        vc = self.vc[t]
        if issue_clock is not None and issue_clock is not self.joined[t]:
            vc = self._join_issue(t, issue_clock)
        pending = self.flag_clocks.get((core, key))
        if pending is None:
            pending = self.flag_clocks[(core, key)] = deque()
        pending.append(tuple(vc))
        vc[self.slot[t]] += 1             # released: later accesses are a new epoch

    def on_wait(self, core: int, pipe: str, key, issue_clock=None) -> None:
        t = self.tid[(core, pipe)]
        vc = self.vc[t]
        if issue_clock is not None and issue_clock is not self.joined[t]:
            vc = self._join_issue(t, issue_clock)
        self.vc[t] = self.join[t](vc, self.flag_clocks[(core, key)].popleft())
        if pipe == "S":
            self._scalar_learned(core)

    def on_cross_set(self, core: int, pipe: str, peers, flag_id, issue_clock=None) -> None:
        t, vc = self._clock(core, pipe, issue_clock)
        clock = tuple(vc)
        for peer in peers:
            self.flag_clocks.setdefault((peer, ("x", flag_id)), deque()).append(clock)
        vc[self.slot[t]] += 1

    def on_cross_wait(self, core: int, pipe: str, flag_id, issue_clock=None) -> None:
        self.on_wait(core, pipe, ("x", flag_id), issue_clock)

    def on_drain(self, core: int) -> None:
        """PipeBarrier(ALL): the scalar has seen every pipe of the core go idle."""
        s = self.tid[(core, "S")]
        vc, slot = self.vc, self.slot
        for t in self.core_tids[core]:
            vc[s] = self.join[s](vc[s], vc[t])
        for t in self.core_tids[core]:
            if t != s:
                vc[t][slot[t]] += 1
        self._scalar_learned(core)

    def on_sync_all(self, cores: list[int]) -> None:
        """SyncAll released: every scalar knows every clock of every core (of its group: no
        other can order its buffers' accesses) and that this SyncAll came."""
        self.sync_seqs.append(self.seq)
        scalars = {self.tid[(core, "S")] for core in cores}
        vc, slot = self.vc, self.slot
        for tids in self.group_tids:
            top = vc[tids[0]]
            for t in tids[1:]:
                top = self.join[t](top, vc[t])
            top = list(top)
            top[0] = len(self.sync_seqs) - 1
            for t in tids:
                if t in scalars:
                    vc[t] = list(top)
            for t in tids:
                vc[t][slot[t]] += 1
        for core in cores:
            self._scalar_learned(core)

    def _scalar_learned(self, core: int) -> None:
        s = self.tid[(core, "S")]
        clock = list(self.vc[s])
        clock[self.slot[s]] = 0   # the scalar's own writes are not ordered by issue
        self.issue_clock[core] = clock

    def _ordered(self, entry, t: int, vc) -> bool:
        """Whether the access ``entry`` happens-before thread ``t``'s access at clock ``vc``."""
        e_t = entry[7]
        if e_t == t:
            return True
        if self.group[e_t] == self.group[t]:
            return entry[4] <= vc[entry[3]]
        return entry[0] <= self.sync_seqs[vc[0]]   # another group: a SyncAll t knows of

    # accesses ----------------------------------------------------------------------------------
    def on_exec(self, core: int, pipe: str, inst, issue_clock=None) -> None:
        t = self.tid[(core, pipe)]
        vc = self.vc[t]
        if issue_clock is not None and issue_clock is not self.joined[t]:
            vc = self._join_issue(t, issue_clock)
        counts = self.counts[t]
        n = counts[inst.name] = counts.get(inst.name, 0) + 1
        spans = inst.reads()
        if spans:
            if len(spans) > 2:      # e.g. vnchwconv's 16 overlapping strided lists
                spans = _merged(spans)
            for store, lo, hi in spans:
                if hi > lo and type(store) is Buffer:
                    self._access(store, lo, hi, False, t, vc, inst, n)
                    if inst.name not in UNCHECKED and not inst.checks_data:
                        self.written.check(store, lo, hi, t, inst, n)
        spans = inst.writes()
        if len(spans) > 2:
            spans = _merged(spans)
        for store, lo, hi in spans:
            if hi > lo and type(store) is Buffer:
                self._access(store, lo, hi, True, t, vc, inst, n)
                self.written.add(store, lo, -(-hi // BLOCK) * BLOCK if inst.touches_gm else hi)

    def _access(self, store, lo, hi, write, t, vc, inst, n) -> None:
        segs = self.history.get(store)
        if segs is None:
            segs = self.history[store] = _Segments(self.group[t])
        slot = self.slot[t]
        self.seq = seq = self.seq + 1
        new = (seq, lo, hi, slot, vc[slot], write, inst, t, n)
        if segs.ends.get(lo) != hi or segs.group != self.group[t]:
            starts = segs.covering(lo, hi)
            if len(starts) > 1 or segs.group != self.group[t]:
                self._access_wide(store, segs, new, vc, starts)
                return
        entries = segs[lo]                  # one segment, exactly [lo, hi): all overlap it
        for i, entry in enumerate(entries):  # oldest first
            if entry[3] != slot and entry[4] > vc[entry[3]]:   # not ordered before this access
                if write or entry[5]:
                    self._report(store, max(lo, entry[1]), min(hi, entry[2]),
                                 (entry[7], entry[6], entry[5], entry[8]), (t, inst, write, n))
            elif entry[1] == lo and entry[2] == hi and (write or not entry[5]):   # covered
                if i == len(entries) - 1:
                    entries[i] = new        # dropped, and the new entry goes last
                else:
                    segs[lo] = self._covered(store, entries, i, new, vc)
                return
        entries.append(new)

    def _covered(self, store, entries, i, new, vc) -> list:
        """The rest of _access once ``entries[i]`` is found covered: the entries kept, then
        ``new``."""
        _, lo, hi, slot, _, write, inst, t, n = new
        kept = entries[:i]
        for entry in entries[i + 1:]:
            if entry[3] != slot and entry[4] > vc[entry[3]]:
                if write or entry[5]:
                    self._report(store, max(lo, entry[1]), min(hi, entry[2]),
                                 (entry[7], entry[6], entry[5], entry[8]), (t, inst, write, n))
            elif entry[1] == lo and entry[2] == hi and (write or not entry[5]):
                continue
            kept.append(entry)
        kept.append(new)
        return kept

    def _access_wide(self, store, segs, new, vc, starts) -> None:
        """_access across segments, or on a buffer that two groups of peers touched."""
        seq, lo, hi, _, _, write, inst, t, n = new
        if segs.group != self.group[t]:
            segs.group = None               # from now on every access takes this path
        found = {}
        for start in starts:
            for entry in segs[start]:
                found[entry[0]] = entry
        dropped = None
        for e_seq in sorted(found):         # oldest first; each overlaps [lo, hi)
            entry = found[e_seq]
            e_lo, e_hi, e_write = entry[1], entry[2], entry[5]
            if not self._ordered(entry, t, vc):
                if write or e_write:
                    self._report(store, max(lo, e_lo), min(hi, e_hi),
                                 (entry[7], entry[6], e_write, entry[8]), (t, inst, write, n))
            elif lo <= e_lo and e_hi <= hi and (write or not e_write):
                if dropped is None:         # covered: it lies in these segments only
                    dropped = set()
                dropped.add(e_seq)
        for start in starts:
            kept = segs[start]
            if dropped:
                kept = segs[start] = [e for e in kept if e[0] not in dropped]
            kept.append(new)
        if len(starts) > JOIN_AT:
            segs.join(starts)

    def _report(self, store, lo, hi, first, second) -> None:
        raise_race(self, store, lo, hi, first, second)

    def finish(self) -> None:
        """At the end of the run: a read of on-chip bytes that nothing wrote before it (and
        that no later write raced with) is a finding (``npusim/engine/unwritten.py``)."""
        self.written.finish(self.names)


@cache
def _joiner(n: int):
    """The element-wise maximum of two n-entry clocks, as a new list: a function written out
    for n (clocks are short; this runs at every wait and is several times faster than
    ``list(map(max, a, b))`` or a comprehension)."""
    if n > 64:
        return lambda a, b: [x if x > y else y for x, y in zip(a, b, strict=True)]
    a = ", ".join(f"a{i}" for i in range(n))
    b = ", ".join(f"b{i}" for i in range(n))
    body = ", ".join(f"a{i} if a{i} > b{i} else b{i}" for i in range(n))
    scope: dict = {}
    exec(f"def join(a, b):\n    {a}, = a\n    {b}, = b\n    return [{body}]\n", scope)
    return scope["join"]


def _peer_groups(cores) -> list[list]:
    """The cores in groups that cross-core flags connect (connected components of peers)."""
    near: dict = {core.index: set() for core in cores}
    for core in cores:
        for peer in getattr(core, "peers", ()):
            j = getattr(peer, "index", peer)
            near[core.index].add(j)
            near.setdefault(j, set()).add(core.index)
    by_index = {core.index: core for core in cores}
    seen, groups = set(), []
    for core in cores:
        if core.index in seen:
            continue
        seen.add(core.index)
        group, todo = [], [core.index]
        while todo:
            i = todo.pop()
            group.append(i)
            for j in near.get(i, ()):
                if j not in seen and j in by_index:
                    seen.add(j)
                    todo.append(j)
        groups.append([by_index[i] for i in sorted(group)])
    return groups


def _merged(spans) -> list:
    """One instruction's spans with those of one store that overlap or touch joined: the same
    bytes, so the same races, in fewer history entries (a later access then covers them).
    Stores keep the order they first appear in."""
    try:
        ordered = sorted(spans)     # one store (two distinct buffers do not compare)
    except TypeError:
        ordered = None
    if ordered:
        return _joined(ordered, [])
    by_store: dict = {}
    for span in spans:
        by_store.setdefault(span[0], []).append(span)
    out: list = []
    for pieces in by_store.values():
        pieces.sort()
        _joined(pieces, out)
    return out


def _joined(pieces, out: list) -> list:
    """Append to ``out`` the sorted spans ``pieces`` of one store, overlapping ones joined."""
    store, lo, hi = pieces[0]
    for _, p_lo, p_hi in pieces[1:]:
        if p_lo <= hi:
            if p_hi > hi:
                hi = p_hi
        else:
            out.append((store, lo, hi))
            lo, hi = p_lo, p_hi
    out.append((store, lo, hi))
    return out
