"""``npusim lesson check N FILE.py``: grade a learner's kernel for lesson N of docs/lessons/.

The check loads FILE.py, takes the kernel class (or, for lesson 8, the tiling) the exercise
names, runs it on the lesson's seeded inputs (``npusim/face/lesson_specs.py``) with the
sanitizer on, and says three things in plain words: are the outputs bit-exact against the
lesson's golden (numpy, rounding as the lesson says), how many cycles it took against the
target the lesson set, and what the sanitizer found (a race, a deadlock, a buffer overflow).

Bad input (no such file, no such lesson, no such kernel in the file, a kernel that raises a
Python error, a check that does not end within its timeout) is a ``LessonError``: one message,
no traceback. A finding of the simulator (``HazardError``, ``DeadlockError``, ``TilingError``,
...) is not bad input: it is what the check is for, and the report explains it, by its cause
(a queue whose buffers were never freed is not a buffer that does not fit).

The learner's folder is on ``sys.path`` while the check runs, so a helper module beside the
file imports; the modules it loaded from there are forgotten afterwards (each student of a
class may have a ``helper.py`` of their own). The check stops after ``timeout`` seconds of
wall time (SIGALRM, in the main thread: a pure-Python endless loop ends; a loop inside one
C call ends when that call returns).
"""

import importlib.util
import os
import signal
import sys
import threading
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from npusim.errors import (
    DeadlockError,
    GmWriteConflictError,
    HazardError,
    MemoryAccessError,
    NpusimError,
    TilingError,
    UnwrittenReadError,
)
from npusim.face.lesson_specs import EXERCISES, Trial

TIMEOUT_S = 120.0


class LessonError(NpusimError):
    """A lesson check could not start: bad lesson number, file or kernel."""


class _TimedOut(BaseException):
    """Raised by the alarm: a BaseException, so that a learner's ``except Exception`` does
    not swallow it."""


@dataclass
class Report:
    """What ``check`` found: ``passed`` and the lines a student reads."""

    lesson: int
    title: str
    passed: bool = True
    lines: list = field(default_factory=list)
    exact: bool = True        # every output bit-exact (False also when no run finished)
    cycles: int = 0           # summed over the lesson's runs
    met: bool = True          # every run within its target
    runs: int = 0
    findings: list = field(default_factory=list)   # the simulator's finding, in one word

    def fail(self, line: str) -> None:
        self.passed = False
        self.lines.append(line)

    def text(self) -> str:
        verdict = "PASSED" if self.passed else "NOT YET"
        return "\n".join([f"lesson {self.lesson}: {self.title}",
                          *(f"  {line}" for line in self.lines), f"  {verdict}"])


# What each simulator finding means, for someone who has just met it: (kind, words in its
# message or "" for any, the finding's name, what it means).
FINDINGS = [
    (TilingError, "buffers are in use", "buffer never freed", "a buffer never freed: "
     "alloc_tensor took every buffer of a queue and no free_tensor gave one back, so the next "
     "alloc_tensor has none. Each tensor taken with alloc_tensor (or deque) needs its "
     "free_tensor after its last use."),
    (TilingError, "out of event ids", "out of event ids", "out of event ids: a queue holds "
     "more buffers than its pipe pair has event ids (each buffer takes one each way); give "
     "the queue fewer buffers."),
]
FINDINGS += [(kind, "", words.split(":")[0], words) for kind, words in [
    (UnwrittenReadError, "read of bytes never written: an instruction read on-chip bytes "
     "that nothing wrote before it (on the chip they hold leftovers); a copy or a vector op "
     "shorter than the tile is the usual cause."),
    (GmWriteConflictError, "cores overwrite each other: several cores wrote the same GM "
     "bytes with plain copies; each core needs its own part (offsets from get_block_idx()), "
     "or atomic adds."),
    (HazardError, "race: two pipes touched the same on-chip bytes and nothing ordered them. "
     "A set_flag/wait_flag pair (or a queue's enque/deque, alloc/free) is missing between "
     "the pipe that writes those bytes and the pipe that reads them."),
    (DeadlockError, "deadlock: a pipe waited on a flag that was never set (a wait_flag "
     "without its set_flag), or a flag was set and never waited for, so the core cannot "
     "finish cleanly."),
    (TilingError, "does not fit: the buffers the kernel asked for do not fit the chip's "
     "on-chip memory, or the split does not fit the cores."),
    (MemoryAccessError, "out of bounds: an access falls outside a GM tensor or outside "
     "a buffer the kernel allocated."),
]]


def lessons() -> list[tuple[int, str, str]]:
    """(number, title, what the exercise asks) of every checked lesson."""
    return [(n, ex.title, ex.task) for n, ex in sorted(EXERCISES.items())]


def exercise_of(lesson: int):
    exercise = EXERCISES.get(lesson) if isinstance(lesson, int) else None
    if exercise is None:
        raise LessonError(f"lesson {lesson!r}: no such lesson; checked lessons are "
                          f"{', '.join(map(str, sorted(EXERCISES)))} (npusim lesson list)")
    return exercise


def check(lesson: int, path, timeout: float = TIMEOUT_S) -> Report:
    """Run the learner's file for ``lesson`` and grade it (see the module docstring), for at
    most ``timeout`` seconds (None: no limit)."""
    exercise = exercise_of(lesson)
    if timeout is not None and not (isinstance(timeout, int | float) and timeout > 0):
        raise LessonError(f"timeout {timeout!r}: a positive number of seconds")
    path = Path(path)
    try:
        with _beside(path), _deadline(timeout):
            return _check(lesson, exercise, path)
    except _TimedOut:
        raise LessonError(f"{path}: the check did not finish within {timeout:g} s (an endless "
                          "loop in the kernel? allow more with --timeout SECONDS)") from None


