"""The race detector as it was before its clocks were cut to groups of peers (npusim 3bec58c):
the reference that tests/test_sanitizer_equivalence.py holds ``npusim/engine/sanitizer.py`` to.

Plainly: one clock entry per pipe of the chip, every instruction a new epoch, the history of a
buffer per 64 KB page. Happens-before edges as in ``npusim/engine/sanitizer.py``: program order,
set -> wait, cross-core flags, PipeBarrier(ALL), SyncAll and issue (the scalar's own UB writes
excepted); an access covering an earlier entry ordered before it replaces that entry.
"""

from collections import deque

import numpy as np

from npusim.engine.memory import Buffer
from npusim.engine.race_message import raise_race

PAGE_SHIFT = 16   # the history is kept per 64 KB page: an access scans only its pages' entries


class Sanitizer:
    """Vector clocks of every pipe thread and the access history of every on-chip buffer."""

    def __init__(self, cores, recheck=None):   # recheck: the engine's program-order check
        self.tid: dict[tuple[int, str], int] = {}
        for core in cores:
            for pipe in core.pipes:
                self.tid[(core.index, pipe)] = len(self.tid)
        n = len(self.tid)
        self.vc = [np.zeros(n, np.int64) for _ in range(n)]
        self.names = {t: f"{cores[c].label} PIPE-{p}" for (c, p), t in self.tid.items()}
        self.core_tids = {c.index: [self.tid[(c.index, p)] for p in c.pipes] for c in cores}
        self.issue_clock = {c.index: np.zeros(n, np.int64) for c in cores}
        self.joined = [None] * n      # the issue clock each thread last joined
        self.history: dict = {}              # buffer -> page -> entries touching the page
        self.seq = 0                          # entries numbered in the order they are made
        self.flag_clocks: dict[tuple, deque] = {}
        self.counts: dict = {}
        self.thread_info = {t: (cores[c], p) for (c, p), t in self.tid.items()}
        self.recheck = recheck if all(hasattr(c, "stream") for c in cores) else None
        self.recheck_cores = cores

    # clocks ------------------------------------------------------------------------------------
    def _tick(self, core: int, pipe: str, issue_clock=None) -> int:
        t = self.tid[(core, pipe)]
        vc = self.vc[t]
        if issue_clock is not None and issue_clock is not self.joined[t]:
            np.maximum(vc, issue_clock, out=vc)
            self.joined[t] = issue_clock
        vc[t] += 1
        return t

    def on_set(self, core: int, pipe: str, key, issue_clock=None) -> None:
        t = self._tick(core, pipe, issue_clock)
        pending = self.flag_clocks.get((core, key))
        if pending is None:
            pending = self.flag_clocks[(core, key)] = deque()
        pending.append(self.vc[t].copy())

    def on_wait(self, core: int, pipe: str, key, issue_clock=None) -> None:
        t = self._tick(core, pipe, issue_clock)
        np.maximum(self.vc[t], self.flag_clocks[(core, key)].popleft(), out=self.vc[t])
        self._scalar_learned(core, pipe)

    def on_cross_set(self, core: int, pipe: str, peers, flag_id, issue_clock=None) -> None:
        t = self._tick(core, pipe, issue_clock)
        for peer in peers:
            self.flag_clocks.setdefault((peer, ("x", flag_id)), deque()).append(
                self.vc[t].copy())

    def on_cross_wait(self, core: int, pipe: str, flag_id, issue_clock=None) -> None:
        self.on_wait(core, pipe, ("x", flag_id), issue_clock)

    def on_drain(self, core: int) -> None:
        """PipeBarrier(ALL): the scalar has seen every pipe of the core go idle."""
        s = self.tid[(core, "S")]
        for t in self.core_tids[core]:
            np.maximum(self.vc[s], self.vc[t], out=self.vc[s])
        self._scalar_learned(core, "S")

    def on_sync_all(self, cores: list[int]) -> None:
        """SyncAll released: every scalar knows every clock of every core."""
        top = np.max(np.stack(self.vc), axis=0)
        for core in cores:
            s = self.tid[(core, "S")]
            np.maximum(self.vc[s], top, out=self.vc[s])
            self._scalar_learned(core, "S")

    def _scalar_learned(self, core: int, pipe: str) -> None:
        if pipe == "S":
            s = self.tid[(core, "S")]
            clock = self.vc[s].copy()
            clock[s] = 0   # the scalar's own writes are not ordered by issue
            self.issue_clock[core] = clock

    # accesses ----------------------------------------------------------------------------------
    def on_exec(self, core: int, pipe: str, inst, issue_clock=None) -> None:
        t = self._tick(core, pipe, issue_clock)
        vc = self.vc[t]
        epoch = vc.item(t)
        counts = self.counts.setdefault(t, {})
        counts[inst.name] = counts.get(inst.name, 0) + 1
        runs = (inst, counts[inst.name])    # the instruction and which run of its name
        for write, spans in ((False, inst.reads()), (True, inst.writes())):
            if len(spans) > 2:      # e.g. vnchwconv's 16 overlapping strided lists
                spans = _merged(spans)
            for store, lo, hi in spans:
                if hi > lo and type(store) is Buffer:
                    self._access(store, lo, hi, write, t, vc, epoch, runs)

    def _access(self, store, lo, hi, write, t, vc, epoch, inst) -> None:
        pages = self.history.get(store)
        if pages is None:
            pages = self.history[store] = {}
        first, last = lo >> PAGE_SHIFT, (hi - 1) >> PAGE_SHIFT
        if first == last:                   # one page: its list is already oldest first
            entries = pages.get(first)
            self.seq += 1
            entry = (self.seq, lo, hi, t, epoch, write, inst)
            if entries is None:             # nothing to check against
                pages[first] = [entry]
            else:
                self._scan_page(store, pages, first, entries, entry, vc)
            return
        else:
            found = {}
            for page in range(first, last + 1):
                for entry in pages.get(page, ()):
                    found[entry[0]] = entry
            entries = [found[seq] for seq in sorted(found)]
        dropped = None
        for entry in entries:               # oldest first, as one list in insertion order
            seq, e_lo, e_hi, e_t, e_epoch, e_write, e_inst = entry
            if e_hi <= lo or e_lo >= hi:
                continue
            if e_t != t and e_epoch > vc.item(e_t):     # not ordered before this access
                if write or e_write:
                    self._report(store, max(lo, e_lo), min(hi, e_hi), (e_t, e_inst, e_write),
                                 (t, inst, write))
            elif lo <= e_lo and e_hi <= hi and (write or not e_write):
                if dropped is None:         # covered: it lies on these pages only
                    dropped = set()
                dropped.add(seq)
        self.seq += 1
        entry = (self.seq, lo, hi, t, epoch, write, inst)
        for page in range(first, last + 1):
            kept = pages.get(page)
            if kept is None:
                pages[page] = [entry]
                continue
            if dropped:
                kept = pages[page] = [e for e in kept if e[0] not in dropped]
            kept.append(entry)

    def _scan_page(self, store, pages, page, entries, new, vc) -> None:
        """_access on one page: check ``new`` against the page's entries oldest first and keep
        those it does not cover, in the same pass."""
        _, lo, hi, t, _, write, inst = new
        kept = None                         # entries[:i] until the first covered one
        for i, entry in enumerate(entries):
            _, e_lo, e_hi, e_t, e_epoch, e_write, e_inst = entry
            if e_hi <= lo or e_lo >= hi:
                pass
            elif e_t != t and e_epoch > vc.item(e_t):   # not ordered before this access
                if write or e_write:
                    self._report(store, max(lo, e_lo), min(hi, e_hi), (e_t, e_inst, e_write),
                                 (t, inst, write))
            elif lo <= e_lo and e_hi <= hi and (write or not e_write):
                if kept is None:            # covered: dropped
                    kept = entries[:i]
                continue
            if kept is not None:
                kept.append(entry)
        if kept is None:
            entries.append(new)
        else:
            kept.append(new)
            pages[page] = kept

    def _report(self, store, lo, hi, first, second) -> None:
        (t1, (inst1, n1), w1), (t2, (inst2, n2), w2) = first, second
        raise_race(self, store, lo, hi, (t1, inst1, w1, n1), (t2, inst2, w2, n2))

    def finish(self) -> None:
        """Reads of bytes never written are not this reference's business."""


def _merged(spans) -> list:
    """One instruction's spans with those of one store that overlap or touch joined: the same
    bytes, so the same races, in fewer history entries (a later access then covers them).
    Stores keep the order they first appear in."""
    by_store: dict = {}
    for store, lo, hi in spans:
        by_store.setdefault(store, []).append((lo, hi))
    out: list = []
    for store, pieces in by_store.items():
        pieces.sort()
        lo, hi = pieces[0]
        for p_lo, p_hi in pieces[1:]:
            if p_lo <= hi:
                hi = max(hi, p_hi)
            else:
                out.append((store, lo, hi))
                lo, hi = p_lo, p_hi
        out.append((store, lo, hi))
    return out
