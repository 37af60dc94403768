"""The ``npusim`` command: chips, run, compare, sweep, predict, validate, correlate, demo,
bench.

Errors are one line on stderr and a non-zero exit (2 for bad input, 1 when an output differs
from its golden), never a traceback; files appear only when a command completes (see
``npusim.face.outdir``). Set ``NPUSIM_DEBUG=1`` to see the traceback of an internal error.

BLAS gets one thread per process (``OPENBLAS_NUM_THREADS`` and the like default to 1; set them to
change it): the studies' processes are the parallelism, and on a loaded 2-core host a threaded
BLAS made the convolution golden's grouped matmuls 3-4x slower (measured: ResNet-50 conv2_x at
batch 32, 11.6 s threaded, 2.5 s single) while the simulation did not change.
"""

import argparse
import os
import sys
import textwrap

from npusim.errors import NpusimError
from npusim.face import commands, interrupt

EXAMPLES = """examples:
  npusim chips
  npusim run silu_backward --chip atlas-a2 --shape 4x1024x1024 --dtype float16 --out silu
  npusim compare silu_backward --dtype bfloat16
  npusim sweep silu_backward --tiling tile_length=pow2:1024:8192 --tiling buffer_num=1,2 --out sw
  npusim predict resnet50-backward --out resnet50
  npusim validate --skip-slow --out validation
  npusim correlate op_summary_0_1.csv --chip atlas-a2 --out correlation
  npusim demo --out npusim-demo
  npusim lesson check 3 my_kernel.py
  npusim lesson check 3 submissions/
"""


class Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def main(argv=None) -> int:
    for var in BLAS_THREADS:        # one BLAS thread per process unless the user says more
        os.environ.setdefault(var, "1")
    interrupt.install()
    try:
        status = _run(argv)
        interrupt.check()     # a Ctrl-C that something swallowed on the way still counts
        return status
    except KeyboardInterrupt:
        return _interrupted(argv)
    except Exception as exc:  # noqa: BLE001 - each kind is one line, see _error
        if interrupt.requested():   # the Ctrl-C surfaced as another error: a C extension's
            return _interrupted(argv)   # import turns it into "ImportError: initialization failed"
        return _error(exc)


def _interrupted(argv) -> int:
    """The work is stopped; a second Ctrl-C must not cut the exit."""
    interrupt.ignore()
    print("npusim: interrupted", file=sys.stderr)
    if argv is None:          # the command itself: leave now (see face/interrupt.py)
        interrupt.leave(130)
    return 130


def _error(exc: Exception) -> int:
    if isinstance(exc, NpusimError):
        return _fail(str(exc))
    if isinstance(exc, OSError):
        return _fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
    if os.environ.get("NPUSIM_DEBUG"):      # a bug: still one line, the details on request
        raise exc
    return _fail(f"internal error: {type(exc).__name__}: {exc} "
                 "(set NPUSIM_DEBUG=1 for the traceback)", 3)


VALUE_OPTIONS = ("--shape", "--batch", "--seed", "--jobs", "--samples")


