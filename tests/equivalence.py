"""Behaviour of every ``npusim`` command, recorded so that two checkouts can be compared.

The pinned cycles (``tests/test_pinned_cycles.py``) hold the simulator's numbers; this holds
what a user sees: for each command of ``COMMANDS`` (every CLI command on small cases, a few bad
inputs, a lesson check), its exit code, its stdout and stderr, and every file it wrote (a text
file's content, a binary file's SHA-256). Run it on two checkouts and compare:

    python tests/equivalence.py record before.json --root /path/to/old/checkout
    python tests/equivalence.py record after.json             # this checkout
    python tests/equivalence.py compare before.json after.json

``compare`` prints each difference (command, what, first differing line) and exits 1 when there
is one, 0 when the two behave the same. ``--only NAME`` (repeatable) records some commands;
``--skip-slow`` leaves out the ones marked slow (demo, bench, correlate's example: minutes).

What varies from run to run is normalised before it is recorded, so that it does not show as a
change: the temporary folder's path, wall times (``wall_s`` columns and keys, ``N.NN s`` in
text), dates, progress bars on stderr, and every number of ``npusim bench`` (a speed
measurement). Figures (PNG) are compared by hash: the same matplotlib draws the same bytes.
"""

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = (".md", ".csv", ".txt", ".html", ".toml")
VOLATILE_KEYS = ("wall_s", "wall", "elapsed_s", "date", "created", "seconds")
SILU = ["silu_backward", "--shape", "64x1024"]
WORKLOAD = """name = "equivalence"
description = "two small calls"
[[call]]
note = "a SiLU"
op = "silu_backward"
shape = "64x1024"
dtype = "float16"
count = 2
[[call]]
note = "a 3x3 convolution"
op = "convolution_backward"
shape = "2x16x14x14"
dtype = "float16"
params = { weight = "16x3", output_mask = "1,1,0" }
count = 1
"""


def _lesson(kind: str) -> str:
    return str(ROOT / "docs" / "lessons" / kind / "03_double_buffering.py")


def _table(folder: Path) -> str:
    """A validation table of one shipped row (mm-910b2-2048: a 2048^3 GEMM, seconds)."""
    text = (ROOT / "npusim" / "studies" / "validate" / "validation.toml").read_text()
    rows = text.split("[[row]]")
    row = next(r for r in rows[1:] if 'id = "mm-910b2-2048"\n' in r)
    path = folder / "table.toml"
    path.write_text("[[row]]" + row)
    return str(path)


def _workload(folder: Path) -> str:
    path = folder / "small.toml"
    path.write_text(WORKLOAD)
    return str(path)


# name -> (arguments, slow); a callable argument is given the work folder
COMMANDS = {
    "help": (["--help"], False),
    "chips": (["chips"], False),
    "run": (["run", *SILU, "--out", "run"], False),
    "run-explain": (["run", *SILU, "--explain"], False),
    "run-functional": (["run", *SILU, "--mode", "functional", "--check", "off"], False),
    "run-conv": (["run", "convolution_backward", "--shape", "1x16x8x8", "--out", "conv"], False),
    "run-help": (["run", "silu_backward", "--help"], False),
    "compare": (["compare", *SILU, "--out", "compare"], False),
    "sweep": (["sweep", *SILU, "--tiling", "tile_length=1024,2048", "--tiling",
               "buffer_num=1,2", "--jobs", "1", "--out", "sweep"], False),
    "predict": (["predict", _workload, "--jobs", "1", "--out", "predict"], False),
    "validate": (["validate", "--table", _table, "--jobs", "1", "--out", "validate"], False),
    "correlate": (["correlate", str(ROOT / "npusim" / "studies" / "validate" / "examples"
                                    / "op_summary_published.csv"), "--jobs", "1",
                   "--out", "correlate"], True),
    "lesson-list": (["lesson", "list"], False),
    "lesson-check": (["lesson", "check", "3", _lesson("solutions")], False),
    "lesson-check-broken": (["lesson", "check", "3", _lesson("broken")], False),
    "bad-shape": (["run", "silu_backward", "--shape", "4by4"], False),
    "bad-chip": (["run", "silu_backward", "--chip", "ascend-9000"], False),
    "bad-sweep": (["sweep", *SILU, "--tiling", "tile_size=1024", "--out", "bad"], False),
    "bad-predict": (["predict", "no-such-workload", "--out", "bad"], False),
    "demo": (["demo", "--quick", "--out", "demo"], True),
    "bench": (["bench", "--quick", "--group", "micro"], True),
}


def normalise(text: str, tmp: str, numbers: bool = False) -> str:
    """Text with what varies between runs replaced: the folder, dates, wall times."""
    text = text.replace(tmp, "<TMP>").replace(os.path.realpath(tmp), "<TMP>")
    text = re.sub(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?( ?UTC|Z|[+-]\d{2}:?\d{2})?",
                  "<DATE>", text)
    text = re.sub(r"\b\d+(\.\d+)? ?(s|ms) (wall|elapsed)", "<WALL>", text)
    text = re.sub(r"(wall[ _](time|s)?[:= ]+)\d+(\.\d+)?( ?s)?", r"\1<WALL>", text)
    if numbers:
        text = re.sub(r"\d[\d,]*(\.\d+)?", "<N>", text)
    return text


