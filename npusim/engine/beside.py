"""A timed launch's numerics in program order, in a forked process beside the timing run.

Outputs do not depend on timing when three things hold, and then the instructions' ``execute``
can run in program order (the functional run's order, ``npusim/engine/functional.py``) in a child
process while the parent runs the SimPy timing with ``numerics=False``; the two overlap on a
host with a second core:

1. **On-chip order.** The launch is race-free: every conflicting pair of on-chip accesses is
   ordered by happens-before, which program order respects. The child decides it first, in
   program order (``npusim/engine/race_order.py``); where that cannot decide (cross-core flags,
   SyncAll) the detector stays in the timing run, and with the detector off such a launch
   does not go beside. Any other verdict than race-free, and the launch runs again with
   numerics (and the detector, if on) in the timing run, which raises the HazardError, or,
   detector off, gives the outputs its timing gives.
2. **GM order.** No GM byte one instruction writes is read in the launch, no GM byte is
   written by two cores or two pipes, and the atomic adds touch no byte that other
   instructions read or write (checked block by block from each move's GM geometry, the
   bytes the bandwidth model charges; scalar GM accesses by their ranges).
3. **Atomic adds in simulated time.** Floating-point adds into the same bytes depend on their
   order, which follows simulated time: the numerics keep each atomic add's source bytes, the
   timing run logs the order it reached them in, and the parent applies them in that order.

GM is shared memory (``GlobalMemory`` reserves it with ``MAP_SHARED``), so the child writes
the parent's GM; on-chip buffers are each process's own. Cores that do not synchronise with
each other are independent, and once its timing run is over the parent takes cores too (see
``Beside``). Should a numerics pass fail (a ``wait_flag`` before its ``set_flag`` in program
order is legal on the chip but deadlocks the functional order; an error from ``execute``),
``finish`` says so before any atomic add and the caller runs the launch again with numerics in
the timing run: the GM the launch reads was not written, and what it writes is written again.
Gather, whose ``execute`` checks data (``checks_data``), never goes beside.

Used only where it can pay: Linux, ``os.fork``, no other Python thread, a launch of at least
``MIN_INSTRUCTIONS`` entries; ``NPUSIM_BESIDE=0`` in the environment turns it off.
"""

import os
import pickle
import signal
import sys
import threading
from collections import deque

import numpy as np

from npusim.engine import race_order
from npusim.engine.functional import run_functional
from npusim.engine.memory import GlobalMemory
from npusim.errors import NpusimError

MIN_INSTRUCTIONS = 4096   # a fork costs a few milliseconds; numerics about 5 us an instruction


def start(specs: list, gm, sanitize: bool) -> "Beside | None":
    """Fork the numerics of the recorded launch ``specs``, and its race check, into a child
    process; None when the launch or the host does not allow it (the caller then runs numerics
    and the race detector in the timing run). With the detector off (``sanitize`` False) the
    child still checks, quietly: a racy launch's outputs follow its timing, so it runs again
    with numerics in the run, and one the check cannot decide stays there."""
    if not (gm.shared and worth_forking(specs)):
        return None
    types = race_order.stream_types(specs)
    decidable = race_order.decidable(specs, types)
    if (not sanitize and not decidable) or any(getattr(t, "checks_data", False) for t in types):
        return None
    # no core synchronises with another: the child checks GM (it seldom refuses)
    independent = not (any(s.peers for s in specs) or any(t.kind == "syncall" for t in types))
    if not independent and not gm_safe(specs):
        return None
    try:
        return Beside(specs, atomic_adds(specs), gm, independent, decidable)
    except _NoFork:
        return None


def atomic_adds(specs: list) -> dict:
    """The launch's atomic-add instructions by id."""
    found = {}
    for spec in specs:
        kinds = {t for t in set(map(type, spec.stream))
                 if "atomic" in getattr(t, "__dataclass_fields__", ())}
        if kinds:
            for inst in dict(zip(map(id, spec.stream), spec.stream, strict=True)).values():
                if type(inst) in kinds and inst.atomic:
                    found[id(inst)] = inst
    return found