@contextmanager
def _deadline(timeout):
    """Raise _TimedOut after ``timeout`` seconds (main thread only: signals need it)."""
    if timeout is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def ring(signum, frame):
        raise _TimedOut

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@contextmanager
def _beside(path: Path):
    """The file's folder first on sys.path; the modules loaded from it forgotten after."""
    folder = str(path.resolve().parent)
    before = set(sys.modules)
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
        for name in set(sys.modules) - before:
            where = getattr(sys.modules.get(name), "__file__", None) or ""
            if where and os.path.dirname(os.path.abspath(where)) == folder:
                del sys.modules[name]


def _check(lesson: int, exercise, path: Path) -> Report:
    thing = load_symbol(path, exercise.symbol)
    report = Report(lesson, exercise.title)
    trials = _trials(exercise, thing)
    while True:
        try:
            trial = next(trials)
        except StopIteration:
            return report
        except NpusimError as exc:
            report.fail(explain(exc))
            report.exact = False
            report.findings.append(finding(exc))
            return report
        except Exception as exc:  # noqa: BLE001 - the learner's code: a message, no traceback
            raise LessonError(_raised(exc, Path(path))) from None
        grade(trial, report)


def _trials(exercise, thing):
    """The exercise's runs one at a time, so that an error comes from ``next``."""
    yield from exercise.run(thing)


def load_symbol(path: Path, symbol: str):
    """The class or value ``symbol`` defined by the Python file at ``path``."""
    if not path.is_file():
        raise LessonError(f"{path}: no such file")
    spec = importlib.util.spec_from_file_location(f"lesson_file_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - a syntax or import error in the learner's file
        raise LessonError(f"{path} does not load: {_raised(exc, path)}") from None
    if not hasattr(module, symbol):
        raise LessonError(f"{path} defines no {symbol!r}: the exercise asks for it by that "
                          "name")
    return getattr(module, symbol)


def _raised(exc: BaseException, path: Path) -> str:
    """``TypeError: ... (line 12 of FILE.py)``: the learner's last line in the traceback."""
    where = [f for f in traceback.extract_tb(exc.__traceback__)
             if Path(f.filename).resolve() == path.resolve()]
    at = f" (line {where[-1].lineno} of {path.name}: {where[-1].line})" if where else ""
    return f"your code raised {type(exc).__name__}: {exc}{at}"


def _finding(exc: NpusimError):
    for kind, says, name, words in FINDINGS:
        if isinstance(exc, kind) and says in str(exc):
            return name, words
    return "stopped", None


def finding(exc: NpusimError) -> str:
    """The finding's name: race, deadlock, does not fit, buffer never freed, ..."""
    return _finding(exc)[0]


def explain(exc: NpusimError) -> str:
    """The simulator's finding in words (by its cause), then its own message."""
    words = _finding(exc)[1]
    if words is not None:
        return f"{words}\n    the simulator says: {exc}"
    return f"the run stopped: {exc}"


def grade(trial: Trial, report: Report) -> None:
    """Outputs against the golden, cycles against the target, for one run."""
    label = f"[{trial.label}] " if trial.label else ""
    for name, want in trial.expected.items():
        got = trial.result.outputs[name]
        exact = same_bits(got, want)
        report.exact = report.exact and exact
        _note(report, exact, label + compare(name, got, want))
    cycles, target = trial.result.cycles, trial.target
    line = f"{label}cycles: {cycles:,} (target: at most {target:,}; {trial.why})"
    met = cycles <= target
    report.cycles += cycles
    report.runs += 1
    report.met = report.met and met
    _note(report, met, line + (": met" if met else f": {cycles - target:,} cycles too slow"))


def _note(report: Report, ok: bool, line: str) -> None:
    if ok:
        report.lines.append(line)
    else:
        report.fail(line)


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    return got.shape == want.shape and got.dtype == want.dtype and np.array_equal(
        got.view(np.uint8), want.view(np.uint8))


def compare(name: str, got: np.ndarray, want: np.ndarray) -> str:
    """One line: bit-exact, or how many values differ and the first of them."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{name}: shape/dtype {got.shape} {got.dtype}, expected {want.shape} {want.dtype}"
    if same_bits(got, want):
        return f"{name}: bit-exact against the golden ({want.size:,} values)"
    rows = (want.size, -1)
    g = np.ascontiguousarray(got).reshape(-1).view(np.uint8).reshape(rows)
    w = np.ascontiguousarray(want).reshape(-1).view(np.uint8).reshape(rows)
    bad = np.flatnonzero((g != w).any(axis=1))
    i = int(bad[0])
    where = np.unravel_index(i, want.shape)
    return (f"{name}: {bad.size:,} of {want.size:,} values differ from the golden; first at "
            f"index {tuple(map(int, where))}: got {got.reshape(-1)[i]}, expected "
            f"{want.reshape(-1)[i]}")


def lesson_command(args) -> int:
    """``npusim lesson list`` / ``npusim lesson check N FILE`` (a folder: see
    ``npusim.face.lesson_class``)."""
    if args.action == "list":
        for n, title, task in lessons():
            print(f"{n:>2}  {title}: {task}")
        return 0
    report = check(args.number, args.file, None if args.timeout == 0 else args.timeout)
    print(report.text())
    sys.stdout.flush()
    return 0 if report.passed else 1
