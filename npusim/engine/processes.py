"""The SimPy processes of the timed run: a pipe draining its queue, the scalar replaying issues.

See ``npusim/engine/timed.py`` for the model. Both are plain generators yielding SimPy events; the
engine, core and pipe objects they work on are defined there. A fast run's steady-state markers
(``isa/steady.py``) are handled here too: ticks ride with the buffer marks, skips take the
rare paths.
"""

from npusim.isa.steady import SteadyTick


class _Stop:
    """The scalar's last entry in every pipe queue: the pipe ends there."""

    kind = "stop"
    touches_gm = False


STOP = _Stop()
IDLE = float("inf")   # PipeSim.busy_since of a pipe running nothing


def pipe_process(engine, pipe):
    """Drain ``pipe``'s queue in order until the scalar's STOP entry."""
    env, queue = engine.env, pipe.queue
    popleft, timeout = queue.popleft, env.timeout
    flags, chip = pipe.core.flags, engine.chip
    local = engine.jitter is None and engine.speedup is None
    while True:
        if not queue:
            pipe.wake = env.event()
            yield pipe.wake
            continue
        inst, t_issue, clock = popleft()
        kind = inst.kind
        if kind == "mark":
            _pop_mark(engine, pipe, inst, t_issue)
            continue
        now = env.now
        pipe.busy_since = now     # taken from the queue: not idle, even before it starts
        if pipe.scalar_parked:
            _scalar_unpark(engine, pipe, now)
        ready = t_issue if t_issue > pipe.not_before else pipe.not_before
        if kind == "exec" and local and not inst.touches_gm:
            # Nothing shared is reserved at the start: one timeout to the end (see docstring).
            start = ready if ready > now else now
            body = inst.body(chip)
            end = start + (body + inst.head(chip) if start > pipe.last_end + 1e-9 else body)
            if end > now:
                yield timeout(end - now)
            _exec_done(engine, pipe, inst, t_issue, start, end, clock)
        else:
            if ready > now:
                yield timeout(ready - now)
                now = env.now
            if kind == "set":                  # no yield: nobody sees the pipe busy
                _run_set(engine, pipe, inst, t_issue, clock)
                pipe.last_inst = inst
                pipe.busy_since = IDLE
                if not queue and pipe.idle_waiters:
                    _notify_idle(pipe)
                continue
            if inst is STOP:
                pipe.busy_since = IDLE
                pipe.done = True
                engine.end_time = max(engine.end_time, now, pipe.last_end)
                _notify_idle(pipe)
                return
            if kind == "exec":        # a GM move, or any instruction under jitter or a speedup
                end = _exec_end(engine, pipe, inst, now)
                if end > now:
                    yield timeout(end - now)
                _exec_done(engine, pipe, inst, t_issue, now, end, clock)
            elif kind == "wait" and flags.get(inst.key):   # already set: no generator to build
                pipe.blocked_on = None
                visible = flags[inst.key].popleft()
                if visible > now:
                    yield timeout(visible - now)
                _waited(engine, pipe, inst, t_issue, now, clock)
            else:
                yield from _run_pipe_inst(engine, pipe, inst, t_issue, clock)
        pipe.last_inst = inst
        pipe.busy_since = IDLE
        if not queue and pipe.idle_waiters:
            _notify_idle(pipe)


def _pop_mark(engine, pipe, inst, t_issue) -> None:
    """A buffer mark leaves the queue (it took no entry): traced at the later of now and its
    issue. A steady loop's tick notes when the pipe reached it and its busy cycles then."""
    pipe.marks -= 1
    if inst.__class__ is SteadyTick:
        pipe.ticks.append((max(engine.env.now, t_issue), pipe.busy_cycles, pipe.gm_bytes,
                           pipe.hbm_bytes, pipe.gm_moves, pipe.gm_wait))
    elif engine.tracer is not None:
        engine.tracer.mark(pipe.core.index, inst, max(engine.env.now, t_issue))
    if not pipe.queue and pipe.idle_waiters:
        _notify_idle(pipe)


