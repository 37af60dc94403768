"""The error band beside a prediction: how far npusim has been from the hardware on its kernels.

``band(op, chip, kernels=...)`` takes the rows of the validation table (``validation.toml``) of
that operator on that chip model that may back a band, with their errors (``predicted /
measured - 1``) as last recorded in ``validation_status.toml`` (``npusim validate --record``).
A row backs a band only if

- it is counted (a row measuring what npusim does not have, ``not_modelled``, backs none);
- no model number was calibrated on it (``calibrated``): a row a number was fitted to says
  nothing about the error elsewhere;
- the prediction runs every kernel the row measured: the row's ``kernels`` (the CANN kernels
  the measurement timed that npusim's case runs too) are all among the prediction's. A 3-D
  gradWeight row (TransData, MemSet, Conv3DBackpropFilter) backs a 3-D gradWeight run, not
  the TransData of a 2-D one; a GEMM row (Conv3DBackpropInputV2) backs that kernel's time in a
  run. A row comparing another kernel (the fill row's SiluGrad against a fill) has
  ``kernels = []`` and backs nothing;
- its error is recorded; and the chip is the shipped model of its name (a chip file that
  differs from the shipped one gets no band: the rows measured the shipped model's numbers).

It gives ``band``, the largest |error| of those rows (the worst error seen on the measured
rows that ran these kernels, the rows of a group counted once against the mean of their
measurements, as ``npusim validate`` counts them; not a statistical interval, and a shape,
dtype or tiling unlike the measured ones can be further off); ``mean``; ``rows`` and ``ids``;
``kernels``, the kernels the rows back; ``covered``, the share of the prediction's time in
those kernels (1 when the kernels are not given); ``few``, true under ``MIN_ROWS`` rows; and
``text``, e.g. "±20% (17 rows of convolution_backward on atlas-a2 running TransData, MemSet,
Conv3DBackpropFilter, mean error 8%)", or "no band: ..." with the reason.

``total_band`` words the band of a sum of calls on one chip (a predicted step's total), and
``ratio_band`` the band of one total over another (a speed-up).
"""

import os

from npusim.face.provenance import file_hash

MIN_ROWS = 3    # a band from fewer rows says so


def chip_name(chip) -> str:
    """The model name of ``chip``: a name, a Chip, or a path to a chip TOML."""
    return chip_identity(chip)[0]


def chip_identity(chip) -> tuple:
    """(model name, why no band may be borrowed: "" when the chip is a shipped model)."""
    from npusim.chip import Chip, load_chip, models_dir

    if not isinstance(chip, Chip | os.PathLike) and not str(chip).endswith(".toml"):
        return str(chip), ""
    loaded = load_chip(chip)
    shipped = models_dir() / f"{loaded.name}.toml"
    if not shipped.is_file():
        return loaded.name, ""      # no shipped model of the name: no row names it either
    mine, theirs = file_hash(loaded.path), file_hash(shipped)
    if mine == theirs:
        return loaded.name, ""
    return loaded.name, (f"the chip file {loaded.path} (sha256 {mine}) differs from the shipped "
                         f"{loaded.name} model (sha256 {theirs}), which the validation rows "
                         "measured")


def _rows(table):
    if table is None:
        from npusim.studies.validate.study import default_table

        return default_table()
    if isinstance(table, str | os.PathLike):
        from npusim.studies.validate.study import load_table

        return load_table(table)
    return table


def _errors(status) -> dict:
    if status is None:
        from npusim.studies.validate.study import default_status

        return default_status()["errors"]
    if isinstance(status, str | os.PathLike):
        from npusim.studies.validate.study import load_status

        return load_status(status)["errors"]
    return status["errors"]


def band(op: str, chip, table=None, status=None, kernels=None) -> dict:
    """The error band of ``op`` on ``chip``'s model from the validation table and its recorded
    errors (``table``, ``status``: loaded, or paths; default the committed files);
    ``kernels``: [(CANN op type, time)] of the prediction, None for the op as a whole."""
    name, foreign = chip_identity(chip)
    errors = _errors(status)
    kind = [r for r in _rows(table) if r.op == op and r.model == name]
    times = _times(kernels)
    usable = [r for r in kind if r.counted and not r.calibrated and r.kernels
              and r.id in errors and not foreign]
    backing = [r for r in usable if times is None or set(r.kernels) <= set(times)]
    backed = list(dict.fromkeys(k for r in backing for k in r.kernels
                                if times is None or k in times))
    sizes = _entry_sizes(backing, errors)
    total = sum(times.values()) if times else 0.0
    covered = 1.0 if times is None else (
        sum(t for k, t in times.items() if k in backed) / total if total else 0.0)
    out = {"op": op, "chip": name, "rows": len(backing), "ids": [r.id for r in backing],
           "band": max(sizes) if sizes else None,
           "mean": sum(sizes) / len(sizes) if sizes else None, "kernels": backed,
           "unbacked": [k for k in (times or {}) if k not in backed], "covered": covered,
           "few": 0 < len(backing) < MIN_ROWS, "foreign": foreign,
           "not_modelled": [r.id for r in kind if not r.counted],
           "calibrated": [r.id for r in kind if r.counted and r.calibrated],
           "other_kernel": [r.id for r in kind if r.counted and not r.kernels],
           "unrecorded": [r.id for r in kind if r.counted and r.id not in errors]}
    return {**out, "text": _text(out)}


