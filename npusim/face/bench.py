"""``npusim bench``: simulator speed on this machine, measured, not asserted.

Each case runs in a process of its own (forked), so its peak resident memory is its own: the
report gives the simulated instructions (set/wait flags included, buffer marks excluded), the
wall-clock seconds of the simulation (recording the streams, the run and the stats; making the
random inputs is not counted), their ratio, the CPU seconds of the case (its process and those
it forked, inputs included: on a shared host the wall time follows the load, this far less),
the process's peak RSS and that of the largest process it forked beside its timing runs
(numerics, race check: ``npusim/engine/beside.py``; they share GM with it, so the two overlap).
The groups:

- ``micro``: the engine's micro-kernels (vector, GM stream, cube matmul), each again with the
  sanitizer and the tracer off to show their share;
- ``standard``: the cases the simulator's speed is judged on (SiluBackward 8M fp16; ResNet-50
  conv2_x backward at batch 8 with numerics; a 1x1 convolution whose dx and dw are 2048^3 GEMMs,
  numerics off), all on atlas-a2 with the default options otherwise;
- ``ops``: every operator of the command at its default size, default options;
- ``large`` (only when asked for: minutes, GBs): SiluBackward fp16 32M elements, and the 1x1
  convolution whose dx and dw are 6144^3 GEMMs with numerics on, default options otherwise;
- ``explain`` (only when asked for; with ``large`` also its 6144^3 convolution): the standard
  cases followed by ``result.explain()`` (the critical path and its what-ifs); the row's
  ``explain_s`` is that call's wall time, the peak RSS includes it.
- ``memory`` (only when asked for: about half an hour): the large runs whose peak memory issue
  24 bounded (``npusim/face/bench_memory.py``).
- ``predict`` (only when asked for: minutes): ``npusim predict resnet50-backward --jobs 2`` at
  batch 32 and 256 on both default chips, the cache of points off; the RSS column is the
  largest of the process and its workers.

``--json FILE`` writes the rows, so two checkouts can be compared: ``--against FILE`` (a
``--json`` file of another checkout, same machine) adds each case's speed-up over that run and,
when the standard group ran in both, the geometric mean of its three speed-ups.
"""

import json
import math
import multiprocessing
import resource
import signal
import time

from npusim.errors import NpusimError
from npusim.face import interrupt

GROUPS = ("micro", "standard", "ops", "large", "explain", "memory", "predict", "fast")
DEFAULT_GROUPS = ("micro", "standard", "ops")


def _micro(quick: bool):
    from npusim.micro.matmul import run_matmul
    from npusim.micro.stream import run_stream
    from npusim.micro.vector import run_vector

    tiles = 16 if quick else 64
    yield "vector add fp16, 48 AIV", run_vector, dict(op="add", block_dim=48, tiles=tiles,
                                                      tile_length=4096), True
    yield "vector exp*mul fp16, 48 AIV", run_vector, dict(
        op="exp_mul", block_dim=48, tiles=tiles, tile_length=4096), True
    yield "vector exp*mul fp16, 48 AIV, functional", run_vector, dict(
        op="exp_mul", block_dim=48, tiles=tiles, tile_length=4096, mode="functional"), False
    yield "vector exp*mul fp16, 32 cores, atlas-training", run_vector, dict(
        op="exp_mul", chip="atlas-training", block_dim=32, tiles=tiles, tile_length=4096), True
    mb = 4 if quick else 16
    yield f"GM stream 48 x {mb} MB, numerics off", run_stream, dict(
        block_dim=48, per_core_bytes=mb << 20), True
    k = 256 if quick else 1024
    yield f"cube matmul 128x128x{k} fp16, 1 AIC", run_matmul, dict(m=128, n=128, k=k,
                                                                   base_k=128), True


def _case_run(op: str, shape, dtype="float16", params=None, **options):
    """Run a registered operator on seeded inputs (not timed: making them)."""
    import numpy as np

    from npusim.cases import CASES

    case = CASES[op]
    args, kwargs = case.make(tuple(shape), dtype, case.parse_params(params or {}),
                             np.random.default_rng(0))
    return case.function()(*args, **kwargs, **options)


