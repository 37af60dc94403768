"""The trace schema check every kernel's trace must pass (used by several test files)."""

import json
from collections import defaultdict

PIPE_NAMES = {"PIPE-S", "PIPE-MTE2", "PIPE-MTE1", "PIPE-M", "PIPE-V", "PIPE-MTE3", "PIPE-FIX"}


def check_trace(result, path) -> dict:
    """Write ``result``'s Chrome trace to ``path`` and check it; return the parsed JSON."""
    result.write_trace(path)
    with open(path) as f:
        data = json.load(f)
    events = data["traceEvents"]
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] in ("process_name", "thread_name")}
    labels = set(result.stats["core_labels"])
    core_names = {v for (pid, tid), v in names.items() if tid is None} - {"GM"}
    assert core_names == labels, (core_names, labels)
    assert {v for (pid, tid), v in names.items() if tid is not None} <= PIPE_NAMES
    pids = {v: pid for (pid, tid), v in names.items() if tid is None}
    for label, pipes in result.stats["core_pipes"].items():   # lanes: the pipes a core has
        lanes = {v for (pid, tid), v in names.items() if pid == pids[label] and tid is not None}
        assert lanes == {f"PIPE-{p}" for p in pipes}, (label, lanes, pipes)
    slices = [e for e in events if e["ph"] == "X"]
    assert slices, "no instruction slices"
    by_thread = defaultdict(list)
    for e in slices:
        for key in ("name", "pid", "tid", "ts", "dur", "args"):
            assert key in e, (key, e)
        assert e["dur"] >= 0
        by_thread[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_thread.values():   # ends rounded once, so no slice overlaps the next
        spans.sort()
        for (a0, a1), (b0, _) in zip(spans, spans[1:], strict=False):
            assert round(b0, 6) >= round(a1, 6), f"overlapping slices on one pipe: {a0}-{a1} " \
                f"and {b0}"
    end = max(e["ts"] + e["dur"] for e in slices)
    assert abs(end - result.time_us) <= 1e-3 + 1e-6 * result.time_us, (end, result.time_us)
    counters = {e["name"] for e in events if e["ph"] == "C"}
    assert any(n.endswith("live bytes") for n in counters), counters
    assert "GM bandwidth (GB/s)" in counters
    return data