def joined(argv: list) -> list:
    """``--shape -4x1024`` as ``--shape=-4x1024``: argparse takes a value that starts with
    '-' (and is not a plain negative number) for an option and says "expected one argument";
    joined, the value reaches the check that says what is wrong with it."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] in VALUE_OPTIONS and i + 1 < len(argv) and argv[i + 1][1:2].isdigit() \
                and argv[i + 1].startswith("-"):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def _run(argv) -> int:
    from npusim.face.provenance import set_command

    parser = _parser()
    raw = sys.argv[1:] if argv is None else list(argv)
    set_command(raw)
    args = parser.parse_args(joined(raw))
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    if getattr(args, "no_cache", False):
        from npusim.studies import cache

        with cache.disabled():
            return args.func(args) or 0
    return args.func(args) or 0


def _fail(message: str, status: int = 2) -> int:
    print(f"npusim: error: {' '.join(message.split())}", file=sys.stderr)
    return status


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="npusim", epilog=EXAMPLES,
                    formatter_class=argparse.RawDescriptionHelpFormatter,
                    description="Cycle-approximate simulator of Ascend NPU AI cores.")
    sub = parser.add_subparsers(title="commands", parser_class=Parser)
    p = sub.add_parser("chips", help="list the chip models",
                       description="The chip models: cores, clock, buffers, GM, L2, cube peak.")
    p.set_defaults(func=commands.chips_command)
    _op_command(sub, "run", "run one operator on one chip, check it, summarise it")
    _op_command(sub, "compare", "run one operator on several chips side by side")
    _op_command(sub, "sweep", "run one operator over a space of tilings: which is fastest, "
                "why, and at what buffer cost")
    p = sub.add_parser("predict", help="predict a model step's backward pass from a workload "
                       "file, on several chips", description="Run every operator call of a "
                       "workload (models/workloads/*.toml, or a file) timing-only on each chip "
                       "and write report.md, a standalone report.html, report.json and report.csv.")
    p.add_argument("workload", help="a workload name (resnet50-backward, "
                   "moe-llm-layer-backward) or a .toml file")
    p.add_argument("--chips", default="atlas-training,atlas-a2",
                   help="comma-separated chip models or chip TOML files (default "
                   "atlas-training,atlas-a2; see npusim chips)")
    p.add_argument("--batch", metavar="N", help="rescale the workload to batch N (its calls "
                   "declare their batch dimension; the shipped workloads do)")
    _executor_arguments(p)
    _fast_argument(p)
    p.add_argument("--out", metavar="DIR", required=True, help="folder for the report")
    p.set_defaults(func=commands.predict_command)
    p = sub.add_parser("validate", help="predictions against published hardware "
                       "measurements", description="Run every row of the validation table "
                       "(published Ascend measurements: npusim/studies/validate/validation.toml) "
                       "timing-only and print each row's measured and predicted time, error "
                       "and tolerance, the mean absolute error, and each ranking pair (two "
                       "measured tilings of one case: npusim's ratio of their times against "
                       "the measured one). Exits 1 when a counted row or a pair is outside "
                       "its tolerance.")
    _executor_arguments(p)
    _fast_argument(p)
    p.add_argument("--skip-slow", action="store_true",
                   help="leave out the rows marked slow (the 6144^3 and 8192^3 GEMMs)")
    p.add_argument("--table", metavar="FILE", help="another table of the same form")
    p.add_argument("--out", metavar="DIR", help="write validation.md, validation.csv, "
                   "validation.json and validation.png (predicted against measured) to DIR")
    p.add_argument("--record", action="store_true", help="for maintainers, after a model "
                   "change: record this run's figures in npusim/studies/validate/"
                   "validation_status.toml, which the tests and the error bands read (every "
                   "row must run)")
    p.add_argument("--steps", action="store_true", help="also run the second block: "
                   "published whole-step training times (npusim/studies/validate/steps.toml) "
                   "against each row's workload predicted at its batch (minutes)")
    p.set_defaults(func=commands.validate_command)
    p = sub.add_parser("correlate", help="npusim against an msprof op_summary CSV from "
                       "real hardware", description="Run every row of an msprof op_summary "
                       "CSV whose operator npusim models (SiluGrad, Conv2D/3D backprop "
                       "input and filter, CrossEntropyLossGrad, EmbeddingDenseGrad, "
                       "MoeTokenPermuteGrad) timing-only on CHIP and compare each with its "
                       "Task Duration; rows it cannot model are listed with the reason.")
    p.add_argument("csv", metavar="OP_SUMMARY.csv", help="an msprof op_summary_*.csv")
    p.add_argument("--chip", default="atlas-a2", help="the chip model the CSV was measured "
                   "on (default atlas-a2; see npusim chips)")
    _executor_arguments(p)
    p.add_argument("--out", metavar="DIR", help="write correlate.md, correlate.csv, "
                   "correlate.json and correlate.png (predicted against measured) to DIR")
    p.set_defaults(func=commands.correlate_command)
    p = sub.add_parser("demo", help="every operator on both chips: a Markdown report",
                       description="Run every operator on atlas-training and atlas-a2 at "
                                   "moderate sizes and write a Markdown report with tables "
                                   "and plots.")
    p.add_argument("--out", default="npusim-demo", metavar="DIR",
                   help="folder for the report (default: ./npusim-demo)")
    p.add_argument("--quick", action="store_true", help="small shapes: a smoke test in seconds")
    p.set_defaults(func=commands.demo_command)
    p = sub.add_parser("bench", help="measure simulator speed (instructions per second)",
                       description="Simulator speed on this machine: instructions per second, "
                       "wall time and peak RSS of each case (each in a process of its own).")
    p.add_argument("--quick", action="store_true", help="smaller cases")
    p.add_argument("--group", action="append",
                   choices=("micro", "standard", "ops", "large", "explain", "memory",
                            "predict", "fast"),
                   help="only these groups (repeat; default micro, standard and ops): the "
                   "engine's micro-kernels, the standard speed cases, every operator at its "
                   "default size; large (minutes): SiluBackward 32M and the 6144^3 1x1 conv "
                   "with numerics; explain: the standard cases with --explain (with large: "
                   "also the 6144^3 conv); memory (half an hour): the peak RSS of the large "
                   "runs of docs/guide/memory.md; predict (minutes): ResNet-50 at batch 32 "
                   "and 256 on both chips, --jobs 2, whole and --fast; fast (half an hour): "
                   "every validation row, pinned case and batch-64 ResNet-50 point and the "
                   "batch-256 3x3 point, whole and fast, their difference in cycles (the "
                   "point's and its furthest kernel's) and wall time")
    p.add_argument("--json", metavar="FILE", help="also write the rows to FILE")
    p.add_argument("--against", metavar="FILE",
                   help="a --json file of another checkout: show each case's speed-up over it")
    p.set_defaults(func=commands.bench_command)
    _lesson_parser(sub)
    p = sub.add_parser("cache", help="the cache of simulated study points: where, or clear it",
                       description="sweep, predict, validate and correlate keep each point's "
                       "record, keyed by the point, its chip file and the code, under "
                       "$XDG_CACHE_HOME/npusim (default ~/.cache/npusim).")
    p.add_argument("action", choices=("path", "clear"), help="print the folder, or delete "
                   "every record")
    p.set_defaults(func=_cache_command)
    return parser


def _cache_command(args) -> int:
    from npusim.studies import cache

    if args.action == "clear":
        count, root = cache.clear()
        print(f"removed {count} cached point{'s' if count != 1 else ''} from {root}")
    else:
        print(cache.cache_dir())
    return 0


def _lesson_parser(sub) -> None:
    """``npusim lesson list`` and ``npusim lesson check N FILE.py`` (docs/lessons/)."""
    p = sub.add_parser("lesson", help="the lessons' exercises: list them, or check your kernel",
                       description="Grade a kernel written for an exercise of docs/lessons/: "
                       "bit-exact against the lesson's golden, cycles against its target, "
                       "and any race or deadlock the sanitizer finds. Exits 1 when it does "
                       "not pass yet, 2 for bad input.")
    actions = p.add_subparsers(title="actions", dest="action", required=True,
                               parser_class=Parser)
    actions.add_parser("list", help="the lessons with an exercise, and what each asks")
    q = actions.add_parser("check", help="run FILE.py's kernel for lesson N and grade it "
                           "(or every .py file of a folder: a table ranked by cycles)")
    q.add_argument("number", type=int, metavar="N", help="the lesson's number")
    q.add_argument("file", metavar="FILE.py|DIR", help="your Python file, or a folder of "
                   "them (a class's submissions)")
    q.add_argument("--timeout", type=_seconds, default=120.0, metavar="SECONDS",
                   help="stop a check that runs longer (default 120; 0: no limit)")
    p.set_defaults(func=_lesson_command)


def _lesson_command(args) -> int:
    from pathlib import Path

    from npusim.face.lesson import lesson_command

    if args.action == "check" and Path(args.file).is_dir():   # a class's submissions
        from npusim.face.lesson_class import class_command

        return class_command(args.number, Path(args.file),
                             None if args.timeout == 0 else args.timeout)
    return lesson_command(args)


def _op_command(sub, name: str, help_text: str) -> None:
    """``npusim run OP`` / ``npusim compare OP``: one sub-parser per operator, so that
    ``npusim run OP --help`` documents that operator's shape and parameters."""
    from npusim.cases import CASES, KERNEL_CASES

    p = sub.add_parser(name, help=help_text, description=help_text + ".")
    ops = p.add_subparsers(title="operators", metavar="OP", parser_class=Parser, dest="op",
                           required=True)
    for case in (*CASES.values(), *KERNEL_CASES.values()):
        if not case.available():
            continue
        op = case.name not in KERNEL_CASES
        aliases = [case.aclnn.removeprefix("aclnn"), case.aclnn] if op else []
        q = ops.add_parser(case.name, aliases=aliases, help=case.summary,
                           description=f"{case.aclnn if op else case.name}: {case.summary}.",
                           epilog=_op_epilog(case, name),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        if name == "sweep":
            _sweep_arguments(q, case)
        else:
            _op_arguments(q, case, name)
        q.set_defaults(func={"run": commands.run_command, "compare": commands.compare_command,
                             "sweep": commands.sweep_command}[name],
                       case=case)


def _op_arguments(p, case, command: str) -> None:
    if command == "run":
        p.add_argument("--chip", default="atlas-a2", help="chip model (default atlas-a2; "
                       "see npusim chips)")
    else:
        p.add_argument("--chips", default="atlas-training,atlas-a2",
                       help="comma-separated chip models (default atlas-training,atlas-a2)")
    _case_arguments(p, case)
    p.add_argument("--tiling", action="append", default=[], metavar="KEY=VALUE",
                   help="override a field of the host tiling, e.g. tile_length=4096")
    p.add_argument("--mode", choices=("timed", "functional"), default="timed",
                   help="timed: SimPy run with cycles (default); functional: program order")
    p.add_argument("--seed", type=_seed, default=0,
                   help="random input seed, an integer >= 0 (default 0)")
    if command == "run":
        p.add_argument("--check", choices=("on", "off"), default="on",
                       help="compare every output bit for bit with its numpy golden (on, the "
                       "default), or skip the golden (off: the run says so)")
    what = ("trace.json, summary.json, pipeline.png, memory.png (and critical_path.png "
            "with --explain)" if command == "run" else "compare.png, compare.json, compare.md")
    p.add_argument("--out", metavar="DIR", help=f"write {what} to DIR")
    if command == "run":
        p.add_argument("--explain", action="store_true",
                       help="print the critical path: its cycles per pipe and kind of wait, "
                            "and what-ifs (each pipe 2x faster or free, HBM 2x)")


def _case_arguments(p, case) -> None:
    """--shape, --dtype and --param: what run, compare and sweep take alike."""
    shape = "x".join(map(str, case.default_shape))
    p.add_argument("--shape", help=f"{case.shape_help}, e.g. {shape} (the default)")
    p.add_argument("--dtype", default=case.dtypes[0],
                   help=f"one of {', '.join(case.dtypes)} (default {case.dtypes[0]})")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="an operator parameter (listed below); repeat for more")