def _standard(quick: bool):
    n = (1 << 18) if quick else (8 << 20)
    yield f"SiluBackward fp16 {n >> 10}K elements", _case_run, dict(
        op="silu_backward", shape=(n,)), False
    b, hw = (1, 14) if quick else (8, 56)
    yield f"ConvolutionBackward {b}x64x{hw}x{hw} 3x3, numerics on", _case_run, dict(
        op="convolution_backward", shape=(b, 64, hw, hw), params={"weight": "64x3"}), False
    c = 256 if quick else 2048
    yield (f"ConvolutionBackward 1x1, {c}^3 GEMMs, numerics off",
           *_conv_1x1(c, quick, numerics=False), False)


def _conv_1x1(c: int, quick: bool, **options) -> tuple:
    """A 1x1 convolution backward (dx and dw, no bias) whose GEMMs are c^3."""
    return _case_run, dict(op="convolution_backward", shape=(c // 1024 or 1, c, 32,
                                                             32 if not quick else 8),
                           params={"weight": f"{c}x1", "padding": "0", "output_mask": "1,1,0"},
                           **options)


def _large(quick: bool):
    n = (1 << 20) if quick else (32 << 20)
    yield f"SiluBackward fp16 {n >> 20}M elements", _case_run, dict(
        op="silu_backward", shape=(n,)), False
    c = 512 if quick else 6144
    yield (f"ConvolutionBackward 1x1, {c}^3 GEMMs, numerics on", *_conv_1x1(c, quick), False)


def _explained(**kw):
    """``_case_run`` and then ``result.explain()``, its wall time in the stats."""
    r = _case_run(**kw)
    t0 = time.perf_counter()
    r.explain()
    r.stats["wall_seconds"]["explain"] = time.perf_counter() - t0
    return r


def _explain(quick: bool, large: bool = False):
    for name, _fn, kw, _sub in _standard(quick):
        yield f"{name}, --explain", _explained, kw, False
    if large:
        c = 512 if quick else 6144
        _fn, kw = _conv_1x1(c, quick, numerics=False)
        yield f"ConvolutionBackward 1x1, {c}^3 GEMMs, numerics off, --explain", _explained, \
            kw, False


def _ops(quick: bool):
    from npusim.cases import CASES

    for case in CASES.values():
        if case.available():
            shape = case.quick_shape if quick else case.default_shape
            yield (f"{case.name} {'x'.join(map(str, shape))} {case.dtypes[0]}", _case_run,
                   dict(op=case.name, shape=shape, dtype=case.dtypes[0]), False)


