"""Study points that were simulated once are not simulated again (issue 39, item 4).

A point's record (``npusim/studies/executor.py``) follows from three things: the point itself
(op, chip, shape, dtype, params, tiling, numerics, check, seed, explain), the contents of the
chip's model file, and the code. The cache keys each record by a sha256 of all three (the code
as a hash of every ``.py`` file of the package, taken once per process; ``--fast`` is part of the
key too), so a report re-run with other ``--formats``, a prediction with a chip added, or a
sweep resumed reads what was simulated and runs only the rest. A record is stored only when
its status is ``ok`` or ``does not fit`` (an error may come from the host: out of memory).

Where: ``$XDG_CACHE_HOME/npusim`` or ``~/.cache/npusim``; one JSON file per record, named by its
key. Each file holds its key and a sha256 of its record: a file that does not parse or whose
key or checksum is wrong is a miss (deleted and recomputed), never trusted. Writes go to a
temporary file in the same folder, then ``os.replace`` (atomic on POSIX): a reader sees the
whole old file or the whole new one, never half of one. ``--no-cache`` (or
``NPUSIM_NO_CACHE=1`` in the environment) neither reads nor writes; ``npusim cache clear``
deletes every record.
"""

import hashlib
import importlib.util
import json
import os
import tempfile
from contextlib import contextmanager
from functools import cache
from pathlib import Path

CACHED_STATUSES = ("ok", "does not fit")
VERSION = 1          # of the file layout


_OFF = [0]      # disabled() depth


def enabled() -> bool:
    return not _OFF[0] and os.environ.get("NPUSIM_NO_CACHE", "0") != "1"


@contextmanager
def disabled():
    """No reading or writing of the cache inside (``--no-cache``)."""
    _OFF[0] += 1
    try:
        yield
    finally:
        _OFF[0] -= 1


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "npusim"


@cache
def code_version() -> str:
    """sha256 over the path and bytes of every .py file of the package (npusim, its isa, ops
    and models packages), in path order."""
    digest = hashlib.sha256()
    for name in ("npusim", "npusim.isa", "npusim.ops", "npusim.models"):
        # where each package's files are (found, not imported: the studies reach operators
        # only through the registry, tests/test_layers.py)
        root = Path(importlib.util.find_spec(name).submodule_search_locations[0])
        for path in sorted(root.rglob("*.py")):
            digest.update(f"{name}/{path.relative_to(root)}".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def chip_bytes(chip: str) -> bytes:
    """The chip model file's contents (b"" when the name is not a file: the run reports it)."""
    from npusim.chip import chips, models_dir

    path = models_dir() / f"{chip}.toml" if chip in chips() else Path(chip)
    try:
        return path.read_bytes()
    except OSError:
        return b""


def point_key(point: dict) -> str:
    text = json.dumps(point, sort_keys=True, default=str)    # a fast run's point says so
    digest = hashlib.sha256()
    for part in (f"v{VERSION}".encode(), code_version().encode(), text.encode(),
                 hashlib.sha256(chip_bytes(str(point.get("chip", "")))).digest()):
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest()


def _path(key: str) -> Path:
    return cache_dir() / key[:2] / f"{key}.json"


def _checksum(record: dict) -> str:
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()


def load(point: dict) -> dict | None:
    """The stored record of ``point``, or None (absent, unreadable or corrupted: deleted)."""
    if not enabled():
        return None
    key = point_key(point)
    path = _path(key)
    try:
        with open(path, encoding="utf-8") as f:
            entry = json.load(f)
        record = entry["record"]
        if entry["key"] == key and entry["sha256"] == _checksum(record) \
                and isinstance(record, dict):
            return record
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:                       # corrupted: recomputed, and the bad file goes
        path.unlink()
    except OSError:
        pass
    return None


def store(point: dict, record: dict) -> None:
    """Keep ``record`` for ``point`` (atomically; a full disk or a read-only cache folder only
    means no caching)."""
    if not enabled() or record.get("status") not in CACHED_STATUSES:
        return
    key = point_key(point)
    path = _path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"key": key, "sha256": _checksum(record), "record": record})
        if json.loads(text)["record"] != record:   # a tuple, a non-str key: not as it was
            return
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, TypeError, ValueError):
        return


def clear() -> tuple[int, Path]:
    """Delete every record; return how many and where."""
    root, count = cache_dir(), 0
    if root.is_dir():
        for path in root.glob("*/*.json"):
            try:
                path.unlink()
                count += 1
            except OSError:
                pass
        for path in root.glob("*/.tmp-*"):
            try:
                path.unlink()
            except OSError:
                pass
    return count, root
