"""One executor for every study: points in, plain records out.

A point is a plain dict: ``op``, ``chip``, ``shape``, ``dtype``, ``params`` (the ``--param``
texts), ``tiling`` (a dict of overrides, or None for the default), ``numerics`` (False: timing
only, where the kernel allows it), ``check`` (compare the outputs with the golden), ``seed``,
``explain`` (record the critical path: its largest shares in ``path`` and, per kernel of the
operator, its cycles by what in ``kernel_paths``), and optionally ``form`` (``"5hd"``: the
case's graph form on NC1HWC0 activations, ``npusim/cases/five_hd.py``; absent: the aclnn
operator).
``run_point`` turns it into a plain record (a timing-only point runs without the sanitizer,
which does not change cycles, and without the golden unless it asks for a check; the run's
memory is collected before the next point, as reference cycles hold its GM); any executor gives
the same records:

- in-process (``jobs=1``);
- a local process pool (``jobs=N``);
- a Dask distributed cluster (``scheduler="tcp://host:8786"``; the optional extra
  ``npusim[cluster]``), whose workers run the same ``run_point``.

A point that cannot run (its tiling does not fit, a tiling value is not allowed, its arguments
break a rule) is a record with its status and message, never an exception out of the executor.
"""

import gc
import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager

from npusim.errors import NpusimError, NumericsRequiredError, TilingError
from npusim.face import interrupt

PIPES = ("S", "MTE2", "MTE1", "M", "V", "MTE3", "FIX")
BUFFERS = ("UB", "L1", "L0A", "L0B", "L0C", "BT", "FB")


def run_point(point: dict) -> dict:
    """Run one point; return its record (never raises an NpusimError)."""
    t0 = time.perf_counter()
    record = {"tiling": point.get("tiling") or {}, "status": "ok", "error": "", "cycles": None,
              "time_us": None, "roofline_ratio": None, "busy": {}, "peak_bytes": {},
              "numerics": bool(point.get("numerics")), "check": "", "effective_tiling": {},
              "kernels": [], "instruction_counts": {}}
    try:
        _fill(record, _run(point, record), point)
    except TilingError as exc:
        message = " ".join(str(exc).split())
        record.update(status=tiling_status(message), error=message)
    except NpusimError as exc:
        record.update(status="error", error=" ".join(str(exc).split()))
    finally:
        gc.collect()     # the run's GM and buffers sit in reference cycles: free them now
    record["wall_s"] = round(time.perf_counter() - t0, 4)
    return record


FIT_WORDS = ("bytes of", "fit", "event ids", "buffers are in use")


def tiling_status(message: str) -> str:
    """A TilingError's status: "does not fit" when the tiling asks for more than the chip
    has (bytes of a buffer, event ids), else "not allowed" (a value the field does not take:
    not a multiple of 16, more cores than the chip has, a derived field set)."""
    return "does not fit" if any(w in message for w in FIT_WORDS) else "not allowed"


def _run(point: dict, record: dict):
    from npusim.cases import find_case
    from npusim.cases.run import run_case

    case = find_case(point["op"])
    params = case.parse_params(point.get("params") or {})
    numerics = bool(point.get("numerics") or point.get("check"))
    run_args = (case, point["chip"], tuple(point["shape"]), point["dtype"], params)
    options = dict(tiling=point.get("tiling") or None, seed=point.get("seed", 0),
                   trace="path" if point.get("explain") else False,   # each kernel's path only
                   check=bool(point.get("check")),     # the golden only when asked for
                   form=point.get("form", "aclnn"))    # the graph form on NC1HWC0: "5hd"
    fast = bool(point.get("fast")) and not numerics    # a fast run is timing only
    try:   # a timing-only point skips the sanitizer too (same cycles, far less memory)
        return run_case(*run_args, numerics=numerics, sanitize=numerics, fast=fast, **options)
    except NumericsRequiredError:
        if numerics:
            raise
        record["numerics"] = True       # the kernel's control flow reads the data
        return run_case(*run_args, numerics=True, sanitize=False, **options)