def _waited(engine, pipe, inst, t_issue, start, clock) -> None:
    """A wait_flag passed now: the pipe is held flag_cycles; the race detector learns the
    set's clock."""
    core = pipe.core
    if core.san is not None:
        core.san.on_wait(core.index, pipe.name, inst.key, clock)
    pipe.not_before = engine.env.now + engine.chip.flag_cycles
    if engine.tracer is not None:
        engine.tracer.records.append((core.index, pipe.name, inst, t_issue, start,
                                      pipe.not_before))


def _run_pipe_inst(engine, pipe, inst, t_issue, clock):
    """The less common entries of a pipe's queue: waits on flags not yet set, cross-core
    flags, barriers, a fast run's steady skips. (Exec instructions that reserve the shared
    servers, or run under jitter, are run by ``pipe_process`` itself.)"""
    if inst.kind == "skip":
        yield from _pipe_skip(engine, pipe, inst, t_issue)
    else:
        yield from _run_sync(engine, pipe, inst, t_issue, clock)


def _pace(inst, now: float, pipe) -> tuple | None:
    """(cycles, busy cycles, GM bytes, HBM bytes, GM moves, cycles the moves waited on the
    shared servers) per iteration left out by a steady skip the pipe reaches ``now``: those of
    the ``period`` iterations before it (since the tick that far back), or, when another pipe
    of the core was in a skip during them (the pipe may have waited on it), the pace it
    measured at an earlier skip of the same iterations, if any (isa/steady.py). None: no tick
    to measure from."""
    ticks, core = pipe.ticks, pipe.core
    n = inst.period
    if len(ticks) < n:
        return None
    t0, busy, gm, hbm, moves, wait = ticks[-n]
    clean = t0 >= core.skip_until - 1e-9 and not core.skipping
    if not clean and inst.template in pipe.paces:
        return pipe.paces[inst.template]
    pace = ((now - t0) / n, (pipe.busy_cycles - busy) / n, (pipe.gm_bytes - gm) / n,
            (pipe.hbm_bytes - hbm) / n, (pipe.gm_moves - moves) / n,
            (pipe.gm_wait - wait) / n)
    if clean:
        pipe.paces[inst.template] = pace
    return pace


def _pipe_skip(engine, pipe, inst, t_issue):
    """A steady skip on a pipe: the pipe stays on it for the iterations left out
    (``_skip_moves``), counts their busy cycles and reserves the shared L2 and HBM for their
    transfers (isa/steady.py)."""
    env = engine.env
    start = env.now
    pace = _pace(inst, start, pipe)
    if pace is not None:
        core = pipe.core
        core.skipping += 1
        yield from _skip_moves(engine, pipe, pace, inst.period * inst.repeats, inst.mode)
        core.skipping -= 1
        core.skip_until = max(core.skip_until, env.now)
    shift = inst.cycles[0] = env.now - start
    pipe.last_end += shift
    if engine.tracer is not None:
        engine.tracer.records.append((pipe.core.index, pipe.name, inst, t_issue, start,
                                      start + shift))


def _skip_moves(engine, pipe, pace, left: int, mode: str):
    """The left-out iterations, GM move by GM move: between two moves the pipe spends its
    measured time per iteration less what its moves waited on the shared servers ("pace":
    its flag waits kept; "stream": its own work alone), and each move waits for L2 and HBM as
    they are reserved now, not as they served the measured period. A pipe with no GM moves
    spends its measured time ("pace") or its busy cycles ("stream") per iteration."""
    env = engine.env
    wall, busy, gm, hbm, moves, wait = pace
    own = max(0.0, (wall if mode == "pace" else busy) - wait)
    count = round(left * moves)
    pipe.busy_cycles += left * busy
    if not count:
        yield env.timeout(left * own)
        return
    gm, hbm, step = left * gm / count, left * hbm / count, left * own / count
    for _ in range(count):
        t = env.now
        yield env.timeout(max(t + step, engine.bw.reserve(t, gm, hbm)) - t)
    pipe.gm_bytes += gm * count
    pipe.hbm_bytes += hbm * count
    pipe.gm_moves += count


