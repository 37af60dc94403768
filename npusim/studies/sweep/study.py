"""Tiling sweeps: a space of tilings in, the rows out, fastest first in the report.

``sweep`` runs the operator's default tiling once (timing only), checks the swept fields
against it, turns the space into points and hands them to the executor. Each point runs timing
only (numerics off) where the kernel allows it; a tiling that does not fit is a row with its
TilingError. With ``out``, rows are appended to ``sweep.csv`` as points finish, so an interrupted
sweep keeps its work and ``resume=True`` skips the points already there, once the folder's
record of what it swept matches this sweep (``npusim/studies/sweep/store.py``); ``sweep.json``,
``sweep.md``, ``sweep.png`` and ``pareto.png`` are written (each whole, by rename) at the end.
``check="best"`` reruns the fastest point with numerics on and compares it bit for bit with
the golden; ``"all"`` checks every point; ``"none"`` none. A sweep where no point ran is an
NpusimError (the first point's reason), with no report written.
"""

from npusim.errors import NpusimError
from npusim.face.progress import Bar
from npusim.studies.executor import connect, run_point, run_points
from npusim.studies.sweep.space import parse_space, points
from npusim.studies.sweep.store import SweepStore, identity

CHECKS = ("best", "all", "none")


def sweep(op_name, *, chip="atlas-a2", shape=None, dtype=None, params=None, space,
          samples=None, seed=0, jobs=1, scheduler=None, check="best", out=None,
          resume=False, progress=None) -> list[dict]:
    """Run ``op_name`` over the tiling ``space`` ({field: values}, or ``FIELD=SPACE`` texts);
    return one record per point (``tiling``, ``status``, ``cycles``, ``time_us``, ...)."""
    from npusim.cases import find_case, parse_dtype

    case = find_case(op_name)
    if check not in CHECKS:
        raise NpusimError(f"--check {check!r}: allowed {', '.join(CHECKS)}")
    base = {"op": case.name, "chip": chip, "shape": list(shape or case.default_shape),
            "dtype": parse_dtype(dtype or case.dtypes[0], case), "params": dict(params or {}),
            "seed": 0}
    case.parse_params(base["params"])
    spaces = _spaces(space)
    default = run_point({**base, "tiling": None, "explain": True})   # what limits it
    if default["status"] != "ok":
        raise NpusimError(f"{case.name} does not run on {chip} at shape "
                          f"{'x'.join(map(str, base['shape']))}: {default['error']}")
    _check_fields(case, spaces, default)
    pts = [{**base, "tiling": t, "numerics": check == "all", "check": check == "all"}
           for t in points(spaces, samples, seed)]
    client = connect(scheduler) if isinstance(scheduler, str) else scheduler
    try:
        store = (SweepStore(out, identity(case, base, check, spaces, samples, seed), resume)
                 if out else None)
        rows = _execute(pts, store, jobs, client, progress)
    finally:
        if client is not None and isinstance(scheduler, str):
            client.close()
    if not any(r["status"] == "ok" for r in rows):
        if store is not None:
            store.discard()
        _none_ran(case, rows)
    best = _check_best(rows, base) if check == "best" else None
    if store is not None:
        from npusim.studies.sweep.report import write_report

        write_report(store, case, base, rows, default, best, list(spaces))
    return rows


def _none_ran(case, rows: list) -> None:
    """One NpusimError: no point ran, how many failed how, and the first one's reason."""
    counts = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    first = rows[0]
    shown = ", ".join(f"{k}={v}" for k, v in first["tiling"].items())
    raise NpusimError(f"no point of the {case.name} sweep ran ("
                      f"{', '.join(f'{n} {what}' for what, n in counts.items())}); the first, "
                      f"{shown}: {first['error'] or first['status']}")


def _spaces(space) -> dict:
    if isinstance(space, dict):
        spaces = {k: v if isinstance(v, range) else list(v) for k, v in space.items()}
    else:
        spaces = dict(parse_space(item) for item in space)
    if not spaces or any(not v for v in spaces.values()):
        raise NpusimError("give at least one --tiling FIELD=SPACE with at least one value")
    return spaces


def _check_fields(case, spaces: dict, default: dict) -> None:
    fields = default["effective_tiling"]
    unknown = [f for f in spaces if f not in fields]
    if unknown:
        raise NpusimError(f"{case.name} has no tiling field {unknown[0]!r}; fields: "
                          f"{', '.join(fields)}")


def _execute(pts: list, store, jobs, client, progress) -> list:
    rows = [None] * len(pts)
    todo = []
    for i, p in enumerate(pts):
        kept = store.finished(p["tiling"]) if store else None
        if kept is not None:
            rows[i] = kept
        else:
            todo.append(i)
    bar = Bar(len(pts), len(pts) - len(todo), progress)

    def finished(k, record):
        rows[todo[k]] = record
        if store:
            store.append(record)
        bar.step()

    run_points([pts[i] for i in todo], jobs=jobs, scheduler=client, on_record=finished)
    bar.close()
    return rows


def _check_best(rows: list, base: dict):
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        return None
    best = min(ok, key=lambda r: r["cycles"])
    checked = run_point({**base, "tiling": best["tiling"], "numerics": True, "check": True,
                         "explain": True})
    best["check"] = checked["check"] or checked["error"]
    best["path"] = checked.get("path")
    if checked["status"] != "ok":
        best["status"] = checked["status"]
    return best