def _entry_sizes(rows: list, errors: dict) -> list:
    """|error| per entry of ``rows``: a row's own, or for the rows of a group (one npusim
    prediction) the group's, against the mean of their measurements, once."""
    from npusim.studies.validate.study import entries

    return [abs(e["error"]) for e in entries(rows, {r.id: float(errors[r.id]) for r in rows})]


def _times(kernels) -> dict | None:
    if kernels is None:
        return None
    out = {}
    for op_type, t in kernels:
        out[op_type] = out.get(op_type, 0.0) + float(t)
    return out


def _aside(b: dict) -> str:
    parts = [(b["not_modelled"], "not modelled"), (b["calibrated"], "calibrated on"),
             (b["other_kernel"], "comparing another kernel"),
             (b["unrecorded"], "not yet recorded")]
    words = [f"{_n(len(ids), 'row')} {what}" for ids, what in parts if ids]
    return f"{', '.join(words)}: back no band" if words else ""


def _text(b: dict) -> str:
    if b["foreign"]:
        return f"no band: {b['foreign']}"
    aside = _aside(b)
    if not b["rows"]:
        runs = f" running {', '.join(b['unbacked'])}" if b["unbacked"] else ""
        return (f"no band: no validation row of {b['op']} on {b['chip']}{runs} may back one"
                + (f" ({aside})" if aside else ""))
    few = f"only {_n(b['rows'], 'row')}, fewer than {MIN_ROWS}: " if b["few"] else ""
    text = (f"±{b['band']:.0%} ({few}{_n(b['rows'], 'row')} of {b['op']} on {b['chip']} "
            f"running {', '.join(b['kernels'])}, mean error {b['mean']:.0%}"
            + (f"; {aside})" if aside else ")"))
    if b["covered"] >= 1.0:
        return text
    rest = (f"no row runs {', '.join(b['unbacked'])}, {1 - b['covered']:.0%} of the time")
    if b["covered"] < 0.5:
        return f"no band for {1 - b['covered']:.0%} of the time ({rest}); on the other " \
               f"{b['covered']:.0%}: {text}"
    return f"{text} on {b['covered']:.0%} of the time; {rest} has no band"


def _n(k: int, word: str) -> str:
    return f"{k} {word}{'' if k == 1 else 's'}"


def band_cell(b: dict | None) -> str:
    """A table cell: '±18% (12 rows)', '±5% (2 rows: too few)', 'no band'."""
    if not b or not b["rows"]:
        return "no band"
    few = ": too few" if b["few"] else ""
    part = "" if b["covered"] >= 1.0 else f" on {b['covered']:.0%} of the time"
    return f"±{b['band']:.0%}{part} ({_n(b['rows'], 'row')}{few})"


def total_band(calls: list, chip, table=None, status=None) -> dict:
    """The band of a total over ``calls``, [(op, time_us)] or [(op, time_us, kernels)] on one
    chip (kernels: [(CANN op type, time)] of the call): each call's backed time at its band,
    time-weighted ("band"), over the share of the time rows back ("covered"); "uncovered"
    names the ops with time no row backs."""
    name, foreign = chip_identity(chip)
    total = sum(c[1] for c in calls)
    inside, uncovered = [], []
    for c in calls:
        b = band(c[0], chip, table, status, c[2] if len(c) > 2 else None)
        if b["rows"]:
            inside.append((c[1] * b["covered"], b["band"]))
        if b["covered"] < 1.0 or not b["rows"]:
            uncovered.append(c[0])
    time_in = sum(t for t, _ in inside)
    out = {"chip": name, "band": sum(t * b for t, b in inside) / time_in if time_in else None,
           "covered": time_in / total if total else 0.0, "foreign": foreign,
           "uncovered": list(dict.fromkeys(uncovered))}
    return {**out, "text": _total_text(out)}


def _total_text(t: dict) -> str:
    if t["foreign"]:
        return f"no band: {t['foreign']}"
    none = (f"no validation row backs {', '.join(t['uncovered'])} on {t['chip']}"
            if t["uncovered"] else "")
    if t["band"] is None:
        return f"no band: {none}" if none else "no band"
    how = "each call's backed time at its band, time-weighted"
    if not t["uncovered"]:
        return f"±{t['band']:.0%} ({how})"
    if t["covered"] < 0.5:
        return (f"no band for {1 - t['covered']:.0%} of the time ({none}); "
                f"±{t['band']:.0%} on the other {t['covered']:.0%} ({how})")
    return (f"±{t['band']:.0%} over the {t['covered']:.0%} of the time validation rows back "
            f"({how}); {none}")


def ratio_band(fast: dict, slow: dict) -> tuple | None:
    """(low, high) factors on a ratio slow / fast of two totals with bands ``total_band``
    (each total anywhere in its ±band), or None unless both are fully backed."""
    if fast["band"] is None or slow["band"] is None or min(fast["covered"],
                                                           slow["covered"]) < 1.0:
        return None
    if fast["band"] >= 1.0:
        return None
    return (1 - slow["band"]) / (1 + fast["band"]), (1 + slow["band"]) / (1 - fast["band"])