def _exec_done(engine, pipe, inst, t_issue, start, end, clock) -> None:
    """An exec instruction ends: its semantics, then the accounting."""
    if engine.numerics:
        inst.execute()
    elif engine.atomic_ids and id(inst) in engine.atomic_ids:    # numerics beside the run
        engine.atomic_log.append((pipe.core.index, id(inst)))
    pipe.last_end = end
    pipe.busy_cycles += end - start
    if pipe.core.san is not None:
        pipe.core.san.on_exec(pipe.core.index, pipe.name, inst, clock)
    if engine.tracer is not None:
        engine.tracer.records.append((pipe.core.index, pipe.name, inst, t_issue, start, end))


def _run_set(engine, pipe, inst, t_issue, clock) -> None:
    """set_flag occupies its pipe flag_cycles; the waiter sees it after them."""
    core, env = pipe.core, engine.env
    pipe.not_before = env.now + engine.chip.flag_cycles + (engine.jitter() if engine.jitter else 0)
    if core.san is not None:
        core.san.on_set(core.index, pipe.name, inst.key, clock)
    core.set_flag(inst.key, pipe.not_before)
    if engine.tracer is not None:
        engine.tracer.records.append((core.index, pipe.name, inst, t_issue, env.now,
                                      pipe.not_before))


def _run_sync(engine, pipe, inst, t_issue, clock):
    """wait_flag, cross-core flags and a barrier on this pipe (in order: only its drain)."""
    core, env, chip = pipe.core, engine.env, engine.chip
    san = core.san
    kind = inst.kind
    if kind == "wait":
        start = env.now
        yield from core.wait_flag(inst.key, pipe)
        _waited(engine, pipe, inst, t_issue, start, clock)
    elif kind == "xset":
        start = env.now
        yield env.timeout(inst.body(chip))
        if san is not None:
            san.on_cross_set(core.index, pipe.name, [p.index for p in core.peers],
                             inst.flag_id, clock)
        core.cross_set(inst.flag_id)
        _record_sync(engine, pipe, inst, t_issue, start)
    elif kind == "xwait":
        start = env.now
        yield from core.cross_wait(inst.flag_id, pipe)
        if san is not None:
            san.on_cross_wait(core.index, pipe.name, inst.flag_id, clock)
        yield env.timeout(chip.flag_cycles)
        _record_sync(engine, pipe, inst, t_issue, start)
    else:
        start = env.now
        yield env.timeout(inst.body(chip))
        _record_sync(engine, pipe, inst, t_issue, start)


def _record_sync(engine, pipe, inst, t_issue, start) -> None:
    """Trace a cross-core flag or a pipe barrier that ran on ``pipe`` from ``start`` to now."""
    if engine.tracer is not None:
        engine.tracer.records.append((pipe.core.index, pipe.name, inst, t_issue, start,
                                      engine.env.now))


def _exec_end(engine, pipe, inst, start: float) -> float:
    """When an instruction starting now ends: head if the pipe was idle, body, jitter, GM."""
    chip = engine.chip
    body = inst.body(chip)
    if engine.speedup is not None:       # a chip model with a pipe made faster (what-if)
        body = body / engine.speedup.get(pipe.name, 1.0)
    dur = body + inst.head(chip) if start > pipe.last_end + 1e-9 else body
    if engine.jitter is not None:
        dur += engine.jitter()
    end = start + dur
    if inst.touches_gm:
        bw, tracer = engine.bw, engine.tracer
        hbm0 = bw.hbm_bytes
        nbytes = inst.charged_bytes(chip)
        own = end
        end = max(end, bw.transfer(start, inst.gm_blocks(), nbytes, inst.gm_write))
        pipe.gm_wait += end - own
        pipe.gm_bytes += nbytes                 # for a fast run's steady skips
        pipe.gm_moves += 1
        pipe.hbm_bytes += bw.hbm_bytes - hbm0
        key = None
        if inst.serialises_at_l2:               # npusim/engine/atomic_lines.py
            key = inst.gm_span()
            end = engine.atomic_lines.order(key, start, end, body)
        if tracer is not None:    # what the dependency graph needs (npusim/engine/depgraph.py)
            tracer.gm.append((pipe.core.index, pipe.name, nbytes / bw.l2_rate,
                              (bw.hbm_bytes - hbm0) / bw.hbm_rate, key))
    return end


