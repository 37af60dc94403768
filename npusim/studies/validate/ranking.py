"""Ranking pairs of the validation table: two measured tilings of one case.

A kernel developer asks npusim which of two tilings is faster and by how much; the table's
answer to that is each pair of rows that measured the same operator, chip model, shape, dtype
and parameters under two tilings (CATLASS's default and tuned tiles of one GEMM). npusim's
ratio of the two predicted times is held against the measured ratio: within ``TOLERANCE``
(+-20%, set with the rows in issue 29, before the results) the pair ranks them right and
sizes the gain. Rows of one group (``Row.group``: measurements of one case that npusim
predicts with one number, such as the 6144^3 plain and L2-aware block orders, which npusim's
convolution tiling cannot express) are a pair too: npusim's ratio is 1.00x, so the pair shows
what the model cannot tell apart.
"""

TOLERANCE = 0.2


def pairs(rows) -> list:
    """(a, b) for every two counted rows of one case with different tilings, or of one group,
    in table order."""
    groups = {}
    for r in rows:
        groups.setdefault(r.key()[:5], []).append(r)
    return [(a, b) for same in groups.values() for i, a in enumerate(same)
            for b in same[i + 1:] if (a.tiling != b.tiling or (a.group and a.group == b.group))
            and a.counted and b.counted]


def name(a, b) -> str:
    return f"{a.id} / {b.id}"


def pair_results(rows, results: list) -> list:
    """Per pair whose rows both ran: its name, the measured and predicted ratios (a over b),
    the error (predicted / measured - 1) and whether it is within TOLERANCE."""
    by_id = {x["id"]: x for x in results if x["status"] == "ok"}
    out = []
    for a, b in pairs(rows):
        if a.id not in by_id or b.id not in by_id:
            continue
        xa, xb = by_id[a.id], by_id[b.id]
        measured = xa["measured_us"] / xb["measured_us"]
        predicted = xa["predicted_us"] / xb["predicted_us"]
        error = predicted / measured - 1.0
        out.append({"pair": name(a, b), "measured": measured, "predicted": predicted,
                    "error": error, "within": abs(error) <= TOLERANCE})
    return out


def lines(results: list) -> list:
    """The pairs as text, one line each."""
    return [f"ranking {p['pair']}: measured {p['measured']:.2f}x, npusim {p['predicted']:.2f}x "
            f"({p['error']:+.1%}; {'within' if p['within'] else 'OUTSIDE'} "
            f"+-{TOLERANCE:.0%})" for p in results]