def _fill(record: dict, run, point: dict) -> None:
    from npusim.cases.run import metrics, tiling_dict

    m = metrics(run)
    record.update(cycles=int(m["cycles"]), time_us=round(m["time_us"], 4),
                  roofline_ratio=round(m.get("roofline_ratio", 0.0), 4), bound=m["bound"],
                  bound_us=round(m["bound_us"], 4), bytes=int(m["bytes"]),
                  flops=float(m["flops"]),
                  busy={p: round(u, 4) for p, u in m["pipe_utilisation"].items()},
                  peak_bytes=dict(m["peak_live_bytes"]),
                  effective_tiling=tiling_dict(run.result.tiling),
                  kernels=[{"name": k["name"], "op_type": k.get("op_type", k["name"]),
                            "impl": k.get("impl", "ascendc"), "cores": k["cores"],
                            "cycles": int(k["cycles"]),
                            "wait_cycles": int(k.get("wait_cycles", 0))}
                           for k in run.result.stats.get("kernels", [])],
                  instruction_counts=dict(run.result.stats.get("instruction_counts") or {}))
    if point.get("fast"):     # what the steady skips left out (npusim/dsl/steady.py)
        record["fast"] = {"instructions_left_out": sum(
            k.get("fast", {}).get("instructions_left_out", 0)
            for k in run.result.stats.get("kernels", []))}
    if point.get("explain"):
        path = run.result.critical_path()
        record["path"] = path_shares(run.result, path=path)
        record["kernel_paths"] = [{what: round(c, 3) for what, c in k.by_what.items()}
                                  for k in path.kernels]
    if point.get("check"):
        record["check"] = "; ".join(f"{name}: {text}" for name, _, text in run.checks)
        if not run.ok:
            record["status"] = "mismatch"


def path_shares(result, top: int = 3, path=None) -> list:
    """[[what, share of the cycles], ...]: the ``top`` largest shares of the run's critical
    path (``Result.critical_path``, or ``path`` if already taken), largest first."""
    path = path if path is not None else result.critical_path()
    shares = sorted(path.by_what.items(), key=lambda kv: -kv[1])[:top]
    return [[what, round(cycles / path.cycles, 4) if path.cycles else 0.0]
            for what, cycles in shares]


def run_points(points: list, *, jobs: int = 1, scheduler: str | None = None,
               on_record=None, fast: bool = False) -> list:
    """Run ``points``; call ``on_record(index, record)`` as each finishes; return the records
    in the points' order. A point simulated before (same point, chip file and code) is read
    from the cache (``npusim/studies/cache.py``) instead, unless ``NPUSIM_NO_CACHE=1``.
    ``fast``: every timing-only point is a fast run (``npusim/engine/fast.py``)."""
    from npusim.cases.run import same_launches
    from npusim.studies import cache

    if fast:
        points = [{**p, "fast": True} for p in points]
    records = [None] * len(points)
    todo = []

    def done(i, rec, fresh=True):
        records[i] = rec
        if fresh:
            cache.store(points[i], rec)
        if on_record is not None:
            on_record(i, rec)
        interrupt.check()

    for i, p in enumerate(points):
        hit = cache.load(p)
        if hit is None:
            todo.append(i)
        else:
            done(i, hit, fresh=False)
    missing = [points[i] for i in todo]

    def done_missing(j, rec):
        done(todo[j], rec)

    if not missing:
        return records
    if scheduler:
        _run_dask(missing, scheduler, done_missing)
        return records
    with same_launches() as shared:    # identical launches run once (exact)
        if jobs <= 1 or len(missing) <= 1:
            for j, p in enumerate(missing):
                done_missing(j, run_point(p))
        else:
            _run_pool(missing, min(jobs, len(missing)), done_missing, shared)
    return records


