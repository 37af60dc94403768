"""Performance predictions over a workload: each call timed on each chip, compared like for like.

``predict`` turns every (call, chip) of a workload into a point, timing only with the critical
path recorded, and runs them on the sweep's executor (in-process, a process pool or a Dask
cluster). ``npusim.studies.predict.calls`` makes each (call, chip) a row: the call's time, by
kernel and by what limits it on the critical path, and its error band;
``npusim.studies.predict.summary`` compares the chips on the calls every one of them runs (the
others are listed apart, with their time on the chips that run them) and counts the share of
the step's FLOPs and bytes the modelled calls cover.

Every call is predicted in both formats (``npusim.studies.predict.calls``): as its aclnn
operator runs it, and in graph mode, activations kept in NC1HWC0, where a call with a graph
form runs that form as a second point (``npusim.studies.predict.graph``).

``chips`` are chip model names or a user's chip TOML files (a row carries the model's name);
``batch`` rescales a workload whose calls declare a batch dimension
(``npusim.studies.workload.rescale``). Predictions include what the simulator models and
nothing else: the host's launch time between kernels is not in them. A workload of which no
call runs on any of the chips is an NpusimError, not a prediction of 0 us.
"""

import os

from npusim.errors import NpusimError
from npusim.face import provenance
from npusim.studies.executor import run_points
from npusim.studies.predict.calls import call_row
from npusim.studies.predict.calls import classify_record as classify  # noqa: F401 (sweep)
from npusim.studies.predict.graph import run_graph_forms
from npusim.studies.predict.summary import summarise
from npusim.studies.workload import load_workload, rescale

CHIPS = ("atlas-training", "atlas-a2")


def predict(workload, chips=CHIPS, *, jobs: int = 1, scheduler=None, on_record=None,
            batch: int | None = None, on_more=None, fast: bool = False) -> dict:
    """{"workload", "chips", "rows", "totals", ...}: a row per (call, chip), in call order,
    and the like-for-like summary (``npusim.studies.predict.summary``). ``on_record(i, rec)``
    as each point finishes; ``on_more(n)`` when n graph-form points are added to the calls'
    (``npusim.studies.predict.graph``). ``fast``: every point a fast run (its steady loops'
    repeated periods left out, ``npusim/engine/fast.py``; ``npusim bench --group fast``
    measures its error)."""
    wl = workload if hasattr(workload, "calls") else load_workload(workload)
    if batch is not None:
        wl = rescale(wl, batch)
    loaded = _load_chips(chips)
    specs = {name: spec for name, (spec, _) in loaded.items()}
    product = {name: chip.product for name, (_, chip) in loaded.items()}
    pairs = [(call, chip) for call in wl.calls for chip in specs]
    todo = [i for i, (call, chip) in enumerate(pairs)
            if call.modelled and call.runs_on(product[chip])]
    points = [_point(call, specs[chip], chip) for call, chip in (pairs[i] for i in todo)]

    def run_more(more: list) -> list:       # the graph forms' points, after the aclnn ones
        if on_more is not None:
            on_more(len(more))
        return run_points(more, jobs=jobs, scheduler=scheduler, on_record=on_record,
                          fast=fast)

    from npusim.cases.run import same_launches

    with same_launches():    # the graph forms rerun the aclnn forms' cube kernels
        records = run_points(points, jobs=jobs, scheduler=scheduler, on_record=on_record,
                             fast=fast)
        forms = run_graph_forms(pairs, todo, records, points, run_more,
                                explain=wl.formats == "internal")
    rows = [call_row(call, chip, None, wl.formats, elsewhere=not call.runs_on(product[chip]))
            for call, chip in pairs]
    for i, rec in zip(todo, records, strict=True):
        rows[i] = call_row(*pairs[i], rec, wl.formats, spec=specs[pairs[i][1]],
                           graph=forms[i])
    if not any(r["status"] == "ok" for r in rows):
        _none_ran(wl, list(specs), rows)
    result = {"workload": wl, "chips": list(specs), "chip_specs": specs, "batch": wl.batch,
              "formats": wl.formats, "rows": rows, "fast": fast}
    result.update(summarise(wl, list(specs), rows, specs, product))
    result["provenance"] = provenance.stamp(specs.values())
    return result


def _none_ran(wl, chips: list, rows: list) -> None:
    """One NpusimError when no call ran on any chip (every call failed, or no chip chosen
    runs any): the prediction would be 0 us. It names the first call's reason."""
    first = rows[0]
    raise NpusimError(f"{wl.name}: no call ran on {', '.join(chips)}, so there is nothing "
                      f"to predict; call {first['call']} ({first['label']}) on "
                      f"{first['chip']}: {first['status']}: {first['why']}")


def resolve_chips(chips) -> dict:
    """{model name: what to load it by (a name or a TOML path)}, each loaded and checked."""
    return {name: spec for name, (spec, _) in _load_chips(chips).items()}


def _load_chips(chips) -> dict:
    """{model name: (what to load it by, the loaded Chip)}, each checked."""
    from npusim.chip import load_chip

    loaded = {}
    for given in chips:
        if not isinstance(given, str | os.PathLike):
            raise NpusimError(f"chips: {given!r}: a chip name or a chip TOML file")
        spec = str(given)
        chip = load_chip(spec)
        if chip.name in loaded and loaded[chip.name][0] != spec:
            raise NpusimError(f"--chips: two chip models are named {chip.name!r} "
                              f"({loaded[chip.name][0]}, {spec}); give each TOML its own name")
        loaded[chip.name] = (spec, chip)
    return loaded


def _point(call, spec: str, chip: str) -> dict:
    return {"op": call.op, "chip": spec, "shape": list(call.shape), "dtype": call.dtype_for(chip),
            "params": call.params, "tiling": call.tiling or None, "numerics": False,
            "check": False, "seed": 0, "explain": True}
