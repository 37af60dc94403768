"""``npusim lesson check N DIR/``: a class's submissions graded at once.

Every ``*.py`` file directly in DIR is checked as ``npusim lesson check N FILE.py`` checks one
(``npusim.face.lesson.check``, each with its own timeout), and one table is printed, ranked by
cycles (the sum over the lesson's runs; fewest first): the file, bit-exact or not, the cycles,
whether every run met its target, the simulator's findings, and PASSED / NOT YET. A file whose
check could not run (it does not load, raises, defines no kernel, does not finish in time) is
a row at the bottom with its one-line error. Exit status: 0 when every file passes, 1
otherwise; a folder with no ``.py`` file is bad input (2).
"""

from pathlib import Path

from npusim.face.lesson import LessonError, check, exercise_of


def grade_folder(lesson: int, folder: Path, timeout) -> list[dict]:
    """One row per ``*.py`` file of ``folder``: {file, passed, exact, cycles, met, findings,
    error}, ranked: the files that ran by cycles, then the ones that did not run."""
    exercise_of(lesson)
    files = sorted(p for p in folder.iterdir() if p.suffix == ".py" and p.is_file())
    if not files:
        raise LessonError(f"{folder}: no .py file to grade")
    rows = []
    for path in files:
        try:
            r = check(lesson, path, timeout)
        except LessonError as exc:
            rows.append({"file": path.name, "passed": False, "exact": None, "cycles": None,
                         "met": None, "findings": [], "error": " ".join(str(exc).split())})
            continue
        rows.append({"file": path.name, "passed": r.passed, "exact": r.exact,
                     "cycles": r.cycles if r.runs else None, "met": r.met if r.runs else None,
                     "findings": r.findings, "error": ""})
    return sorted(rows, key=lambda r: (r["cycles"] is None, r["error"] != "",
                                       r["cycles"] or 0, r["file"]))


def table(rows: list) -> list[str]:
    """The ranked table, one line per file (plain text, fixed columns)."""
    width = max(4, *(len(r["file"]) for r in rows))
    head = (f"{'rank':>4}  {'file':<{width}}  {'exact':<5}  {'cycles':>10}  {'target':<6}  "
            "result   findings")
    lines = [head, "-" * len(head)]
    for i, r in enumerate(rows, 1):
        cycles = f"{r['cycles']:,}" if r["cycles"] is not None else "-"
        what = r["error"] or ", ".join(r["findings"]) or "none"
        lines.append(f"{i:>4}  {r['file']:<{width}}  {_yes(r['exact']):<5}  {cycles:>10}  "
                     f"{_met(r['met']):<6}  {'PASSED' if r['passed'] else 'NOT YET':<7}  "
                     f"{what}")
    return lines


def _yes(value) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _met(value) -> str:
    return "-" if value is None else ("met" if value else "missed")


def class_command(lesson: int, folder: Path, timeout) -> int:
    rows = grade_folder(lesson, folder, timeout)
    title = exercise_of(lesson).title
    passed = sum(r["passed"] for r in rows)
    print(f"lesson {lesson}: {title}: {len(rows)} files in {folder}, ranked by cycles (summed "
          "over the lesson's runs)")
    print("\n".join(table(rows)))
    print(f"{passed} of {len(rows)} passed")
    return 0 if passed == len(rows) else 1