def start_checker(specs: list) -> "Checker | None":
    """Fork the race check of a launch whose timing run has no numerics; None when the host or
    the launch's size does not allow it."""
    if not (worth_forking(specs) and race_order.decidable(specs)):
        return None
    try:
        return Checker(specs)
    except _NoFork:
        return None


def worth_forking(specs: list) -> bool:
    """Linux, ``os.fork``, no other Python thread, NPUSIM_BESIDE not 0, and a launch of at
    least MIN_INSTRUCTIONS entries."""
    return (sys.platform.startswith("linux") and hasattr(os, "fork")
            and threading.active_count() == 1 and os.environ.get("NPUSIM_BESIDE", "1") != "0"
            and sum(len(s.stream) for s in specs) >= MIN_INSTRUCTIONS)


def gm_safe(specs: list) -> bool:
    """Whether the launch's GM accesses satisfy rule 2 of the module docstring."""
    ranges = {"read": [], "write": [], "atomic": []}    # (lo, hi, group) arrays
    groups: dict = {}
    for core, spec in enumerate(specs):
        movers = {t for t in set(map(type, spec.stream)) if (t.kind == "exec" and t.touches_gm)
                  or t.kind in ("scalar_read", "scalar_write")}
        unique = dict(zip(map(id, spec.stream), spec.stream, strict=True)).values()
        for inst in unique if movers else ():    # a re-issued object has the same ranges
            if type(inst) in movers:
                _gm_ranges(inst, ranges, groups.setdefault((core, inst.pipe), len(groups)))
    reads, writes, atomics = (_stack(ranges[k]) for k in ("read", "write", "atomic"))
    return not (_overlap(writes, reads) or _overlap(atomics, np.concatenate([reads, writes]))
                or _shared(writes))


def _gm_ranges(inst, ranges: dict, group: int) -> None:
    """Add the GM bytes ``inst`` reads or writes to ``ranges`` ((lo, hi, group) tuples, or
    arrays of a strided move's blocks), block by block for a move (its GM-side geometry),
    whole spans for a scalar access."""
    if inst.kind != "exec":
        for what, spans in (("read", inst.reads()), ("write", inst.writes())):
            ranges[what] += [(lo, hi, group) for store, lo, hi in spans
                             if type(store) is GlobalMemory]
        return
    what = ("atomic" if getattr(inst, "atomic", False) else "write") if inst.gm_write else "read"
    out = ranges[what]
    for addr, count, length, stride in inst.gm_blocks():
        if count <= 0 or length <= 0:
            continue
        if count == 1 or stride == length:
            out.append((addr, addr + (count - 1) * stride + length, group))
        else:
            lo = addr + stride * np.arange(count, dtype=np.int64)
            out.append(np.stack([lo, lo + length, np.full(count, group, np.int64)], axis=1))


def _stack(parts: list) -> np.ndarray:
    """(n, 3) rows of lo, hi, group from ``_gm_ranges``' tuples and arrays."""
    rows = [p for p in parts if type(p) is tuple]
    blocks = [p for p in parts if type(p) is not tuple]
    return np.concatenate([np.array(rows, np.int64).reshape(-1, 3), *blocks])


