"""The pasted command blocks of README.md and docs/: run each command, compare, rewrite.

A pasted block is a fenced ``text`` block whose lines start with ``$ npusim ...``: each such line is
a command, the lines after it (to the next ``$`` line or the fence) what it printed: its standard
output, and its standard error when it fails (progress lines are left out). A line ``...`` alone
stands for lines left out: the page keeps the first lines before it and the last lines after it.

Wall-clock figures (``0.3 s``, ``49 s``), a report's date (``2026-11-27 18:38 UTC``) and the
folder a chip file was read from are not compared: they change from run to run and from one
checkout to another. An HTML comment on the line before the fence marks a block: ``<!--paste:
slow-->`` runs only with ``NPUSIM_SLOW=1`` (the test suite skips it otherwise).

    python docs/pastes.py                 # list the blocks that differ (exit 1 if any)
    python docs/pastes.py --write         # rewrite them with what the commands print now
    python docs/pastes.py --write docs/guide/sweep.md   # one page

Commands run in a fresh temporary folder (their ``--out`` folders land there), with this
checkout first on ``PYTHONPATH``; an argument naming a file of the checkout is passed as its
full path.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"(?P<mark><!--paste: (?P<kind>[\w-]+)-->\n)?```text\n(?P<body>.*?)```",
                   re.S)
WALL = re.compile(r"\b\d+(?:\.\d+)? ?(?:s|min)\b")
STAMP = re.compile(r"\b\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\b")   # a report's provenance date
CHECKOUT = re.compile(r"(?<=\()/[^()\s]*/(?=models/)")   # (/any/checkout/models/x.toml)
ELIDED = "..."
TIMEOUT_S = 1800


@dataclass
class Paste:
    """One command of a pasted block and what the page shows it printing."""

    page: Path
    command: str
    shown: list[str]
    slow: bool


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _commands(body: str) -> list[tuple[str, list[str]]]:
    out, lines = [], body.rstrip("\n").split("\n")
    for line in lines:
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    return out


def pastes(page: Path) -> list[Paste]:
    """The page's pasted npusim commands, in order."""
    found = []
    for m in FENCE.finditer(page.read_text()):
        commands = _commands(m["body"])
        if not commands or not all(c.startswith("npusim ") for c, _ in commands):
            continue
        found += [Paste(page, c, shown, m["kind"] == "slow") for c, shown in commands]
    return found


def _argv(command: str) -> list[str]:
    words = shlex.split(command, comments=True)
    full = [str(ROOT / w) if not w.startswith("-") and "/" in w and (ROOT / w).exists() else w
            for w in words[1:]]
    return [sys.executable, "-m", "npusim", *full]


def run(command: str) -> list[str]:
    """What ``command`` prints: its standard output, then its standard error if it failed."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")]).rstrip(os.pathsep), COLUMNS="100", MPLBACKEND="Agg")
    with tempfile.TemporaryDirectory() as work:
        done = subprocess.run(_argv(command), cwd=work, env=env, capture_output=True,
                              text=True, timeout=TIMEOUT_S)
    text = done.stdout + (done.stderr if done.returncode else "")
    lines = [line.rsplit("\r", 1)[-1].rstrip() for line in text.rstrip("\n").split("\n")]
    return lines if text else []


def _plain(lines: list[str]) -> list[str]:
    return [CHECKOUT.sub("", STAMP.sub("DATE", WALL.sub("# s", line.rstrip())))
            for line in lines]


def _cut(shown: list[str]) -> tuple[int, int | None]:
    """How many lines the page keeps from the head and the tail (None: all of it)."""
    if ELIDED not in shown:
        return len(shown), None
    first = shown.index(ELIDED)
    last = len(shown) - 1 - shown[::-1].index(ELIDED)
    return first, len(shown) - 1 - last


def excerpt(shown: list[str], printed: list[str]) -> list[str]:
    """``printed`` cut the way the page cuts ``shown``."""
    head, tail = _cut(shown)
    if tail is None or head + tail >= len(printed):
        return printed
    return printed[:head] + [ELIDED] + (printed[len(printed) - tail:] if tail else [])


def differs(paste: Paste, printed: list[str]) -> bool:
    return _plain(paste.shown) != _plain(excerpt(paste.shown, printed))


def rewrite(page: Path, printed: dict[str, list[str]]) -> bool:
    """Put each command's new output under it on ``page``; True if the page changed."""
    text = page.read_text()

    def block(m: re.Match) -> str:
        commands = _commands(m["body"])
        if not commands or any(c not in printed for c, _ in commands):
            return m[0]
        lines = []
        for command, shown in commands:
            lines += [f"$ {command}", *excerpt(shown, printed[command])]
        return f"{m['mark'] or ''}```text\n" + "\n".join(lines) + "\n```"

    new = FENCE.sub(block, text)
    if new != text:
        page.write_text(new)
    return new != text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python docs/pastes.py", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("pages", nargs="*", type=Path, help="pages (default: all)")
    parser.add_argument("--write", action="store_true", help="rewrite the blocks that differ")
    args = parser.parse_args(argv)
    slow = os.environ.get("NPUSIM_SLOW") == "1"
    stale = 0
    for page in [p.resolve() for p in args.pages] or pages():
        printed = {}
        for paste in pastes(page):
            if paste.slow and not slow:
                print(f"{page.relative_to(ROOT)}: $ {paste.command}: slow, not run "
                      "(NPUSIM_SLOW=1 runs it)")
                continue
            printed[paste.command] = run(paste.command)
            if differs(paste, printed[paste.command]):
                stale += 1
                print(f"{page.relative_to(ROOT)}: $ {paste.command}: differs")
        if args.write and printed and rewrite(page, printed):
            print(f"rewrote {page.relative_to(ROOT)}")
    return 1 if stale and not args.write else 0


if __name__ == "__main__":
    sys.exit(main())
