"""Launching a kernel on ``block_dim`` cores: record each core's issue stream, then run it.

Recording runs the kernel's Python once per core with that core as the DSL's current core; every
DSL call appends an instruction to the core's stream. Kernels that read on-chip values back into
the scalar (``reads_data``) are recorded eagerly: each instruction executes as it is issued, on a
snapshot of GM that is restored before the real run. Then the streams run either on SimPy
(``mode="timed"``, ``npusim/engine/timed.py``) or in program order (``mode="functional"``,
``npusim/engine/functional.py``).

Core layout: on a coupled chip (Atlas training) each block is one core with every pipe but FIX
and L1, L0A, L0B, L0C and UB. On a separated chip (Atlas A2) an ``aiv`` kernel runs on vector
cores (S, MTE2, MTE3, V; UB), an ``aic`` kernel on cube cores (S, MTE1, MTE2, MTE3, M, FIX; L1,
L0A, L0B, L0C, BT, FB), and a ``mix`` kernel on ``block_dim`` AICs each with its two AIVs, which
reach each other through cross-core flags.
"""

import math
import time
from dataclasses import dataclass, field

import numpy as np

from npusim.chip import load_chip
from npusim.dsl.context import CoreContext, recording
from npusim.engine.beside import start as start_beside
from npusim.engine.beside import start_checker
from npusim.engine.fast import fast_launch
from npusim.engine.functional import run_functional
from npusim.engine.gc_pause import gc_paused
from npusim.engine.gm_writes import check as check_gm_writes
from npusim.engine.memory import Buffer, anonymous_zeros
from npusim.engine.result import Result, collect_stats
from npusim.engine.timed import TimedEngine
from npusim.engine.trace import Tracer
from npusim.errors import NpusimError, NumericsRequiredError, TilingError

PIPES = {"core": ("S", "MTE2", "MTE1", "M", "V", "MTE3"), "aiv": ("S", "MTE2", "V", "MTE3"),
         "aic": ("S", "MTE2", "MTE1", "M", "MTE3", "FIX")}
BUFFERS = {"core": ("L1", "L0A", "L0B", "L0C", "UB"), "aiv": ("UB",),
           "aic": ("L1", "L0A", "L0B", "L0C", "BT", "FB")}
SIZE_KEYS = {"L1": "l1_bytes", "L0A": "l0a_bytes", "L0B": "l0b_bytes", "L0C": "l0c_bytes",
             "UB": "ub_bytes", "BT": "bias_table_bytes", "FB": "fixpipe_buffer_bytes"}
MODES = ("timed", "functional")


@dataclass
class CoreSpec:
    """One core of a launch: who it is and, once recorded, its issue stream."""

    label: str
    kind: str
    block_idx: int
    block_num: int
    sub_block_idx: int = 0
    peers: list = field(default_factory=list)
    pipes: tuple = ()
    buffers: dict = field(default_factory=dict)
    stream: list = field(default_factory=list)
    used_bytes: dict = field(default_factory=dict)


def _article(core_type: str) -> str:
    """'an aiv', 'an aic', 'a mix'."""
    return f"{'an' if core_type[0] in 'aeiou' else 'a'} {core_type}"


def core_layout(chip, core_type: str, block_dim: int) -> list[CoreSpec]:
    """The cores a launch of ``block_dim`` blocks uses, with their pipes and peers."""
    if core_type not in ("aiv", "aic", "mix"):
        raise NpusimError(f"core_type {core_type!r}: allowed aiv, aic, mix")
    limit = {"aiv": chip.vector_core_count, "aic": chip.ai_core_count,
             "mix": chip.ai_core_count}[core_type]
    if not isinstance(block_dim, int | np.integer) or not 1 <= block_dim <= limit:
        raise TilingError(f"block_dim = {block_dim} on {chip.name!r}: {_article(core_type)} "
                          f"kernel can use 1 to {limit} cores")
    if not chip.separated:
        return _place([_spec(chip, f"core{i}", "core", i, block_dim) for i in range(block_dim)])
    if core_type != "mix":
        return _place([_spec(chip, f"{core_type}{i}", core_type, i, block_dim)
                       for i in range(block_dim)])
    specs = []
    for i in range(block_dim):
        aic = _spec(chip, f"aic{i}", "aic", i, block_dim)
        aivs = [_spec(chip, f"aiv{2 * i + s}", "aiv", 2 * i + s, 2 * block_dim, s)
                for s in (0, 1)]
        base = len(specs)
        aic.peers = [base + 1, base + 2]
        for aiv in aivs:
            aiv.peers = [base]
        specs += [aic, *aivs]
    return _place(specs)


def _spec(chip, label, kind, idx, num, sub=0) -> CoreSpec:
    buffers = {name: Buffer(name, label, getattr(chip, SIZE_KEYS[name]), _UNPLACED)
               for name in BUFFERS[kind] if getattr(chip, SIZE_KEYS[name]) > 0}
    return CoreSpec(label, kind, idx, num, sub, pipes=PIPES[kind], buffers=buffers)