def _run_pool(points: list, jobs: int, done, shared: str | None = None) -> None:
    """The points on a local process pool. Workers ignore SIGINT (a terminal's Ctrl-C reaches
    the whole process group); on any exception out of the wait here (KeyboardInterrupt first
    of all, whichever process got the signal) the workers are killed and reaped before it goes
    on, so the command ends at once with no process left behind. ``shared``: the directory
    of the launch memo's scope (``npusim.cases.run.same_launches``) the workers join."""
    pool = ProcessPoolExecutor(max_workers=jobs, initializer=_worker_start, initargs=(shared,))
    try:
        futures = {pool.submit(run_point, p): i for i, p in enumerate(points)}
        for fut in as_completed(futures):
            i = futures[fut]
            try:
                record = fut.result()
            except BrokenProcessPool:
                raise NpusimError(f"a worker process died while running {describe(points[i])}"
                                  " (out of host memory? try fewer --jobs)") from None
            done(i, record)
    except BaseException:
        with _no_sigint():
            _kill_pool(pool)
        raise
    pool.shutdown()


def _worker_start(shared: str | None = None) -> None:
    """In each pool worker: leave SIGINT to the parent, which stops the workers itself; join
    the parent's launch memo."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from npusim.cases.run import join_same_launches

    join_same_launches(shared)


def _kill_pool(pool: ProcessPoolExecutor) -> None:
    """Kill and reap the pool's workers, then shut it down without waiting for its work.
    (``_processes`` is the executor's own map of its workers; Python 3.14 has
    ``kill_workers()`` for this.)"""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for proc in procs:
        if proc.is_alive():
            proc.kill()
    for proc in procs:
        proc.join(timeout=2)
    pool.shutdown(wait=False, cancel_futures=True)


@contextmanager
def _no_sigint():
    """SIGINT ignored while a clean-up runs (a second Ctrl-C must not cut it short); only the
    main thread can set it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def kernel_cycles(record: dict, name: str):
    """The cycles of the record's kernels named ``name`` (instance name or CANN op_type),
    summed; None when the op ran no such kernel."""
    found = [k["cycles"] for k in record["kernels"] if name in (k["name"], k["op_type"])]
    return sum(found) if found else None


def describe(point: dict) -> str:
    return (f"{point['op']} {'x'.join(map(str, point['shape']))} {point['dtype']} on "
            f"{point['chip']}")


def default_jobs() -> int:
    return max(1, os.cpu_count() or 1)


def connect(scheduler: str):
    """A Dask distributed Client for ``scheduler``, or one clear NpusimError."""
    try:
        from distributed import Client
    except ImportError:
        raise NpusimError("--scheduler needs Dask distributed: pip install "
                          "\"npusim[cluster]\"") from None
    try:
        return Client(scheduler, timeout="10s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise NpusimError(f"cannot reach the Dask scheduler at {scheduler}: "
                          f"{' '.join(str(exc).split())[:200]}") from None


def quiet_profiler(dask_worker=None) -> None:
    """Stop a Dask worker's statistical profiler: it samples every thread's stack every 10 ms,
    which slows a pure-Python simulation several-fold (measured: a 2-worker sweep took 4x as
    long with it on)."""
    if dask_worker is not None:
        callback = dask_worker.periodic_callbacks.get("profile")
        if callback is not None:
            callback.stop()


def _run_dask(points: list, scheduler, done) -> None:
    from distributed import as_completed as dask_completed

    client = scheduler if not isinstance(scheduler, str) else connect(scheduler)
    try:
        try:
            client.run(quiet_profiler)
        except Exception:  # noqa: BLE001 - a worker that keeps its profiler is only slower
            pass
        futures = client.map(run_point, points, pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        try:
            for fut in dask_completed(futures):
                done(index[fut.key], fut.result())
        except BaseException:     # Ctrl-C, or an error: the cluster stops this work
            with _no_sigint():
                client.cancel(futures)
            raise
    finally:
        if isinstance(scheduler, str):
            client.close()