def _merged(rows: np.ndarray) -> np.ndarray:
    """Sorted, merged [lo, hi) ranges of ``rows`` (columns lo, hi, ...) as (n, 2)."""
    arr = rows[rows[:, 1] > rows[:, 0], :2]
    arr = arr[np.argsort(arr[:, 0], kind="stable")]
    if len(arr) < 2:
        return arr
    ends = np.maximum.accumulate(arr[:, 1])
    starts = np.flatnonzero(np.r_[True, arr[1:, 0] >= ends[:-1]])
    return np.stack([arr[starts, 0], np.r_[ends[starts[1:] - 1], ends[-1]]], axis=1)


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether a byte lies in a range of ``a`` and in one of ``b``."""
    sa, sb = _merged(a), _merged(b)
    if not len(sa) or not len(sb):
        return False
    # for each range of a, the first range of b ending after its start
    first = np.searchsorted(sb[:, 1], sa[:, 0], side="right")
    inside = first < len(sb)
    return bool(np.any(sb[first[inside], 0] < sa[inside, 1]))


def _shared(writes: np.ndarray) -> bool:
    """Whether two groups (core, pipe) write a common byte: each group's ranges merged,
    then any two of them overlapping."""
    groups = np.unique(writes[:, 2])
    if len(groups) < 2:
        return False
    merged = np.concatenate([_merged(writes[writes[:, 2] == g]) for g in groups])
    merged = merged[np.argsort(merged[:, 0], kind="stable")]
    return bool(np.any(merged[1:, 0] < np.maximum.accumulate(merged[:, 1])[:-1]))


class _NoFork(Exception):
    """os.fork failed (the host has no memory for a child): the caller keeps the work."""


class _Process:
    """A forked child with a status pipe; ``_wait`` reads its report and reaps it, ``abort``
    kills and reaps it (each at most once: a reaped pid may belong to another process)."""

    pid: int | None = None
    _status: int | None = None

    def _fork(self, child_main) -> None:
        """Fork; the child runs ``child_main(status_fd)``, which never returns."""
        self._status, status_w = os.pipe()
        try:
            pid = os.fork()
        except OSError as exc:
            os.close(self._status)
            os.close(status_w)
            raise _NoFork from exc
        self.pid = pid
        if pid == 0:
            os.close(self._status)
            child_main(status_w)
        os.close(status_w)

    def _wait(self) -> bytes:
        with os.fdopen(self._status, "rb") as inp:
            self._status = None
            data = inp.read()
        os.waitpid(self.pid, 0)
        self.pid = None
        return data

    def abort(self) -> None:
        """Stop the child, if it still runs; no process is left behind."""
        if self._status is not None:
            os.close(self._status)
            self._status = None
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(self.pid, 0)
            self.pid = None


class Beside(_Process):
    """The child process running a launch's numerics; see the module docstring.

    Cores without cross-core synchronisation are independent: they wait in a pipe, and the
    child and (once its timing run is over) the parent each take the next one until none is
    left. Otherwise the child runs them all in the functional run's order. The atomic adds of
    both wait for ``finish``, which applies them in the timed run's order."""

    def __init__(self, specs: list, atomics: dict, gm, independent: bool, decidable: bool):
        self.specs, self.atomics, self.gm = specs, atomics, gm
        self.checks_races = decidable         # else the timing run's detector does
        self.checks_gm = independent          # else the caller checked GM (gm_safe)
        self.atomic_ids = set(atomics)
        self._work = self._work_w = None
        if independent:
            self._work, self._work_w = os.pipe()
        try:
            self._fork(lambda status_w: _child(self, status_w))
        except _NoFork:
            for fd in (self._work, self._work_w):
                if fd is not None:
                    os.close(fd)
            raise
        if self._work_w is not None:     # the child hands the cores out (see _child)
            os.close(self._work_w)

    def finish(self, atomic_order: list) -> bool:
        """Take the cores left, wait for the child, apply the atomic adds in ``atomic_order``
        ((core, id) pairs, as the timed run reached them). True when done; False when a
        numerics pass failed (nothing added atomically yet: run the launch again with numerics
        in the timing run)."""
        stash: dict = {}
        failed = self.take_cores(stash)       # on an error the caller aborts the child
        data = self._wait()
        verdict, child_failed, child_stash = (pickle.loads(data) if data
                                              else ("no report", None, {}))
        if failed or child_failed or verdict != "ok":
            return False
        for key, occurrences in child_stash.items():
            stash[key] = deque(occurrences)
        _apply(self.specs, self.atomics, stash, atomic_order)
        return True

    def take_cores(self, stash: dict) -> str | None:
        """Run the numerics of the cores this process takes (all of them when they are not
        independent), keeping atomic adds' sources in ``stash``; the failure, if any."""
        execute = _stashing(stash, self.atomic_ids)
        try:
            if self._work is None:
                if self.pid == 0:
                    run_functional(self.specs, execute=execute)
                return None
            while len(got := os.read(self._work, 2)) == 2:
                i = int.from_bytes(got, "little")
                run_functional([self.specs[i]], execute=execute, indices=[i])
        except Exception as exc:               # noqa: BLE001 - reported, then run again
            return f"{type(exc).__name__}: {exc}"
        finally:
            if self.pid != 0 and self._work is not None:
                os.close(self._work)
                self._work = None
        return None


