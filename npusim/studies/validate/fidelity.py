"""The fidelity rule: a prediction that claims more of the hardware than has been measured says so.

A prediction above ``CUBE_LIMIT`` (85%) of the cube's peak, or within ``HBM_MARGIN`` (3%) of the GM
(HBM) roofline on at least ``REAL_SIZE`` bytes, is either backed by a row of the validation table
(``npusim/studies/validate/validation.toml``) on the same chip model whose published measurement
reached at least that share of the peak, or flagged in the report (``npusim run``'s summary, the
demo report, the predict report). ``check`` gives the sentence to print, or "" when the prediction
is below both thresholds.

What it judges is the run's roofline: ``bound`` (compute: the cube's peak at the run's dtype;
memory: the GM bandwidth) and the share of it reached. The vector unit has no single peak in
the chip models, so it is left to the validation table's vector row.
"""

from functools import lru_cache

CUBE_LIMIT = 0.85          # share of the cube's peak above which a prediction needs backing
HBM_MARGIN = 0.03          # within this of the GM roofline needs backing ...
REAL_SIZE = 16 << 20       # ... when the run moves at least this many bytes


@lru_cache(maxsize=1)
def _backing() -> dict:
    """(chip model, "cube" or "hbm") -> [(measured share of the peak, row id)], best first."""
    from npusim.studies.validate.study import default_table, measured_fraction

    out = {}
    for row in default_table():
        if row.covers in ("cube", "hbm"):
            out.setdefault((row.model, row.covers), []).append((measured_fraction(row), row.id))
    return {k: sorted(v, reverse=True) for k, v in out.items()}


def check(chip: str, bound: str, ratio: float, nbytes: int) -> str:
    """One sentence on a prediction at ``ratio`` of its ``bound`` roofline; "" if none needed."""
    if bound == "compute" and ratio > CUBE_LIMIT:
        what, unit = f"{ratio:.0%} of the cube's peak", "cube"
    elif bound == "memory" and ratio >= 1 - HBM_MARGIN and nbytes >= REAL_SIZE:
        what, unit = f"{ratio:.0%} of the GM bandwidth", "hbm"
    else:
        return ""
    rows = _backing().get((chip, unit), [])
    best = rows[0] if rows else None
    if best and best[0] >= ratio:
        return (f"{what}: backed by the validation row {best[1]} (measured "
                f"{best[0]:.0%} on hardware)")
    seen = f"the best published is {best[0]:.0%} ({best[1]})" if best else \
        f"no published measurement on {chip}"
    return (f"FLAG: {what} predicted, more than any measurement backs ({seen}); "
            "treat as optimistic (npusim validate)")