_UNPLACED = np.zeros(0, np.uint8)


def _place(specs: list[CoreSpec]) -> list[CoreSpec]:
    """Every on-chip buffer of the launch a slice of one zeroed private area (one allocation
    instead of a few hundred, each an mmap here; not numpy's, whose huge pages a core that
    touches part of its buffers would hold whole: ``anonymous_zeros``)."""
    buffers = [buf for spec in specs for buf in spec.buffers.values()]
    area = anonymous_zeros(sum(buf.size for buf in buffers), shared=False)
    start = 0
    for buf in buffers:
        buf.data = area[start:start + buf.size]
        start += buf.size
    return specs


def _zero_buffers(specs: list[CoreSpec]) -> None:
    for spec in specs:
        for buf in spec.buffers.values():
            buf.data[:] = 0


def record(kernel_cls, chip, specs: list[CoreSpec], args: dict, eager: bool,
           fast: bool = False) -> None:
    """Run the kernel's Python once per core, filling each spec's stream (``fast``: its
    steady loops leave out repeated periods, ``npusim/dsl/steady.py``)."""
    for spec in specs:
        ctx = CoreContext(chip, spec.label, spec.kind, spec.block_idx, spec.block_num,
                          spec.buffers, spec.pipes, eager=eager, sub_block_idx=spec.sub_block_idx)
        ctx.fast = fast
        try:
            with recording(ctx):
                kernel = kernel_cls()
                kernel.init(**args)
                kernel.process()
                kernel.pipe.destroy()
        except NpusimError as exc:
            raise type(exc)(f"core {spec.label}: {exc}") from None
        spec.stream = ctx.stream
        spec.used_bytes = kernel.pipe.used_bytes()


def check_options(*, mode, numerics, trace, sanitize, jitter) -> None:
    """NpusimError for a run option of the wrong kind, naming the value and what is allowed."""
    if mode not in MODES:
        raise NpusimError(f"mode {mode!r}: allowed {', '.join(MODES)}")
    for name, value in (("numerics", numerics), ("sanitize", sanitize)):
        if not isinstance(value, bool | np.bool_):
            raise NpusimError(f"{name} = {value!r}: allowed True or False")
    if not (isinstance(trace, bool | np.bool_) or (isinstance(trace, str) and trace == "path")):
        raise NpusimError(f"trace = {trace!r}: allowed True, False or 'path' (an operator run "
                          "keeps each kernel's critical path, not its records)")
    if jitter is None:
        return
    ok = isinstance(jitter, tuple | list) and len(jitter) == 2 and all(
        isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)
        for v in jitter)
    if not ok or not (float(jitter[0]).is_integer() and jitter[0] >= 0
                      and 0 <= jitter[1] < float("inf")):
        raise NpusimError(f"jitter = {jitter!r}: allowed None or (seed, max_cycles) with a "
                          "non-negative integer seed and a finite max_cycles >= 0")


def launch(kernel_cls, **options) -> Result:
    """Run ``kernel_cls`` on ``block_dim`` blocks; read ``outputs`` ({name: (tensor, shape)}).

    launch(kernel_cls, *, chip, block_dim, gm, args, outputs, mode="timed", numerics=True,
           trace=True, sanitize=True, jitter=None, tiling=None, workspace_bytes=0) -> Result

    kernel_cls: a ``npusim.dsl.Kernel`` subclass; its ``core_type`` ("aiv", "aic", "mix")
        says which cores of a separated chip run it (coupled chips: every core has all pipes).
    chip: a model name (``npusim.chips()``), a path to a ``.toml`` or a ``Chip``.
    block_dim: blocks to run, 1 to the chip's cores of that type (a mix block is one AIC and
        its two AIVs).
    gm: the ``GlobalMemory`` holding every GM tensor (``gm.tensor(name, dtype, count,
        init)``).
    args: a dict passed as ``kernel.init(**args)`` on every core.
    outputs: {name: (GlobalTensor, shape)}, read back into ``Result.outputs[name]``.
    mode: "timed" (the SimPy run, with cycles) or "functional" (program order, no time).
    numerics: False times the run without computing values (not for ``reads_data`` kernels).
    trace: keep each instruction's record (figures, ``line_trace``, ``explain``); "path"
        is the same as True here, but a large run's records are not packed (an operator run
        with "path" reads them once for each kernel's critical path and drops them,
        ``npusim/engine/sequence.py``).
    sanitize: raise ``HazardError`` on unordered accesses, ``DeadlockError`` on a wait whose
        set never comes.
    jitter: None, or (seed, max_cycles) of random extra latency; outputs must not change.
    tiling, workspace_bytes: recorded in the Result for reports.

    Returns a ``Result``: ``outputs``, ``cycles``, ``time_us``, ``stats``, ``tracer``.
    docs/guide/kernel-api.md has a complete example.

    Start-up is not charged: ``cycles`` runs from the first instruction to the last. An
    operator (``npusim.aclnn``, ``npusim run``) adds each kernel's start-up on its cores (the
    chip model's ``[launch] kernel_start_cycles`` and per-block cycles) and the gaps between
    kernels, as msprof's task durations do, so a bare launch's cycles and an operator's are
    not directly comparable (``Result.summary()`` says which it is).

    Floating-point exceptions (overflow to inf, NaN from inf - inf, ...) are values, as on the
    chip, not numpy RuntimeWarnings on the user's stderr."""
    with np.errstate(all="ignore"), gc_paused():
        return _launch(kernel_cls, **options)


