"""The pieces a prediction report is made of, and their text.

A report is a list of blocks: ``("h1" | "h2" | "p", text)``, ``("ul", [text])``,
``("table", name, head, rows)`` and ``("figure", name, caption)``. Markdown, HTML, JSON and CSV
are written from the same blocks, so every number a page shows is in the CSV. A table cell is a
string or a ``Num``: the number (``value``, in ``unit``) and the text shown.
"""

from typing import NamedTuple


class Num(NamedTuple):
    value: float
    unit: str
    text: str

    def __str__(self) -> str:
        return self.text


def us(x: float) -> str:
    return f"{x / 1000:.2f} ms" if x >= 1000 else f"{x:.1f} us"


def time_num(x: float) -> Num:
    return Num(round(x, 3), "us", us(x))


def one_unit(block):
    """A table block with each column of times in one unit: ms where the column's largest
    time reaches a millisecond, else us (``us`` alone picks per value, so a column mixed
    '950.0 us' with '1.20 ms'). Other blocks unchanged."""
    if block[0] != "table":
        return block
    name, head, rows = block[1], block[2], [list(r) for r in block[3]]
    width = max((len(r) for r in rows), default=0)
    for j in range(width):
        times = [r[j] for r in rows if j < len(r) and isinstance(r[j], Num) and r[j].unit == "us"]
        if not times:
            continue
        ms = max(t.value for t in times) >= 1000
        digits = 2 if min(t.value for t in times) >= 10 else 3   # 0.01 ms and up: as ``us``
        for r in rows:
            if j < len(r) and isinstance(r[j], Num) and r[j].unit == "us":
                v = r[j].value
                r[j] = r[j]._replace(text=f"{v / 1000:.{digits}f} ms" if ms else f"{v:.1f} us")
    return ("table", name, head, rows)


def share(x: float) -> str:
    """A share as text, with the digits a small one needs: 12.3%, 0.42%, <0.01%."""
    if 0 < x < 1e-4:
        return "<0.01%"
    return f"{x:.2%}" if x < 0.01 else f"{x:.1%}"


def pct(x: float) -> Num:
    return Num(round(x, 6), "fraction", share(x))


def count_num(x: float, unit: str) -> Num:
    """A count of FLOPs or bytes, shown with an SI prefix."""
    for div, pre in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return Num(x, unit, f"{x / div:.2f} {pre}{unit}")
    return Num(x, unit, f"{x:.0f} {unit}")


def n(k: int, word: str) -> str:
    return f"{k} {word}{'' if k == 1 else 's'}"


def call_list(calls: list) -> str:
    """'calls 2, 3 and 5' / 'call 4'."""
    if len(calls) == 1:
        return f"call {calls[0]}"
    return f"calls {', '.join(map(str, calls[:-1]))} and {calls[-1]}"


def column(chip: str, batch) -> str:
    """A chip's column: 'atlas-a2 (batch 64)'."""
    return f"{chip} (batch {batch})" if batch is not None else chip
