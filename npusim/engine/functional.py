"""The functional run: the recorded instruction streams executed in program order, no SimPy.

This is the living definition of the ISA: each instruction's ``execute()`` is applied in the
order the kernel issued it. Cores run one after another and switch only where a cross-core flag
or ``SyncAll`` makes one wait for another. Flags are still checked: a ``wait_flag`` whose
``set_flag`` has not come earlier in program order is a ``DeadlockError``, and so are flags left
set at kernel end.

Difference from the timed run: atomic adds into GM land in program order (core 0 first) here and
in simulated-time order there, so float sums accumulated atomically by several cores may differ
in the last bits between the modes. Everything else is bit-identical.
"""

from npusim.engine.timed import check_balanced
from npusim.errors import DeadlockError


class _CoreState:
    def __init__(self, spec, index: int):
        self.label, self.stream, self.peers = spec.label, spec.stream, spec.peers
        self.index = index
        self.pc = 0
        self.flags: dict = {}
        self.xflags: dict = {}
        self.syncs = 0          # SyncAll points passed
        self.at_sync = False

    @property
    def done(self) -> bool:
        return self.pc >= len(self.stream)


def run_functional(specs: list, numerics: bool = True, execute=None, indices=None) -> None:
    """Execute every core's stream; raise DeadlockError when no core can go on.

    ``execute(inst, core_index)``, when given, applies each instruction instead of its own
    ``execute`` (``npusim/engine/beside.py`` keeps atomic adds for later); ``indices`` are the
    cores' indices in their launch (default: their places in ``specs``)."""
    cores = [_CoreState(s, i) for i, s in zip(indices or range(len(specs)), specs, strict=True)]
    while not all(c.done for c in cores):
        progressed = False
        for core in cores:
            progressed |= _run_core(core, cores, numerics, execute)
        if not progressed:
            stuck = [f"{c.label} at {c.stream[c.pc].name} (instruction {c.pc})"
                     for c in cores if not c.done]
            raise DeadlockError("deadlock in program order: no core can go on: "
                                + "; ".join(stuck))
    check_balanced(cores)


def _run_core(core, cores, numerics: bool, execute=None) -> bool:
    """Run one core until it blocks or ends; return whether it executed anything."""
    start = core.pc
    stream = core.stream
    while core.pc < len(stream):
        inst = stream[core.pc]
        kind = inst.kind
        if kind == "exec" or kind in ("scalar_read", "scalar_write"):
            if execute is not None:
                execute(inst, core.index)
            elif numerics:
                inst.execute()
        elif kind == "set":
            core.flags[inst.key] = core.flags.get(inst.key, 0) + 1
        elif kind == "wait":
            if not core.flags.get(inst.key):
                raise DeadlockError(
                    f"{core.label}: wait_flag({inst.src}, {inst.dst}, {inst.event_id}) at "
                    f"instruction {core.pc} has no set_flag before it in program order")
            core.flags[inst.key] -= 1
        elif kind == "xset":
            for j in core.peers:
                peer = cores[j]
                peer.xflags[inst.flag_id] = peer.xflags.get(inst.flag_id, 0) + 1
        elif kind == "xwait":
            if not core.xflags.get(inst.flag_id):
                break
            core.xflags[inst.flag_id] -= 1
        elif kind == "syncall" and not _pass_sync(core, cores):
            break
        # "mark", "barrier" and "scalar" entries have no effect in program order
        core.pc += 1
    return core.pc > start


def _pass_sync(core, cores) -> bool:
    """True once every core has reached this core's next SyncAll (or passed it)."""
    if not core.at_sync:
        core.at_sync = True
        core.syncs += 1
    ready = all(c.syncs >= core.syncs for c in cores)
    if ready:
        core.at_sync = False
    return ready