def _stderr(text: str, tmp: str) -> str:
    """stderr without the progress bars and spinners (they depend on timing)."""
    keep = [line for line in text.replace("\r", "\n").splitlines()
            if not re.match(r"^\S+ \[[#. ]*\]|^(running|writing|following) .*\.\.\.", line)
            and line.strip()]
    return normalise("\n".join(keep), tmp)


def _json(data):
    if isinstance(data, dict):
        return {k: _json(v) for k, v in data.items() if k not in VOLATILE_KEYS}
    if isinstance(data, list):
        return [_json(v) for v in data]
    return data


def _csv(text: str) -> str:
    import csv
    import io

    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return text
    drop = [i for i, h in enumerate(rows[0]) if h.strip() in VOLATILE_KEYS]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(
        [[c for i, c in enumerate(r) if i not in drop] for r in rows])
    return out.getvalue()


def file_record(path: Path, tmp: str, numbers: bool) -> dict:
    """{"text": normalised content} for a text or small JSON file, else {"sha256", "bytes"}."""
    data = path.read_bytes()
    if path.suffix == ".json" and len(data) < 2_000_000:
        try:
            text = json.dumps(_json(json.loads(data)), indent=1, sort_keys=True)
            return {"text": normalise(text, tmp, numbers)}
        except ValueError:
            pass
    if path.suffix in TEXT:
        text = data.decode("utf-8", "replace")
        return {"text": normalise(_csv(text) if path.suffix == ".csv" else text, tmp, numbers)}
    return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def run_one(name: str, root: Path, timeout: float) -> dict:
    """Run command ``name`` with ``root``'s npusim in a fresh folder; its record."""
    args, _ = COMMANDS[name]
    numbers = name == "bench"
    with tempfile.TemporaryDirectory(prefix="npusim-eq-") as tmp:
        work = Path(tmp)
        argv = [a(work) if callable(a) else a for a in args]
        env = {**os.environ, "PYTHONPATH": str(root), "MPLBACKEND": "Agg", "COLUMNS": "100"}
        env.pop("NPUSIM_DEBUG", None)
        before = set(work.rglob("*"))
        try:
            out = subprocess.run([sys.executable, "-m", "npusim", *argv], cwd=work, env=env,
                                 capture_output=True, text=True, timeout=timeout)
            status, stdout, stderr = out.returncode, out.stdout, out.stderr
        except subprocess.TimeoutExpired:
            status, stdout, stderr = "timeout", "", f"did not finish in {timeout} s"
        files = {str(p.relative_to(work)): file_record(p, tmp, numbers)
                 for p in sorted(set(work.rglob("*")) - before) if p.is_file()}
        return {"argv": [normalise(a, tmp) for a in argv], "exit": status,
                "stdout": normalise(stdout, tmp, numbers), "stderr": _stderr(stderr, tmp),
                "files": files}


def record(names: list, root: Path, timeout: float) -> dict:
    out = {}
    for name in names:
        print(f"{name} ...", file=sys.stderr, flush=True)
        out[name] = run_one(name, root, timeout)
    return out


def differences(a: dict, b: dict) -> list[str]:
    """One line per difference between two recordings (commands in either)."""
    lines = []
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            lines.append(f"{name}: recorded in only one ({'first' if name in a else 'second'})")
            continue
        x, y = a[name], b[name]
        for key in ("exit", "stdout", "stderr"):
            if x[key] != y[key]:
                lines.append(f"{name}: {key} differs: {_first(x[key], y[key])}")
        for f in sorted(set(x["files"]) | set(y["files"])):
            fx, fy = x["files"].get(f), y["files"].get(f)
            if fx != fy:
                what = ("written by one only" if fx is None or fy is None else
                        _first(fx.get("text", fx.get("sha256")),
                               fy.get("text", fy.get("sha256"))))
                lines.append(f"{name}: file {f}: {what}")
    return lines


def _first(x, y) -> str:
    xs, ys = str(x).splitlines() or [""], str(y).splitlines() or [""]
    for i, (p, q) in enumerate(zip(xs, ys, strict=False)):
        if p != q:
            return f"line {i + 1}: {p[:120]!r} vs {q[:120]!r}"
    return f"{len(xs)} lines vs {len(ys)} lines"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    r = sub.add_parser("record", help="run the commands, write their record to OUT.json")
    r.add_argument("out", help="the record (JSON)")
    r.add_argument("--root", default=str(ROOT), help="the checkout whose npusim runs "
                   "(default: this one)")
    r.add_argument("--only", action="append", choices=sorted(COMMANDS), help="these commands")
    r.add_argument("--skip-slow", action="store_true", help="leave out demo, bench, correlate")
    r.add_argument("--timeout", type=float, default=900.0, help="per command (s)")
    c = sub.add_parser("compare", help="the differences between two records (exit 1 if any)")
    c.add_argument("first")
    c.add_argument("second")
    args = parser.parse_args(argv)
    if args.action == "record":
        names = args.only or [n for n, (_, slow) in COMMANDS.items()
                              if not (slow and args.skip_slow)]
        data = record(names, Path(args.root).resolve(), args.timeout)
        Path(args.out).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"recorded {len(data)} commands in {args.out}")
        return 0
    found = differences(json.loads(Path(args.first).read_text()),
                        json.loads(Path(args.second).read_text()))
    print("\n".join(found) if found else "no difference")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