def _measure(fn, kw: dict, conn) -> None:
    """In the child: run, then send (instructions, wall seconds, peak RSS bytes) or an error.
    SIGINT is the parent's to handle: it kills this process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        t0, cpu0 = time.perf_counter(), _cpu_seconds()
        r = fn(**kw)
        wall = r.stats.get("wall_seconds", {}).get("total") or time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        beside = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        conn.send(("ok", r.stats["instructions"], wall, rss, beside, r.cycles, r.mode,
                   r.stats.get("wall_seconds", {}).get("explain"), _cpu_seconds() - cpu0))
    except Exception as exc:  # noqa: BLE001 - reported as the case's row, not a crash
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def _cpu_seconds() -> float:
    """CPU seconds (user and system) of this process and the processes it has reaped."""
    own, kids = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                      resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def measure(fn, kw: dict) -> dict:
    """Run one case in a forked process; its row."""
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_measure, args=(fn, kw, child))
    proc.start()
    child.close()
    try:
        got = parent.recv() if parent.poll(3600) else ("error", "no answer within an hour")
    except EOFError:
        got = ("error", f"the case's process died (exit {proc.exitcode}; out of memory?)")
    except BaseException:          # Ctrl-C: the case's process goes too
        proc.kill()
        proc.join()
        raise
    proc.join()
    if got[0] != "ok":
        return {"error": got[1]}
    _, n, wall, rss, beside, cycles, mode, explain, cpu = got
    row = {"instructions": n, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
           "instr_per_s": round(n / wall),
           "peak_rss_mb": round(rss / 2**20, 1), "beside_peak_rss_mb": round(beside / 2**20, 1),
           "cycles": cycles, "mode": mode}
    if explain is not None:
        row["explain_s"] = round(explain, 3)
    return row


def run_bench(quick: bool = False, groups=DEFAULT_GROUPS, json_path=None,
              against=None) -> int:
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        raise NpusimError(f"bench group {unknown[0]!r}: allowed {', '.join(GROUPS)}")
    before = load_rows(against) if against else None
    rows = []
    fast = None
    if "fast" in groups:             # its own table: whole against fast, case by case
        from npusim.face.bench_fast import run_fast_bench

        fast = run_fast_bench(quick)
        groups = [g for g in groups if g != "fast"]
    if groups:
        print(f"{'case':<52}{'instr':>10}{'wall s':>9}{'instr/s':>10}{'RSS MB':>9}  notes")
    from npusim.face import bench_memory

    makers = {"micro": _micro, "standard": _standard, "ops": _ops, "large": _large,
              "explain": lambda q: _explain(q, large="large" in groups),
              "memory": bench_memory.cases, "predict": bench_memory.predict_cases}
    for group in groups:
        for name, fn, kw, bare in makers[group](quick):
            row = {"group": group, "case": name, **measure(fn, kw)}
            if bare and "error" not in row:
                off = measure(fn, {**kw, "sanitize": False, "trace": False})
                row["bare_instr_per_s"] = off.get("instr_per_s")
            if before is not None:
                row["speedup"] = speedup(row, before.get((group, name)))
                row["cpu_speedup"] = cpu_speedup(row, before.get((group, name)))
            rows.append(row)
            _print(row)
            interrupt.check()
    if before is not None:
        _print_geomean(rows)
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"quick": quick, "rows": rows, **({"fast": fast} if fast else {})}, f,
                      indent=1)
            f.write("\n")
        print(f"wrote {json_path}")
    return 1 if any("error" in r for r in rows) else 0


def load_rows(path) -> dict:
    """The rows of an earlier ``--json`` file by (group, case); NpusimError if unreadable."""
    try:
        with open(path) as f:
            rows = json.load(f)["rows"]
        return {(r["group"], r["case"]): r for r in rows}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise NpusimError(f"--against {path}: not a bench --json file ({exc})") from None


def speedup(row: dict, old: dict | None):
    """Earlier wall time over this one, or None when either run failed or is missing."""
    if old is None or "error" in old or "error" in row or not row["wall_s"]:
        return None
    return round(old["wall_s"] / row["wall_s"], 3)


def cpu_speedup(row: dict, old: dict | None):
    """Earlier CPU seconds over these, or None when either run lacks them."""
    if old is None or not old.get("cpu_s") or not row.get("cpu_s"):
        return None
    return round(old["cpu_s"] / row["cpu_s"], 3)


def _print_geomean(rows: list) -> None:
    for key, what in (("speedup", "wall"), ("cpu_speedup", "CPU")):
        ups = [r.get(key) for r in rows if r["group"] == "standard"]
        if len(ups) == 3 and None not in ups:
            print(f"standard cases: {math.prod(ups) ** (1 / 3):.2f}x on the geometric mean "
                  f"of {what} time ({' / '.join(f'{u:.2f}x' for u in ups)})")


def _print(row: dict) -> None:
    if "error" in row:
        print(f"{row['case']:<52}  error: {row['error']}")
        return
    notes = (f"without sanitizer and tracer: {row['bare_instr_per_s']:,} instr/s"
             if row.get("bare_instr_per_s") else "")
    if row.get("beside_peak_rss_mb"):
        who = "largest worker" if row.get("group") == "predict" else "beside"
        notes = f"{who}: {row['beside_peak_rss_mb']:.0f} MB" + (f"; {notes}" if notes else "")
    if row.get("speedup"):
        cpu = f" ({row['cpu_speedup']:.2f}x in CPU)" if row.get("cpu_speedup") else ""
        notes = f"{row['speedup']:.2f}x the earlier run{cpu}" + (f"; {notes}" if notes else "")
    notes = f"CPU {row['cpu_s']:.2f} s" + (f"; {notes}" if notes else "")
    if row.get("explain_s") is not None:
        notes = f"explain {row['explain_s']:.2f} s" + (f"; {notes}" if notes else "")
    print(f"{row['case']:<52}{row['instructions']:>10,}{row['wall_s']:>9.2f}"
          f"{row['instr_per_s']:>10,}{row['peak_rss_mb']:>9.0f}  {notes}", flush=True)
