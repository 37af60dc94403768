"""Turning tracer records into views: Chrome trace JSON, a line trace, memory and GM timelines.

The Chrome trace (trace event format) opens in Perfetto and chrome://tracing: one process per
core named as the chip names it (``aiv3``, ``aic0``, ``core5``), one thread per pipe named as
msprof does (``PIPE-MTE2``), ``X`` slices in microseconds at the chip's clock with the
instruction's operands in ``args``, ``C`` counters for live bytes per buffer and for GM
bandwidth, and flow arrows from each ``set_flag`` to the ``wait_flag`` it releases. The file is
written by string formatting, one event per line, to a temporary file that replaces the target
only when complete.
"""

import json
import math
import os
import tempfile
from collections import defaultdict, deque

PIPE_ORDER = ("S", "MTE2", "MTE1", "M", "V", "MTE3", "FIX")


def write_chrome_trace(result, path) -> str:
    """Write ``result``'s trace to ``path`` atomically; return the path."""
    tracer = result.tracer
    if tracer is None:
        from npusim.errors import NpusimError
        raise NpusimError("this result has no trace: run with mode='timed' and trace=True")
    us = 1e6 / result.chip.clock_hz
    labels = result.stats.get("core_labels") or []
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        from npusim.errors import NpusimError
        raise NpusimError(f"cannot write the trace to {path}: the folder {folder} does not "
                          "exist")
    fd, tmp = tempfile.mkstemp(prefix=".trace-", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            f.write('{"displayTimeUnit": "ns", "traceEvents": [\n')
            chunk, sep = [], ""
            for line in _events(tracer, labels, us, result):
                chunk.append(line)
                if len(chunk) >= 20000:
                    f.write(sep + ",\n".join(chunk))
                    chunk, sep = [], ",\n"
            f.write((sep if chunk else "") + ",\n".join(chunk) + "\n]}\n")
        os.chmod(tmp, 0o666 & ~_umask())      # mkstemp's file is private; a new file is not
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _events(tracer, labels, us, result):
    cores = sorted({r[0] for r in tracer.records} | {m[0] for m in tracer.marks})
    gm_pid = (max(cores) + 1) if cores else 0
    core_pipes = result.stats.get("core_pipes") or {}
    for c in cores:
        name = labels[c] if c < len(labels) else f"core{c}"
        yield _meta("process_name", c, None, name)
        yield _meta("process_sort_index", c, None, c)
        has = set(core_pipes.get(name, PIPE_ORDER))   # a lane for each pipe the core has
        for t, pipe in enumerate(PIPE_ORDER):
            if pipe in has:
                yield _meta("thread_name", c, t, f"PIPE-{pipe}")
                yield _meta("thread_sort_index", c, t, t)
    yield _meta("process_name", gm_pid, None, "GM")
    tid = {p: i for i, p in enumerate(PIPE_ORDER)}
    flows = _flow_pairs(tracer.records)
    described: dict = {}   # id -> (bytes, operands JSON) of an instruction traced before
    for n, (core, pipe, inst, issue, start, end) in enumerate(tracer.records):
        hit = described.get(id(inst))     # the DSL re-issues repeated instructions
        if hit is None:
            hit = described[id(inst)] = (inst.moved_bytes(), _json_items(inst.operands()))
        nbytes, extra = hit
        args = (f'"issue_cycle": {issue:.2f}, "start_cycle": {start:.2f}, "end_cycle": {end:.2f}'
                + (f', "bytes": {nbytes}' if nbytes else "") + (", " + extra if extra else ""))
        ts, te = round(start * us, 6), round(end * us, 6)   # the end rounded once: a slice
        yield (f'{{"ph": "X", "name": "{inst.name}", "cat": "{inst.kind}", "pid": {core}, '
               f'"tid": {tid[pipe]}, "ts": {ts:.6f}, "dur": {te - ts:.6f}, '   # ends where
               f'"args": {{{args}}}}}')                                         # the next starts
        if n in flows:
            ph, fid = flows[n]
            ts = (end if ph == "s" else end) * us
            bp = ', "bp": "e"' if ph == "f" else ""
            yield (f'{{"ph": "{ph}", "name": "flag", "cat": "flag", "id": {fid}, "pid": {core}, '
                   f'"tid": {tid[pipe]}, "ts": {ts:.6f}{bp}}}')
    yield from _memory_counters(tracer, us)
    for t, bps in gm_bandwidth(result, buckets=200):
        yield (f'{{"ph": "C", "name": "GM bandwidth (GB/s)", "pid": {gm_pid}, '
               f'"ts": {t * us:.6f}, "args": {{"GB/s": {bps / 1e9:.3f}}}}}')
    end = result.cycles * us
    yield (f'{{"ph": "i", "name": "end of run", "s": "g", "pid": {gm_pid}, "tid": 0, '
           f'"ts": {end:.6f}}}')


def _json_items(d: dict) -> str:
    """The inside of a JSON object for a small dict of str/int/float/bool (fast path)."""
    parts = []
    for key, value in d.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, float) and not math.isfinite(value):
            text = f'"{value!r}"'          # JSON has no inf or nan: written as a string
        elif isinstance(value, (int, float)):
            text = repr(value)
        elif isinstance(value, str) and '"' not in value and "\\" not in value:
            text = f'"{value}"'
        else:
            text = json.dumps(value, default=str)
        parts.append(f'"{key}": {text}')
    return ", ".join(parts)


