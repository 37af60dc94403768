"""Tiling spaces: ``FIELD=SPACE`` texts, their product, and seeded samples of it.

SPACE is a list (``tile_length=2048,4096,6144``), an inclusive range ``start:stop[:step]``
(``block_dim=8:48:8`` is 8, 16, ..., 48) or powers of two ``pow2:lo:hi`` (``pow2:1024:16384``
is 1024, 2048, ..., 16384). Values are integers, or ``true`` / ``false``.
"""

import itertools
import random

from npusim.errors import NpusimError

MAX_POINTS = 100_000   # a larger product is refused: sample it with --samples


def _value(text: str, where: str):
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(low, 0)
    except ValueError:
        raise NpusimError(f"--tiling {where}: {text.strip()!r} is not an integer or "
                          "true/false") from None


def parse_space(item: str) -> tuple[str, list | range]:
    """``"tile_length=1024,2048"`` -> ("tile_length", [1024, 2048]); a range stays a
    ``range`` (counted, never built: ``points`` builds only what it runs)."""
    field, sep, text = item.partition("=")
    field, text = field.strip(), text.strip()
    if not sep or not field or not text:
        raise NpusimError(f"--tiling {item!r}: write FIELD=SPACE, e.g. tile_length=2048,4096 "
                          "or block_dim=8:48:8 or tile_length=pow2:1024:16384")
    if text.lower().startswith("pow2:"):
        values = _pow2(text, item)
    elif ":" in text:
        values = _range(text, item)
        if not values:
            raise NpusimError(f"--tiling {item!r}: the space is empty")
        return field, values
    else:
        values = [_value(v, item) for v in text.split(",")]
    if not values:
        raise NpusimError(f"--tiling {item!r}: the space is empty")
    return field, list(dict.fromkeys(values))


def _range(text: str, item: str) -> list:
    parts = [_value(v, item) for v in text.split(":")]
    if len(parts) not in (2, 3) or any(isinstance(v, bool) for v in parts):
        raise NpusimError(f"--tiling {item!r}: a range is start:stop or start:stop:step")
    start, stop, step = (*parts, 1) if len(parts) == 2 else parts
    if step <= 0 or stop < start:
        raise NpusimError(f"--tiling {item!r}: a range needs start <= stop and a positive step")
    return range(start, stop + 1, step)


def _pow2(text: str, item: str) -> list:
    parts = text.split(":")[1:]
    if len(parts) != 2:
        raise NpusimError(f"--tiling {item!r}: powers of two are pow2:lo:hi")
    lo, hi = (_value(v, item) for v in parts)
    if isinstance(lo, bool) or isinstance(hi, bool) or lo < 1 or hi < lo:
        raise NpusimError(f"--tiling {item!r}: pow2:lo:hi needs 1 <= lo <= hi")
    values, v = [], 1
    while v <= hi:
        if v >= lo:
            values.append(v)
        v *= 2
    return values


def points(spaces: dict, samples: int | None = None, seed: int = 0) -> list[dict]:
    """Every combination of ``spaces`` ({field: values}), or ``samples`` of them drawn at
    random (seeded, without repeats), as tiling dicts in a stable order."""
    sizes = [len(v) for v in spaces.values()]
    total = 1
    for n in sizes:
        total *= n
    if samples is not None and (isinstance(samples, bool) or samples < 1):
        raise NpusimError(f"--samples {samples!r}: a positive number of points")
    if samples is not None and samples > MAX_POINTS:
        raise NpusimError(f"--samples {samples:,}: at most {MAX_POINTS:,} points")
    if samples is None and total > MAX_POINTS:
        raise NpusimError(f"the tiling space has {total:,} points, more than {MAX_POINTS:,}; "
                          "draw some with --samples N")
    fields = list(spaces)
    if samples is None or samples >= total:
        combos = itertools.product(*spaces.values())
        return [dict(zip(fields, c, strict=True)) for c in combos]
    picks = sorted(random.Random(seed).sample(range(total), samples))   # range: not built
    out = []
    for index in picks:
        combo = []
        for values in reversed(list(spaces.values())):
            index, k = divmod(index, len(values))
            combo.append(values[k])
        out.append(dict(zip(fields, reversed(combo), strict=True)))
    return out


def described(spaces: dict) -> dict:
    """{field: its values}, a range as ``"start:stop:step"`` (inclusive), for a sweep's
    record of what it swept (``npusim.studies.sweep.store.identity``)."""
    out = {}
    for field, values in spaces.items():
        if isinstance(values, range):
            out[field] = f"{values.start}:{values.stop - 1}:{values.step}"
        else:
            out[field] = [v if isinstance(v, bool | int) else str(v) for v in values]
    return out