def _notify_idle(pipe) -> None:
    waiters, pipe.idle_waiters = pipe.idle_waiters, []
    for ev in waiters:
        ev.succeed()


def _catch_up(env, t):
    if t > env.now:
        yield env.timeout(t - env.now)


def _drain(engine, core):
    """Generator: block the scalar until every pipe of the core is idle. With a tracer, the
    pipes it waited for and when each let it go are recorded (``Tracer.drains``)."""
    waited = []
    for pipe in core.pipes.values():
        before = engine.env.now
        while pipe.name != "S" and not pipe.idle():
            ev = engine.env.event()
            pipe.idle_waiters.append(ev)
            core.scalar_blocked = ("pipe drain", f"PIPE-{pipe.name}")
            yield ev
        if pipe.not_before > engine.env.now:
            yield engine.env.timeout(pipe.not_before - engine.env.now)
        if engine.env.now > before:
            waited.append((pipe.name, engine.env.now))
    if engine.tracer is not None:
        engine.tracer.drains.append((core.index, waited))
    core.scalar_blocked = None
    if core.san is not None:
        core.san.on_drain(core.index)


def scalar_process(engine, core):
    """Replay the core's issue stream on the scalar pipe (see engine docstring).

    Issuing runs in ``_issue_run`` while each pipe instruction finds room in its queue. A full
    queue parks the scalar; the pipe that frees an entry issues on its behalf at that moment
    (``_scalar_unpark``), so the scalar's process resumes only for its own instructions (flags,
    barriers, scalar reads) and at the end of the stream."""
    env, chip = engine.env, engine.chip
    while True:
        inst = _issue_run(engine, core)
        if inst is None:
            break
        if inst.pipe != "S":                      # its queue is full: park until a pop
            _park(core, core.pipes[inst.pipe])
            core.scalar_wake = env.event()
            yield core.scalar_wake
            continue
        yield from _catch_up(env, core.issue_t)
        start = env.now
        yield from _scalar_inst(engine, core, inst)
        core.issue_t = env.now + inst.body(chip)
        core.issue_pos += 1
        if engine.tracer is not None:
            engine.tracer.record(core.index, "S", inst, start, env.now, core.issue_t)
    t = core.issue_t
    yield from _catch_up(env, t)
    for pipe in core.pipes.values():
        if pipe.name != "S":
            pipe.push(STOP, t)
    core.scalar_time = t
    core.scalar_done = True
    if engine.tracer is not None:
        engine.tracer.scalar_ends.append((core.index, t))
    engine.end_time = max(engine.end_time, t)


def _issue_run(engine, core):
    """Issue from ``core.issue_pos`` while pipe instructions find room; return the first
    instruction that stops the run (a pipe instruction whose queue is full, or a scalar-pipe
    instruction that must block or wait for its time), or None at the end of the stream."""
    stream, first, t = core.stream, core.issue_pos, core.issue_t
    pipes, chip = core.pipes, engine.chip
    issue, depth = chip.issue_cycles, chip.queue_depth
    clocks = core.san.issue_clock if core.san is not None else None
    index = core.index
    stop = None
    pos = len(stream)
    for i in range(first, len(stream)):
        inst = stream[i]
        name, kind = inst.pipe, inst.kind
        if kind == "mark":
            _push_mark(engine, core, inst, t)
            continue
        if kind == "scalar":
            t += inst.body(chip)
            continue
        if name == "S":
            stop, pos = inst, i
            break
        pipe = pipes[name]
        queue = pipe.queue
        if len(queue) - pipe.marks >= depth:
            stop, pos = inst, i               # t is advanced when it is issued
            break
        t += issue
        queue.append((inst, t, clocks[index] if clocks is not None else None))
        if pipe.wake is not None:            # PipeSim.push, inlined
            pipe.wake.succeed()
            pipe.wake = None
    core.issue_pos, core.issue_t = pos, t
    return stop


