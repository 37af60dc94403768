"""The timed run: every pipe of every core is a SimPy process draining its in-order queue.

The kernel was recorded per core into an issue stream (see ``npusim/engine/launch.py``). Here the
scalar pipe replays that stream: issuing an instruction costs ``issue_cycles`` and puts it into
its pipe's queue of ``queue_depth`` entries; a full queue stalls the scalar until that pipe pops
an entry, and the instruction issues at the later of the scalar's clock and the pop. The scalar
keeps a local clock ahead of SimPy's; while it is stalled, the pipe that frees the entry issues
on its behalf at that moment, so the scalar's own process wakes only for its own instructions
(flags, barriers, scalar reads) and at the end of its stream.

A pipe pops an instruction, waits for its issue time, and then: ``exec`` instructions occupy it
for ``head + body`` cycles (head only when the pipe was idle before) and apply their semantics at
the end; GM moves also reserve the shared HBM/L2 servers (``npusim/engine/bandwidth.py``) at their
start and end at the later of the two; ``set``/``wait`` flags count per (src, dst, event id);
barriers, cross-core flags and SyncAll block as described in ``isa/sync.py``.

Events: an instruction that reserves nothing shared at its start takes one SimPy timeout from
its issue wait to its end (the pipe counts as busy from its start); a ``wait_flag`` on a flag not
yet set parks on an event the set triggers for the time the flag becomes visible. About one
SimPy event per instruction; the order of same-time events is that of the two-step version.

Modelled: issue order, queue back-pressure, flag latency, per-pipe serialisation, shared GM
bandwidth. With ``sanitize`` the race detector of ``npusim/engine/sanitizer.py`` follows every
instruction of one core of each on-chip program (``npusim/engine/race_scope.py``);
``jitter=(seed, max_cycles)`` adds seeded random extra latency to every instruction so tests
can show that outputs do not depend on timing. A chip model made by ``Chip.with_speedup``
divides the body of every instruction of the pipes it names (the re-simulation a what-if of
``npusim/engine/whatif.py`` is held against).

Recording: with a tracer, the run also keeps what the dependency graph
(``npusim/engine/depgraph.py``) needs beyond the instruction records: the issues a full queue
delayed (and the pop that released them), each GM transfer's share of the L2 and HBM servers in
the order it reserved them, the atomic-add range it holds, each core's scalar end and who a
cross-core set reaches. Without a tracer none of it is kept.

Not modelled: overlap of consecutive instructions inside one pipe (a pipe runs one
instruction at a time), instruction fetch, the scalar's branch costs beyond ``ScalarOps``.
"""

import random
from collections import deque

from simpy import Environment, Event
from simpy.events import NORMAL

from npusim.engine.atomic_lines import AtomicLines
from npusim.engine.bandwidth import GmBandwidth
from npusim.engine.processes import pipe_process, scalar_process
from npusim.engine.race_order import first_race
from npusim.engine.race_scope import cores_to_check
from npusim.engine.sanitizer import Sanitizer
from npusim.errors import DeadlockError

EPS = 1e-9


class FlagWait(Event):
    """What a wait_flag parks on: the set triggers it for the time its flag becomes visible,
    as a Timeout made at the set would be (one event per wait, not a wake and a timeout)."""

    def trigger_in(self, delay: float) -> None:
        self._ok, self._value = True, None
        self.env.schedule(self, NORMAL, delay if delay > 0 else 0)