def _meta(kind, pid, tid, value) -> str:
    key = "sort_index" if kind.endswith("sort_index") else "name"
    tid_part = f', "tid": {tid}' if tid is not None else ""
    return (f'{{"ph": "M", "name": "{kind}", "pid": {pid}{tid_part}, '
            f'"args": {{"{key}": {json.dumps(value)}}}}}')


def _flow_pairs(records) -> dict:
    """Record index -> ("s"|"f", flow id): each set_flag paired with the wait it releases."""
    sets: dict = defaultdict(deque)
    flows, next_id = {}, 1
    order = sorted(range(len(records)), key=lambda i: records[i][5])
    for i in order:
        core, _, inst, *_ = records[i]
        if inst.kind == "set":
            sets[(core, inst.key)].append(i)
        elif inst.kind == "wait" and sets[(core, inst.key)]:
            j = sets[(core, inst.key)].popleft()
            flows[j], flows[i] = ("s", next_id), ("f", next_id)
            next_id += 1
    return flows


def memory_timeline(tracer):
    """{(core, buffer): [(time, live bytes), ...]} from the buffer marks, in time order."""
    live, series = defaultdict(int), defaultdict(list)
    for core, time, buffer, delta, _label in sorted(tracer.marks, key=lambda m: m[1]):
        live[(core, buffer)] += delta
        series[(core, buffer)].append((time, live[(core, buffer)]))
    return dict(series)


def _memory_counters(tracer, us):
    for (core, buffer), points in memory_timeline(tracer).items():
        for time, nbytes in points:
            yield (f'{{"ph": "C", "name": "{buffer} live bytes", "pid": {core}, '
                   f'"ts": {time * us:.6f}, "args": {{"{buffer}": {nbytes}}}}}')


def gm_bandwidth(result, buckets: int = 200):
    """[(bucket start cycle, bytes per second)] of GM traffic, spread evenly over each move."""
    span = max(result.cycles, 1)
    width = span / buckets
    acc = [0.0] * buckets
    for _c, _p, inst, _i, start, end in result.tracer.records:
        if not inst.touches_gm:
            continue
        nbytes = inst.moved_bytes()
        a, b = int(start / width), min(int(end / width), buckets - 1)
        if b <= a:
            acc[min(a, buckets - 1)] += nbytes
            continue
        rate = nbytes / max(end - start, 1e-9)
        for k in range(a, b + 1):
            lo, hi = max(start, k * width), min(end, (k + 1) * width)
            acc[k] += rate * max(hi - lo, 0.0)
    seconds = width / result.chip.clock_hz
    return [(k * width, acc[k] / seconds) for k in range(buckets)]


def line_trace(result, core: int = 0) -> str:
    """One line per instruction of one core: issue, start, end, pipe, name, why it waited."""
    records = [r for r in result.tracer.records if r[0] == core]
    records.sort(key=lambda r: (r[4], PIPE_ORDER.index(r[1])))
    prev_end: dict = {}
    lines = [f"{'issue':>10} {'start':>10} {'end':>10}  {'pipe':<9} {'instruction':<22} why"]
    for _c, pipe, inst, issue, start, end in records:
        why = _why(result.chip, inst, issue, start, end, prev_end.get(pipe))
        prev_end[pipe] = (end, inst)
        lines.append(f"{issue:>10.1f} {start:>10.1f} {end:>10.1f}  PIPE-{pipe:<4} "
                     f"{inst.name:<22} {why}")
    return "\n".join(lines)


def _why(chip, inst, issue, start, end, prev) -> str:
    if inst.kind == "wait":
        waited = end - chip.flag_cycles - start
        flag = f"{inst.src}->{inst.dst} id {inst.event_id}"
        return f"waited {waited:.0f} cycles for flag {flag}" if waited > 0.5 else \
            f"flag {flag} already set"
    reason = []
    if start > issue + 0.5:
        if prev is not None and abs(prev[0] - start) < 0.5:
            reason.append(f"pipe busy with {prev[1].name} until {start:.0f}")
        else:
            reason.append(f"started {start - issue:.0f} cycles after issue (flag hand-off)")
    if inst.kind == "exec" and inst.touches_gm:
        own = inst.head(chip) + inst.body(chip)
        if end - start > own + 0.5:
            reason.append(f"GM bandwidth shared with other cores: +{end - start - own:.0f}")
    return "; ".join(reason) or "ran as soon as issued"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