def _scalar_unpark(engine, pipe, now: float) -> None:
    """``pipe`` just freed a queue entry the parked scalar waits for: issue the waiting
    instruction at the later of its issue time and ``now``, and go on issuing; wake the
    scalar's process only when the run stops at something other than a full queue."""
    core = pipe.core
    pipe.scalar_parked = False
    t = core.issue_t + engine.chip.issue_cycles
    if now > t:
        if engine.tracer is not None:   # issued at the pop, not by the scalar's own clock
            engine.tracer.stalls.append((core.index, pipe.name, now, t))
        t = now
    san, stream, pos, queue = core.san, core.stream, core.issue_pos, pipe.queue
    queue.append((stream[pos], t, san.issue_clock[core.index] if san is not None else None))
    core.issue_pos, core.issue_t = pos + 1, t
    if pos + 1 < len(stream):                 # the common case: the next one waits here too
        nxt = stream[pos + 1]
        if (nxt.pipe == pipe.name and nxt.kind != "mark"
                and len(queue) - pipe.marks >= engine.chip.queue_depth):
            pipe.scalar_parked = True         # still blocked on the same queue
            return
    inst = _issue_run(engine, core)
    if inst is not None and inst.pipe != "S":
        _park(core, core.pipes[inst.pipe])
        return
    core.scalar_blocked = None
    core.scalar_wake.succeed()


def _park(core, pipe) -> None:
    """The core's scalar waits for an entry of ``pipe``'s full queue."""
    pipe.scalar_parked = True
    core.scalar_blocked = pipe.full_reason


def _push_mark(engine, core, inst, t) -> None:
    """Buffer marks ride in their pipe's queue (taking no entry) or, on S, are traced at once.
    A steady loop's tick is noted by the scalar and rides in every pipe's queue."""
    if inst.__class__ is SteadyTick:
        core.ticks.append(t)
        for pipe in core.pipes.values():
            if pipe.name != "S":
                pipe.marks += 1
                pipe.push(inst, t)
        return
    if inst.pipe == "S":
        if engine.tracer is not None:
            engine.tracer.mark(core.index, inst, t)
        return
    pipe = core.pipes[inst.pipe]
    pipe.marks += 1
    pipe.push(inst, t)


def _scalar_inst(engine, core, inst):
    """The blocking part of a scalar-pipe instruction (its cost is added by the caller)."""
    kind, san, i = inst.kind, core.san, core.index
    if kind == "wait":
        yield from core.wait_flag(inst.key, None)
        if san is not None:
            san.on_wait(i, "S", inst.key)
    elif kind == "set":
        if san is not None:
            san.on_set(i, "S", inst.key)
        core.set_flag(inst.key, engine.env.now + engine.chip.flag_cycles)
    elif kind == "barrier":
        yield from _drain(engine, core)
    elif kind == "syncall":
        yield from _drain(engine, core)
        yield from _sync_all(engine, core)
    elif kind == "xwait":
        yield from core.cross_wait(inst.flag_id, None)
        if san is not None:
            san.on_cross_wait(i, "S", inst.flag_id)
    elif kind == "xset":
        if san is not None:
            san.on_cross_set(i, "S", [p.index for p in core.peers], inst.flag_id)
        core.cross_set(inst.flag_id)
    elif kind in ("scalar_read", "scalar_write"):
        if engine.numerics:
            inst.execute()
        if san is not None:
            san.on_exec(i, "S", inst)


def _sync_all(engine, core):
    """Every core of the launch meets here; the last to arrive releases the others."""
    arrivals = engine.sync_arrivals
    ev = engine.env.event()
    arrivals.append(ev)
    if len(arrivals) == len(engine.cores):
        engine.sync_arrivals = []
        if engine.sanitizer is not None:
            engine.sanitizer.on_sync_all([c.index for c in engine.cores if c.san is not None])
        for e in arrivals:
            e.succeed()
    core.scalar_blocked = ("sync_all", f"{len(arrivals)}/{len(engine.cores)} cores arrived")
    yield ev
    core.scalar_blocked = None