class PipeSim:
    """One pipe of one core: a bounded queue and the process that drains it."""

    def __init__(self, core, name: str):
        self.core, self.name = core, name
        self.queue: deque = deque()
        self.marks = 0            # buffer marks in the queue (they take no entry)
        self.wake = None          # event the idle pipe waits on for a push
        self.scalar_parked = False   # the core's scalar waits for an entry of this queue
        self.idle_waiters: list = []
        self.busy_since = float("inf")   # when it took the instruction it holds (inf: none)
        self.not_before = 0.0     # a flag just set or passed occupies the pipe until then
        self.last_end = -1.0      # end of the last exec instruction (for the head rule)
        self.busy_cycles = 0.0
        self.blocked_on = None
        self.last_inst = None
        self.done = False
        self.ticks: list = []     # (time, busy cycles, GM bytes, HBM bytes, moves, GM wait)
        self.gm_bytes = 0.0       # at each steady loop tick (fast runs); those counts so far
        self.hbm_bytes = 0.0
        self.gm_moves = 0
        self.gm_wait = 0.0        # cycles its GM moves waited on the shared servers
        self.paces: dict = {}     # steady skip template -> its pace here (processes._pace)
        self.full_reason = ("queue full", f"PIPE-{name}")   # what a scalar blocked here waits on

    def push(self, inst, t: float, clock=None) -> None:
        self.queue.append((inst, t, clock))
        if self.wake is not None:
            self.wake.succeed()
            self.wake = None

    def idle(self) -> bool:
        """Nothing queued and nothing held: an instruction taken from the queue that waits out
        its issue time or a flag's delay before it starts keeps the pipe busy (PipeBarrier(ALL)
        and SyncAll wait for it)."""
        return not self.queue and self.busy_since == float("inf")


class CoreSim:
    """One core in the timed run: its pipes, flag counters and scalar replay."""

    def __init__(self, engine, index: int, label: str, stream: list, pipes: tuple):
        self.engine, self.index, self.label, self.stream = engine, index, label, stream
        self.pipes = {p: PipeSim(self, p) for p in pipes}
        self.flags: dict = {}
        self.flag_waiters: dict = {}
        self.xflags: dict = {}
        self.xwaiters: dict = {}
        self.peers: list = []     # cores a cross-core set reaches
        self.scalar_time = 0.0
        self.scalar_done = False
        self.scalar_blocked = None
        self.issue_pos, self.issue_t = 0, 0.0   # the scalar's place in the stream, its clock
        self.scalar_wake = None
        self.san = None           # the race detector, when it follows this core
        self.ticks: list = []     # the scalar's clock at each steady loop tick (fast runs)
        self.skip_until = 0.0     # when the last steady skip of any of its pipes ends
        self.skipping = 0         # its pipes in a steady skip now

    # flags: per key, the times at which its pending sets become visible --------------------
    def set_flag(self, key, visible_at: float) -> None:
        pending = self.flags.get(key)
        if pending is None:
            pending = self.flags[key] = deque()
        pending.append(visible_at)
        ev = self.flag_waiters.pop(key, None)
        if ev is not None:       # the waiter wakes when the set becomes visible
            ev.trigger_in(visible_at - self.engine.env.now)

    def wait_flag(self, key, who):
        """Generator: block ``who`` (a PipeSim or the scalar) until the flag is visible."""
        env = self.engine.env
        while not self.flags.get(key):
            ev = FlagWait(env)
            self.flag_waiters[key] = ev
            self._block(who, ("flag", key))
            yield ev
        self._block(who, None)
        visible = self.flags[key].popleft()
        if visible > env.now:
            yield env.timeout(visible - env.now)

    def cross_set(self, flag_id: int) -> None:
        for peer in self.peers:
            peer.xflags[flag_id] = peer.xflags.get(flag_id, 0) + 1
            ev = peer.xwaiters.pop(flag_id, None)
            if ev is not None:
                ev.succeed()

    def cross_wait(self, flag_id: int, who):
        while not self.xflags.get(flag_id):
            ev = self.engine.env.event()
            self.xwaiters[flag_id] = ev
            self._block(who, ("cross-core flag", flag_id))
            yield ev
        self._block(who, None)
        self.xflags[flag_id] -= 1

    def _block(self, who, what) -> None:
        if who is None:
            self.scalar_blocked = what
        else:
            who.blocked_on = what