def _child(beside: Beside, status_w: int) -> None:
    """The child's whole life: the operator's inputs into GM, the race check
    (npusim/engine/race_order.py), the cores to take handed out (a race leaves none, the parent
    reads the end of the pipe at once), its cores' numerics, then the verdict, its failure (or None)
    and its atomic adds' sources back to the parent as a pickle; it exits without cleanup."""
    try:
        stash: dict = {}
        verdict, failed = "interrupted", None
        try:
            beside.gm.load_inputs()           # the parent's timing run does not read them
            verdict = "ok"
            if beside.checks_gm and not gm_safe(beside.specs):
                verdict = "gm"
            elif beside.checks_races:
                verdict = race_order.check(beside.specs)
            if verdict == "ok":
                if beside._work_w is not None:   # now the parent may take cores too
                    os.write(beside._work_w, b"".join(
                        i.to_bytes(2, "little") for i in range(len(beside.specs))))
                    os.close(beside._work_w)
                failed = beside.take_cores(stash)
        finally:
            with os.fdopen(status_w, "wb") as out:
                pickle.dump((verdict, failed, {k: list(v) for k, v in stash.items()}), out)
    finally:
        os._exit(0)


def _stashing(stash: dict, atomic_ids: set):
    """``execute`` for run_functional: atomic adds keep the on-chip bytes they read instead
    (buffer name, offset, bytes) under (core, id)."""
    if not atomic_ids:
        return None

    def execute(inst, core: int) -> None:
        if id(inst) not in atomic_ids:
            inst.execute()
            return
        saved = [(store.name, lo, store.data[lo:hi].copy()) for store, lo, hi in inst.reads()
                 if type(store) is not GlobalMemory]
        stash.setdefault((core, id(inst)), deque()).append(saved)
    return execute


def _apply(specs: list, atomics: dict, stash: dict, order: list) -> None:
    """The atomic adds in ``order``, each from the source bytes it had in program order."""
    for core, ident in order:
        buffers = specs[core].buffers
        for name, lo, data in stash[(core, ident)].popleft():
            buffers[name].data[lo:lo + len(data)] = data
        atomics[ident].execute()
    if any(stash.values()):
        raise NpusimError("the numerics beside the timing run kept atomic adds the run did "
                          "not reach")


class Checker(_Process):
    """The race check (npusim/engine/race_order.py) of a launch whose timing run has no numerics, in
    a child process; the timing run leaves the race detector out."""

    def __init__(self, specs: list):
        self._fork(lambda status_w: _check(specs, status_w))

    def finish(self) -> bool:
        """True when the launch is race-free; False: run it again with the detector."""
        return self._wait() == b"ok"


def _check(specs: list, status_w: int) -> None:
    """The checking child's whole life: its verdict back to the parent, then exit."""
    try:
        verdict = "interrupted"
        try:
            verdict = race_order.check(specs)
        finally:
            os.write(status_w, verdict.encode())
    finally:
        os._exit(0)
