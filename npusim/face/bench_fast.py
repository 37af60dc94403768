"""``npusim bench --group fast``: how far a fast run (``npusim/engine/fast.py``) is from the
whole run, and how much sooner it ends.

Every row of the validation table (the slow ones too unless ``--quick``), every pinned operator
case (``npusim/face/pinned.py``, timing only), every point of ``npusim predict
resnet50-backward --batch 64`` (8 with ``--quick``; graph forms too) and the batch-256
ResNet-50 3x3 point on both default chips run twice, in this process, with the cache of points
off: whole, then fast.
Printed per case: the whole run's cycles, the fast run's difference from them and the largest
of its kernels', the instructions the fast run left out, and both wall times; then the largest
differences over every case and the speed-up over the cases where something was left out.
"""

import time


def fast_cases(quick: bool) -> list:
    """[(name, point)]: the validation table's points and the pinned cases' (each once), the
    ResNet-50 prediction's points (``resnet_cases``) and the batch-256 3x3 point."""
    from npusim.face.pinned import PINNED_OPS
    from npusim.studies.validate.study import load_table

    out, seen = [], set()
    for row in load_table():
        if (quick and row.slow) or row.key() in seen:
            continue
        seen.add(row.key())
        out.append((row.id, row.point()))
    points = []
    for name, pin in PINNED_OPS.items():
        if pin.point() not in points:
            points.append(pin.point())
            out.append((f"pin {name}", pin.point()))
    out += resnet_cases(8 if quick else 64)
    for chip in ("atlas-training", "atlas-a2"):
        out.append((f"resnet50 3x3 64ch 56x56 batch 256 {chip}", {
            "op": "convolution_backward", "chip": chip, "shape": [256, 64, 56, 56],
            "dtype": "float16", "params": {"weight": "64x3", "padding": "1", "stride": "1",
                                           "output_mask": "1,1,0"},
            "tiling": None, "numerics": False, "check": False, "seed": 0, "explain": True}))
    return out


def resnet_cases(batch: int) -> list:
    """[(name, point)]: every call of ``npusim predict resnet50-backward --batch N`` on both
    default chips, as the prediction runs it, and its graph form on NC1HWC0 where it has one."""
    from npusim.cases import find_case
    from npusim.studies.predict.study import CHIPS, _point
    from npusim.studies.workload import load_workload, rescale

    wl = rescale(load_workload("resnet50-backward"), batch)
    out = []
    for i, call in enumerate(wl.calls, 1):
        five_hd = find_case(call.op).five_hd
        for chip in CHIPS:
            point = _point(call, chip, chip)
            out.append((f"resnet50-backward b{batch} call {i} {chip}", point))
            if five_hd is not None:
                out.append((f"resnet50-backward b{batch} call {i} {chip} 5hd",
                            {**point, "form": "5hd"}))
    return out


def run_fast_bench(quick: bool = False) -> dict:
    """Run the cases both ways; print the table; return ``summarise``'s dict."""
    from npusim.studies import cache
    from npusim.studies.executor import run_point

    rows = []
    print(f"{'case':<58}{'cycles':>12}{'fast':>9}{'kernel':>9}{'left out':>10}{'whole s':>9}"
          f"{'fast s':>8}")
    with cache.disabled():
        for name, point in fast_cases(quick):
            whole, t_whole = _timed(run_point, point)
            fast, t_fast = _timed(run_point, {**point, "fast": True})
            row = _row(name, whole, fast, t_whole, t_fast)
            rows.append(row)
            _print(row)
    return summarise(rows)


def _timed(fn, point):
    t0 = time.perf_counter()
    rec = fn(point)
    return rec, time.perf_counter() - t0


def _row(name, whole: dict, fast: dict, t_whole: float, t_fast: float) -> dict:
    ok = whole.get("cycles") and fast.get("cycles")
    kernel = [(b["cycles"] - a["cycles"]) / a["cycles"]
              for a, b in zip(whole.get("kernels", []), fast.get("kernels", []), strict=False)
              if a["cycles"]]
    return {"case": name, "cycles": whole.get("cycles"), "fast_cycles": fast.get("cycles"),
            "error": (fast["cycles"] - whole["cycles"]) / whole["cycles"] if ok else None,
            "kernel_error": max(kernel, key=abs) if ok and kernel else None,
            "left_out": (fast.get("fast") or {}).get("instructions_left_out", 0),
            "whole_s": round(t_whole, 3), "fast_s": round(t_fast, 3),
            "status": whole["status"] if whole["status"] != "ok" else fast["status"]}


def _print(row: dict) -> None:
    err = f"{row['error']:+.2%}" if row["error"] is not None else row["status"]
    kerr = f"{row['kernel_error']:+.2%}" if row.get("kernel_error") is not None else "-"
    print(f"{row['case'][:57]:<58}{row['cycles'] or '-':>12}{err:>9}{kerr:>9}"
          f"{row['left_out']:>10,}{row['whole_s']:>9.2f}{row['fast_s']:>8.2f}", flush=True)


def summarise(rows: list) -> dict:
    """{"rows", "worst", "worst_kernel", "speedup"}: the cases with the largest |difference|
    of the whole point and of a kernel over every case that ran, and the wall-time speed-up
    over the cases where the fast run left something out."""
    ran = [r for r in rows if r["error"] is not None]
    skipped = [r for r in ran if r["left_out"]]
    worst = max(ran, key=lambda r: abs(r["error"]), default=None)
    kernels = [r for r in ran if r.get("kernel_error") is not None]
    worst_kernel = max(kernels, key=lambda r: abs(r["kernel_error"]), default=None)
    speedup = (sum(r["whole_s"] for r in skipped) / sum(r["fast_s"] for r in skipped)
               if skipped else None)
    if worst is not None:
        print(f"{len(ran)} cases ran, {len(skipped)} with iterations left out; largest "
              f"difference {worst['error']:+.2%} ({worst['case']})"
              + (f", of a kernel {worst_kernel['kernel_error']:+.2%} ({worst_kernel['case']})"
                 if worst_kernel else "")
              + f"; wall time of those {len(skipped)}: "
              + (f"{speedup:.1f}x faster" if speedup else "-"))
    return {"rows": rows, "worst": worst, "worst_kernel": worst_kernel, "speedup": speedup}
