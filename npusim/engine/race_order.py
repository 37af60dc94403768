"""The race detector fed in program order, without a timing run.

``npusim/engine/sanitizer.py`` decides races from happens-before alone: program order inside a pipe,
set -> wait (matched in stream order per flag), issue, barriers. Every order of the events that
respects those edges gives it the same verdict, because whether two accesses are ordered is
fixed by the stream, not by when they ran: a race-free launch passes in any such order, and a
racy one fails in any (which race it names first may differ). Program order respects them when
every ``wait_flag`` comes after the ``set_flag`` it takes, so ``check`` feeds each followed
core's stream to a ``Sanitizer`` entry by entry, as the timed run would (the same calls, each
pipe instruction with the scalar's clock when it was issued), and answers:

- ``"ok"``: no race;
- ``"race"``: a HazardError (the timed run, with the detector in it, says which);
- ``"unordered"``: a wait before its set, a cross-core flag or SyncAll: not decidable here.

``npusim/engine/beside.py`` runs it in a process beside a timing run that leaves the detector out;
on anything but ``"ok"`` the launch runs again with the detector in the timing run.
"""

from types import SimpleNamespace

from npusim.engine.race_scope import cores_to_check
from npusim.engine.sanitizer import Sanitizer
from npusim.errors import HazardError

_UNORDERED = ("syncall", "xset", "xwait")


class _Unordered(Exception):
    """The stream's order is not one the detector can take."""


def stream_types(specs: list) -> set:
    """The instruction classes of the launch's streams (kinds and flags are class-level)."""
    return set().union(*(map(type, s.stream) for s in specs))


def decidable(specs: list, types: set | None = None) -> bool:
    """Whether ``check`` can decide the launch: no cross-core peers, flags or SyncAll (a wait
    before its set it finds only as it goes). ``types``: ``stream_types(specs)``, if known."""
    types = stream_types(specs) if types is None else types
    return not (any(s.peers for s in specs) or any(t.kind in _UNORDERED for t in types))


def check(specs: list) -> str:
    """The verdict on the launch's recorded streams: "ok", "race" or "unordered"."""
    try:
        return "ok" if _first(specs) is None else "race"
    except _Unordered:
        return "unordered"


def first_race(specs: list) -> HazardError | None:
    """The HazardError of the launch's recorded streams taken in program order (a race, or a
    read of bytes never written), None when there is none or the order cannot be decided.
    The first access of a race is then the one the program issued first.

    For the words of a race the timed run found (``npusim/engine/race_message.py``), not for
    a verdict: a ``SyncAll`` is taken as a barrier of its own core's pipes (on-chip buffers
    are the core's own, and no access of the core crosses it), so a kernel whose cores meet
    at a SyncAll still gets its race named in program order."""
    try:
        return _first(specs, syncall_drains=True)
    except _Unordered:
        return None


def _first(specs: list, syncall_drains: bool = False) -> HazardError | None:
    if any(s.peers for s in specs):
        raise _Unordered("cross-core peers")
    cores = cores_to_check([SimpleNamespace(index=i, label=s.label, pipes=s.pipes,
                                            stream=s.stream, peers=[])
                            for i, s in enumerate(specs)])
    san = Sanitizer(cores)
    try:
        for core in cores:
            _feed(san, core.index, core.stream, syncall_drains)
        san.finish()
    except HazardError as exc:
        return exc
    return None


def _feed(san, i: int, stream: list, syncall_drains: bool = False) -> None:
    """One core's stream, entry by entry, as the scalar and the pipes would report it."""
    for inst in stream:
        kind, pipe = inst.kind, inst.pipe
        if kind in ("mark", "scalar"):
            continue
        if kind == "syncall" and syncall_drains:
            san.on_drain(i)
            continue
        if kind in _UNORDERED:
            raise _Unordered(kind)
        if pipe == "S":
            _scalar(san, i, inst, kind)
        elif kind == "exec":
            san.on_exec(i, pipe, inst, san.issue_clock[i])
        elif kind == "set":
            san.on_set(i, pipe, inst.key, san.issue_clock[i])
        elif kind == "wait":
            _pending(san, i, inst.key)
            san.on_wait(i, pipe, inst.key, san.issue_clock[i])


def _scalar(san, i: int, inst, kind: str) -> None:
    if kind == "wait":
        _pending(san, i, inst.key)
        san.on_wait(i, "S", inst.key)
    elif kind == "set":
        san.on_set(i, "S", inst.key)
    elif kind == "barrier":
        san.on_drain(i)
    elif kind in ("scalar_read", "scalar_write"):
        san.on_exec(i, "S", inst)


def _pending(san, i: int, key) -> None:
    if not san.flag_clocks.get((i, key)):
        raise _Unordered("wait before its set")