def _fast_argument(p) -> None:
    p.add_argument("--fast", action="store_true", help="leave out the repeated periods of "
                   "the kernels' steady tile loops, advancing each pipe over them by the "
                   "periods it ran: an approximation, timing only (npusim bench --group fast "
                   "measures its error per point and kernel), about 2.7x faster on a "
                   "batch-256 ResNet-50 prediction")


def _executor_arguments(p) -> None:
    """--jobs and --scheduler: where the study executor runs the points."""
    p.add_argument("--jobs", type=_positive, help="local processes (default: the cores)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="run on a Dask distributed "
                   "cluster, e.g. tcp://10.0.0.5:8786 (pip install \"npusim[cluster]\")")
    p.add_argument("--no-cache", action="store_true", help="simulate every point again, "
                   "neither reading nor writing the cache of points (see npusim cache)")


def _sweep_arguments(p, case) -> None:
    p.add_argument("--chip", default="atlas-a2", help="chip model (default atlas-a2)")
    _case_arguments(p, case)
    p.add_argument("--tiling", action="append", default=[], metavar="FIELD=SPACE",
                   required=True, help="a tiling field and its values: a list (2048,4096), an "
                   "inclusive range (8:48:8) or powers of two (pow2:1024:16384); several give "
                   "their product")
    p.add_argument("--samples", type=_positive, help="draw N points of the product at random")
    p.add_argument("--seed", type=_seed, default=0, help="seed of --samples (default 0)")
    _executor_arguments(p)
    p.add_argument("--check", choices=("best", "all", "none"), default="best",
                   help="rerun the fastest point with numerics on and check it bit for bit "
                   "(best, the default), check every point (all), or none")
    p.add_argument("--resume", action="store_true",
                   help="finish a sweep in --out, skipping the points already there")
    p.add_argument("--out", metavar="DIR", required=True, help="folder for sweep.csv, "
                   "sweep.json, sweep.md, sweep.png, pareto.png")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a positive integer")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: a number of seconds >= 0 (0: no limit)")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"seed {text!r}: an integer >= 0")
    return value


def _op_epilog(case, command: str) -> str:
    lines = [case.notes, ""] if case.notes else []
    if case.params:
        lines.append("parameters (--param KEY=VALUE):")
        lines += [f"  {p.name:<16}{p.help} (default {p.default})" for p in case.params]
    else:
        lines.append("parameters: none")
    if case.tiling_help:
        lines += ["", "tiling fields (--tiling KEY=VALUE):",
                  *textwrap.wrap(case.tiling_help, 90, initial_indent="  ",
                                 subsequent_indent="  ")]
    if command == "sweep":
        return "\n".join(lines + ["", "example:", f"  npusim sweep {case.name} "
                                   f"{case.sweep_example} --out sweep-{case.name}"])
    lines += ["", "examples:", f"  npusim {command} {case.name} --dtype {case.dtypes[0]}"]
    lines += [f"  npusim {command} {case.name} {extra}" for extra in case.examples]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