def _run_timed(chip, specs, gm, *, numerics, trace, sanitize, jitter, beside):
    """The SimPy run. Where npusim/engine/beside.py finds it exact (``beside``: numerics on, no data
    read back), the numerics and the race check go to a process beside it; with numerics off,
    the race check alone may. Should that process find anything but a race-free launch, or
    the run raise, the launch runs again with both in the run."""
    child = start_beside(specs, gm, sanitize) if beside else None
    inputs = gm.take_pending()          # the child copies them in, else they are copied here
    if child is None:
        gm.load_inputs(inputs)
    checker = start_checker(specs) if sanitize and not numerics else None
    try:
        while True:
            tracer = Tracer() if trace else None
            engine = TimedEngine(chip, specs, gm, numerics=numerics and child is None,
                                 tracer=tracer, jitter=jitter, sanitize=sanitize and not (
                                     checker or (child and child.checks_races)))
            if child is not None:
                engine.atomic_ids = child.atomic_ids
            cycles = _engine_run(engine, child is not None or checker is not None)
            if cycles is not None and (child is None or child.finish(engine.atomic_log)) and (
                    checker is None or checker.finish()):
                break
            _abort(child, checker)
            if child is not None:
                gm.load_inputs(inputs)
            child = checker = None
            engine.release()
            _zero_buffers(specs)               # the pass beside may have used them
    except BaseException:
        _abort(child, checker)
        raise
    if tracer is not None and not isinstance(trace, str):   # "path": read once, dropped
        tracer.pack()
    return engine, tracer, cycles


def _engine_run(engine, beside: bool) -> float | None:
    """``engine.run()``; None when it raised with work beside it (the caller runs the launch
    again with everything in the run, which raises what it should, in order)."""
    try:
        return engine.run()
    except Exception:
        if beside:
            return None
        raise


def _abort(*procs) -> None:
    for proc in procs:
        if proc is not None:
            proc.abort()


def _launch(kernel_cls, *, chip, block_dim: int, gm, args: dict, outputs: dict,
            mode: str = "timed", numerics: bool = True, trace: bool = True,
            sanitize: bool = True, jitter: tuple | None = None,
            tiling=None, workspace_bytes: int = 0) -> Result:
    chip = load_chip(chip)
    check_options(mode=mode, numerics=numerics, trace=trace, sanitize=sanitize, jitter=jitter)
    eager = kernel_cls.reads_data
    if eager and not numerics:
        raise NumericsRequiredError(f"{kernel_cls.__name__} reads data into its control flow: "
                          "numerics=False is not possible")
    if mode == "functional" and not numerics:
        raise NpusimError("numerics=False only applies to mode='timed'")
    core_type = kernel_cls.core_type if chip.separated else "aic"
    specs = core_layout(chip, core_type, block_dim)
    t0 = time.perf_counter()
    gm.check_fits(chip)
    gm.materialize()
    if eager or mode != "timed":       # else the timed run copies the inputs in (_run_timed)
        gm.load_inputs()
    snapshot = gm.data.copy() if eager and mode == "timed" else None
    fast = fast_launch(mode=mode, numerics=numerics, sanitize=sanitize, jitter=jitter,
                       eager=eager)
    record(kernel_cls, chip, specs, args, eager, fast)
    if sanitize:
        check_gm_writes(specs, gm)      # two cores writing the same GM bytes
    t_record = time.perf_counter()
    tracer = None
    cycles = 0.0
    if mode == "timed":
        if snapshot is not None:
            np.copyto(gm.data, snapshot)
            _zero_buffers(specs)
        engine, tracer, cycles = _run_timed(chip, specs, gm, numerics=numerics, trace=trace,
                                            sanitize=sanitize, jitter=jitter,
                                            beside=numerics and not eager)
    elif not eager:
        run_functional(specs, numerics=numerics)
    result_outputs = {name: gm.read_back(t, shape, copy=numerics)
                      for name, (t, shape) in outputs.items()}
    t_run = time.perf_counter()
    stats = collect_stats(chip, specs, tracer, cycles, engine if mode == "timed" else None)
    if mode == "timed":
        engine.release()
    stats["wall_seconds"] = {"record": t_record - t0, "run": t_run - t_record,
                             "total": time.perf_counter() - t0}
    return Result(outputs=result_outputs, cycles=math.ceil(cycles - 1e-9), chip=chip, mode=mode,
                  tiling=tiling, workspace_bytes=workspace_bytes, stats=stats, tracer=tracer)