class TimedEngine:
    """Runs recorded per-core streams on SimPy; see the module docstring."""

    def __init__(self, chip, cores: list, gm, numerics: bool = True, tracer=None,
                 sanitize: bool = True, jitter: tuple | None = None):
        self.chip, self.gm, self.numerics, self.tracer = chip, gm, numerics, tracer
        self.env = Environment()
        self.bw = GmBandwidth(chip, gm.size)
        self.atomic_lines = AtomicLines()
        self.cores = [CoreSim(self, i, c.label, c.stream, c.pipes) for i, c in enumerate(cores)]
        for sim, spec in zip(self.cores, cores, strict=True):
            sim.peers = [self.cores[j] for j in spec.peers]
        self.sanitizer = None
        if sanitize:   # one core of each on-chip program (npusim/engine/race_scope.py)
            checked = cores_to_check(self.cores)
            self.sanitizer = Sanitizer(checked, recheck=first_race)
            for core in checked:
                core.san = self.sanitizer
        # a chip model with pipes made faster for a what-if ({pipe: factor}; chip.with_speedup)
        self.speedup = getattr(chip, "pipe_speedup", None) or None
        if tracer is not None:   # who a cross-core set reaches (npusim/engine/depgraph.py)
            tracer.peers = [list(spec.peers) for spec in cores]
            tracer.jittered = jitter is not None
        self.jitter = None
        if jitter is not None:
            seed, max_cycles = jitter
            rng = random.Random(seed)
            self.jitter = lambda: rng.random() * max_cycles
        self.sync_arrivals: list = []
        self.end_time = 0.0
        # numerics in a process beside the run (npusim/engine/beside.py): the atomic adds to log,
        # and the order the run reaches them in
        self.atomic_ids: set = set()
        self.atomic_log: list = []

    def run(self) -> float:
        for core in self.cores:
            self.env.process(scalar_process(self, core))
            for pipe in core.pipes.values():
                if pipe.name != "S":
                    self.env.process(pipe_process(self, pipe))
        self.env.run()
        self._check_finished()
        if self.sanitizer is not None:
            self.sanitizer.finish()     # a read of bytes never written
        return self.end_time

    def release(self) -> None:
        """Break the engine <-> core <-> pipe references once the stats are read, so reference
        counting frees the run's queues, flags and race history at once (no GC pass)."""
        for core in self.cores:
            core.engine, core.peers = None, []
            for pipe in core.pipes.values():
                pipe.core = None
        self.cores, self.sanitizer = [], None

    def _check_finished(self) -> None:
        blocked = []
        for core in self.cores:
            if not core.scalar_done:
                blocked.append(f"{core.label} PIPE-S waits on {_what(core.scalar_blocked)}")
            for pipe in core.pipes.values():
                if pipe.name != "S" and not pipe.done:
                    last = pipe.last_inst.name if pipe.last_inst is not None else "nothing"
                    blocked.append(f"{core.label} PIPE-{pipe.name} waits on "
                                   f"{_what(pipe.blocked_on)} (last ran: {last})")
        if blocked:
            raise DeadlockError("deadlock: the run ended with pipes still blocked: "
                                + "; ".join(blocked))
        check_balanced(self.cores)


def _what(blocked) -> str:
    if blocked is None:
        return "nothing (stalled behind a blocked pipe)"
    kind, key = blocked
    if kind == "flag":
        return f"flag {key[0]}->{key[1]} event {key[2]}"
    return f"{kind} {key}"


def check_balanced(cores) -> None:
    """Raise DeadlockError when sets outnumber waits at kernel end."""
    extra = [f"{c.label} set_flag({k[0]}, {k[1]}, {k[2]}) x{len(n) if hasattr(n, '__len__') else n}"
             for c in cores for k, n in c.flags.items() if n] + \
            [f"{c.label} cross-core flag {k} x{n}" for c in cores for k, n in c.xflags.items() if n]
    if extra:
        raise DeadlockError("unbalanced flags at kernel end (set but never waited): "
                            + "; ".join(extra))
