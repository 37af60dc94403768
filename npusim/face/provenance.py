"""Where a report comes from: npusim's version, the command line, the date and each chip file.

Every report npusim writes (predict's, validate's, sweep's, the demo's) opens with these, so a
figure read later can be traced to the code, the command and the chip model that made it:
``stamp(chips)`` gives {"npusim", "command", "date", "chips": {name: short sha256 of the chip
file's bytes}}, and ``line(stamp)`` words it in one line. The command is the one the ``npusim``
entry point was given (``set_command``); a report made from Python says so.
"""

import hashlib
import shlex
from datetime import UTC, datetime

_COMMAND: list = []


def set_command(argv) -> None:
    """Remember the command line (the arguments after ``npusim``) for the reports it writes."""
    _COMMAND[:] = ["npusim", *(str(a) for a in argv)]


def file_hash(path) -> str:
    """The short sha256 of a file's bytes (12 hex digits)."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:12]


def version() -> str:
    from importlib import metadata  # imported when asked: a plain run does not need it

    try:
        return metadata.version("npusim")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def stamp(chips=()) -> dict:
    """The provenance of a report on ``chips`` (names, paths or Chips; duplicates once)."""
    from npusim.chip import load_chip

    files = {}
    for chip in chips:
        c = load_chip(chip)
        files.setdefault(f"{c.name} ({c.path})", file_hash(c.path))
    return {"npusim": version(),
            "command": shlex.join(_COMMAND) if _COMMAND else "(from Python, not the command)",
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "chips": files}


def line(s: dict) -> str:
    """'npusim 0.1.0; command: npusim ...; 2026-11-27 17:40 UTC; chip files: atlas-a2 (path)
    sha256 0123456789ab'."""
    chips = ", ".join(f"{name} sha256 {h}" for name, h in s["chips"].items()) or "none"
    return f"npusim {s['npusim']}; command: {s['command']}; {s['date']}; chip files: {chips}"
