"""The error band beside a prediction: how far npusim has been from the hardware on its kind.

A prediction's kind is its operator family and its chip model. ``band(op, chip)`` takes the rows
of the validation table (``validation.toml``) of that operator on that chip model, with their
errors (``predicted / measured - 1``) as last recorded in ``validation_status.toml`` (``npusim
validate --record``), and gives

- ``band``: the largest |error| among those rows, i.e. the worst error seen on the measured
  rows of that kind. It is not a statistical interval (no distribution, no confidence level)
  and does not bound this prediction's error: a shape, dtype or tiling unlike the measured
  ones can be further off, and the figures move when the model changes and is re-recorded;
- ``mean``: the mean |error| of those rows; ``rows``: how many there are (``ids``: which);
- ``text``: "±18% (12 rows of convolution_backward on atlas-a2, mean error 9%)", or "no
  validation row covers silu_backward on atlas-training" where no row of the kind counts.

Rows marked not modelled are never counted (``not_modelled`` lists them; the text says how many),
nor is a row that has no recorded error yet (``unrecorded``). A chip is matched by its model
name (a Chip's ``.name``): a user's chip TOML whose name is no row's model is covered by none.

``total_band`` words the band of a sum of calls on one chip (a predicted step's total).
"""

import os


def chip_name(chip) -> str:
    """The model name of ``chip``: a name, a Chip, or a path to a chip TOML."""
    from npusim.chip import Chip, load_chip

    if isinstance(chip, Chip):
        return chip.name
    if isinstance(chip, os.PathLike) or str(chip).endswith(".toml"):
        return load_chip(chip).name
    return str(chip)


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


def band(op: str, chip, table=None, status=None) -> dict:
    """The error band of ``op`` on ``chip``'s model from the validation table and its recorded
    errors (``table``, ``status``: loaded, or paths; default the committed files)."""
    name, errors = chip_name(chip), _errors(status)
    kind = [r for r in _rows(table) if r.op == op and r.model == name]
    counted = [r for r in kind if r.counted and r.id in errors]
    sizes = [abs(float(errors[r.id])) for r in counted]
    out = {"op": op, "chip": name, "rows": len(counted), "ids": [r.id for r in counted],
           "band": max(sizes) if sizes else None,
           "mean": sum(sizes) / len(sizes) if sizes else None,
           "not_modelled": [r.id for r in kind if not r.counted],
           "unrecorded": [r.id for r in kind if r.counted and r.id not in errors]}
    return {**out, "text": _text(out)}


def _text(b: dict) -> str:
    aside = [_n(len(b["not_modelled"]), "row") + " not modelled"] if b["not_modelled"] else []
    aside += [_n(len(b["unrecorded"]), "row") + " not yet recorded"] if b["unrecorded"] else []
    aside = f"{' and '.join(aside)}, not counted" if aside else ""
    if not b["rows"]:
        return f"no validation row covers {b['op']} on {b['chip']}" + (
            f" ({aside})" if aside else "")
    return (f"±{b['band']:.0%} ({_n(b['rows'], 'row')} of {b['op']} on {b['chip']}, "
            f"mean error {b['mean']:.0%}" + (f"; {aside})" if aside else ")"))


def _n(k: int, word: str) -> str:
    return f"{k} {word}{'' if k == 1 else 's'}"


def band_cell(b: dict) -> str:
    """A table cell: '±18% (12 rows)' or 'no row'."""
    if not b["rows"]:
        return "no row"
    return f"±{b['band']:.0%} ({_n(b['rows'], 'row')})"


def total_band(calls: list, chip, table=None, status=None) -> dict:
    """The band of a total over ``calls``, [(op, time_us)] on one chip: each covered call at
    its kind's band, time-weighted ("band"), over the share of the time rows cover
    ("covered"); "uncovered" names the ops no row covers."""
    name = chip_name(chip)
    bands = {op: band(op, name, table, status) for op in dict.fromkeys(op for op, _ in calls)}
    total = sum(t for _, t in calls)
    inside = [(t, bands[op]["band"]) for op, t in calls if bands[op]["rows"]]
    time_in = sum(t for t, _ in inside)
    out = {"chip": name, "band": sum(t * b for t, b in inside) / time_in if time_in else None,
           "covered": time_in / total if total else 0.0,
           "uncovered": [op for op, b in bands.items() if not b["rows"]]}
    return {**out, "text": _total_text(out)}


def _total_text(t: dict) -> str:
    none = (f"no validation row covers {', '.join(t['uncovered'])} on {t['chip']}"
            if t["uncovered"] else "")
    if t["band"] is None:
        return none
    how = "each call at its kind's band, time-weighted"
    if not t["uncovered"]:
        return f"±{t['band']:.0%} ({how})"
    return (f"±{t['band']:.0%} over the {t['covered']:.0%} of the time validation rows cover "
            f"({how}); {none}")
