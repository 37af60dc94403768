"""The ``npusim`` command: chips, run, compare, sweep, predict, validate, correlate, demo,
bench.

Errors are one line on stderr and a non-zero exit (2 for bad input, 1 when an output differs
from its golden), never a traceback; files appear only when a command completes (see
``npusim.face.outdir``). Set ``NPUSIM_DEBUG=1`` to see the traceback of an internal error.
"""

import argparse
import json
import os
import sys
import textwrap

from npusim.errors import NpusimError

EXAMPLES = """examples:
  npusim chips
  npusim run silu_backward --chip atlas-a2 --shape 4x1024x1024 --dtype float16 --out silu
  npusim compare silu_backward --dtype bfloat16
  npusim sweep silu_backward --tiling tile_length=pow2:1024:8192 --tiling buffer_num=1,2 --out sw
  npusim predict resnet50-backward --out resnet50
  npusim validate --skip-slow --out validation
  npusim correlate op_summary_0_1.csv --chip atlas-a2 --out correlation
  npusim demo --out npusim-demo
"""


class Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return args.func(args) or 0
    except NpusimError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        print("npusim: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:
        return _fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
    except Exception as exc:  # noqa: BLE001 - a bug: still one line, the details on request
        if os.environ.get("NPUSIM_DEBUG"):
            raise
        return _fail(f"internal error: {type(exc).__name__}: {exc} "
                     "(set NPUSIM_DEBUG=1 for the traceback)", 3)


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
    p.set_defaults(func=_chips)
    _op_command(sub, "run", "run one operator on one chip, check it, summarise it")
    _op_command(sub, "compare", "run one operator on several chips side by side")
    _op_command(sub, "sweep", "run one operator over a space of tilings: which is fastest, "
                "why, and at what buffer cost")
    p = sub.add_parser("predict", help="predict a model step's backward pass from a workload "
                       "file, on several chips", description="Run every operator call of a "
                       "workload (models/workloads/*.toml, or a file) timing-only on each chip "
                       "and write report.md, a standalone report.html and report.json.")
    p.add_argument("workload", help="a workload name (resnet50-backward, "
                   "moe-llm-layer-backward) or a .toml file")
    p.add_argument("--chips", default="atlas-training,atlas-a2",
                   help="comma-separated chip models (default atlas-training,atlas-a2)")
    _executor_arguments(p)
    p.add_argument("--out", metavar="DIR", required=True, help="folder for the report")
    p.set_defaults(func=_predict)
    p = sub.add_parser("validate", help="predictions against published hardware "
                       "measurements", description="Run every row of the validation table "
                       "(published Ascend measurements: npusim/studies/validation.toml) "
                       "timing-only and print each row's measured and predicted time, error "
                       "and tolerance, and the mean absolute error. Exits 1 when a row is "
                       "outside its tolerance.")
    _executor_arguments(p)
    p.add_argument("--skip-slow", action="store_true",
                   help="leave out the rows marked slow (the 6144^3 and 8192^3 GEMMs)")
    p.add_argument("--table", metavar="FILE", help="another table of the same form")
    p.add_argument("--out", metavar="DIR", help="write validation.md, validation.csv, "
                   "validation.json and validation.png (predicted against measured) to DIR")
    p.set_defaults(func=_validate)
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
    p.set_defaults(func=_correlate)
    p = sub.add_parser("demo", help="every operator on both chips: a Markdown report",
                       description="Run every operator on atlas-training and atlas-a2 at "
                                   "moderate sizes and write a Markdown report with tables "
                                   "and plots.")
    p.add_argument("--out", default="npusim-demo", metavar="DIR",
                   help="folder for the report (default: ./npusim-demo)")
    p.add_argument("--quick", action="store_true", help="small shapes: a smoke test in seconds")
    p.set_defaults(func=_demo)
    p = sub.add_parser("bench", help="measure simulator speed (instructions per second)",
                       description="Simulator speed on this machine: instructions per second, "
                       "wall time and peak RSS of each case (each in a process of its own).")
    p.add_argument("--quick", action="store_true", help="smaller cases")
    p.add_argument("--group", action="append", choices=("micro", "standard", "ops", "large"),
                   help="only these groups (repeat; default micro, standard and ops): the "
                   "engine's micro-kernels, the standard speed cases, every operator at its "
                   "default size; large (minutes): SiluBackward 32M and the 6144^3 1x1 conv "
                   "with numerics")
    p.add_argument("--json", metavar="FILE", help="also write the rows to FILE")
    p.add_argument("--against", metavar="FILE",
                   help="a --json file of another checkout: show each case's speed-up over it")
    p.set_defaults(func=_bench)
    return parser


def _op_command(sub, name: str, help_text: str) -> None:
    """``npusim run OP`` / ``npusim compare OP``: one sub-parser per operator, so that
    ``npusim run OP --help`` documents that operator's shape and parameters."""
    from npusim.cases import CASES

    p = sub.add_parser(name, help=help_text, description=help_text + ".")
    ops = p.add_subparsers(title="operators", metavar="OP", parser_class=Parser, dest="op",
                           required=True)
    for case in CASES.values():
        if not case.available():
            continue
        aliases = [case.aclnn.removeprefix("aclnn"), case.aclnn]
        q = ops.add_parser(case.name, aliases=aliases, help=case.summary,
                           description=f"{case.aclnn}: {case.summary}.",
                           epilog=_op_epilog(case, name),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        if name == "sweep":
            _sweep_arguments(q, case)
        else:
            _op_arguments(q, case, name)
        q.set_defaults(func={"run": _run, "compare": _compare, "sweep": _sweep}[name],
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
    what = ("trace.json, summary.json, pipeline.png, memory.png" if command == "run"
            else "compare.png, compare.json, compare.md")
    p.add_argument("--out", metavar="DIR", help=f"write {what} to DIR")


def _case_arguments(p, case) -> None:
    """--shape, --dtype and --param: what run, compare and sweep take alike."""
    shape = "x".join(map(str, case.default_shape))
    p.add_argument("--shape", help=f"{case.shape_help}, e.g. {shape} (the default)")
    p.add_argument("--dtype", default=case.dtypes[0],
                   help=f"one of {', '.join(case.dtypes)} (default {case.dtypes[0]})")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="an operator parameter (listed below); repeat for more")


def _executor_arguments(p) -> None:
    """--jobs and --scheduler: where the study executor runs the points."""
    p.add_argument("--jobs", type=_positive, help="local processes (default: the cores)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="run on a Dask distributed "
                   "cluster, e.g. tcp://10.0.0.5:8786 (pip install \"npusim[cluster]\")")


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


def _sweep(args) -> int:
    from npusim.cases import parse_shape
    from npusim.studies.executor import default_jobs
    from npusim.studies.sweep import sweep

    case = args.case
    rows = sweep(case.name, chip=args.chip,
                 shape=parse_shape(args.shape) if args.shape else None, dtype=args.dtype,
                 params=_pairs(args.param, "--param"), space=args.tiling,
                 samples=args.samples, seed=args.seed, jobs=args.jobs or default_jobs(),
                 scheduler=args.scheduler, check=args.check, out=args.out,
                 resume=args.resume)
    with open(os.path.join(args.out, "sweep.md")) as f:
        print(f.read().rstrip())
    print(f"wrote sweep.csv, sweep.json, sweep.md, sweep.png, pareto.png to {args.out}")
    return 1 if any(r["status"] == "mismatch" for r in rows) else 0


def _predict(args) -> int:
    from npusim.face.outdir import OutputDir
    from npusim.face.progress import Bar
    from npusim.studies.executor import connect, default_jobs
    from npusim.studies.predict import predict
    from npusim.studies.predict_report import headline, write_report
    from npusim.studies.workload import load_workload

    wl = load_workload(args.workload)
    chips = [c.strip() for c in args.chips.split(",") if c.strip()]
    if not chips:
        raise NpusimError("--chips: name at least one chip (see npusim chips)")
    client = connect(args.scheduler) if args.scheduler else None
    with OutputDir(args.out) as out:
        modelled = sum(c.modelled for c in wl.calls) * len(chips)
        bar = Bar(modelled, 0, label="predict")
        try:
            result = predict(wl, chips, jobs=args.jobs or default_jobs(), scheduler=client,
                             on_record=lambda i, r: bar.step())
        finally:
            bar.close()
            if client is not None:
                client.close()
        names = write_report(result, out)
    print(f"{wl.name}: {len(wl.calls)} calls on {', '.join(chips)}")
    print("\n".join(line.replace("**", "") for line in headline(result)))
    print(f"wrote {', '.join(names)} to {out.shown}")
    return 0


def _validate(args) -> int:
    from npusim.studies.validate import load_table, validate
    from npusim.studies.validate_report import text_lines, write_validation

    rows = load_table(args.table)
    todo = {r.key() for r in rows if not (args.skip_slow and r.slow)}
    result = _study(args, len(todo), "validate",
                    lambda **kw: validate(rows, slow=not args.skip_slow, **kw),
                    text_lines, write_validation)
    return 0 if result["within"] == result["ran"] else 1


def _correlate(args) -> int:
    from npusim.chip import load_chip
    from npusim.studies.correlate import correlate, plan, read_csv
    from npusim.studies.validate_report import correlate_text, write_correlation

    chip = load_chip(args.chip)
    rows = read_csv(args.csv)
    _study(args, len(plan(rows, chip.name)[1]), "correlate",
           lambda **kw: correlate(args.csv, chip.name, rows=rows, **kw),
           correlate_text, write_correlation)
    return 0


def _study(args, points: int, label: str, run, text, write):
    """Run a study's points on the executor ``args`` asks for (--jobs, --scheduler) with a
    points bar, print its text, write its files into --out if given; return its result."""
    from contextlib import nullcontext

    from npusim.face.outdir import OutputDir
    from npusim.face.progress import Bar
    from npusim.studies.executor import connect, default_jobs

    client = connect(args.scheduler) if args.scheduler else None
    with OutputDir(args.out) if args.out else nullcontext() as out:
        bar = Bar(points, 0, label=label)
        try:
            result = run(jobs=args.jobs or default_jobs(), scheduler=client,
                         on_record=lambda i, r: bar.step())
        finally:
            bar.close()
            if client is not None:
                client.close()
        print("\n".join(text(result)))
        names = write(result, out) if out is not None else []
    if out is not None:
        print(f"wrote {', '.join(names)} to {out.shown}")
    return result


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


def _pairs(items: list, flag: str) -> dict:
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise NpusimError(f"{flag} {item!r}: write KEY=VALUE")
        pairs[key.strip()] = value.strip()
    return pairs


def _tiling(items: list) -> dict:
    """``--tiling`` values: integers, true/false, else text; the operator checks the keys."""
    values = {}
    for key, text in _pairs(items, "--tiling").items():
        low = text.lower()
        if low in ("true", "false"):
            values[key] = low == "true"
        else:
            try:
                values[key] = int(text, 0)
            except ValueError:
                values[key] = text
    return values


def _inputs(args):
    """(case, shape, dtype, params, tiling) from the common op arguments, checked."""
    from npusim.cases import parse_dtype, parse_shape

    case = args.case
    shape = parse_shape(args.shape) if args.shape else case.default_shape
    dtype = parse_dtype(args.dtype, case)
    params = case.parse_params(_pairs(args.param, "--param"))
    return case, shape, dtype, params, _tiling(args.tiling)


def _run(args) -> int:
    from contextlib import nullcontext

    from npusim.cases.run import run_case
    from npusim.chip import load_chip
    from npusim.face.outdir import OutputDir
    from npusim.face.progress import Progress
    from npusim.face.report import summary_lines

    case, shape, dtype, params, tiling = _inputs(args)
    chip = load_chip(args.chip)
    with OutputDir(args.out) if args.out else nullcontext() as out:
        with Progress(f"running {case.name} on {chip.name}"):
            run = run_case(case, chip, shape, dtype, params, tiling=tiling, mode=args.mode,
                           seed=args.seed)
        print("\n".join(summary_lines(run)))
        if out is not None:
            with Progress("writing the trace and plots"):
                names = write_run_files(run, out)
    if out is not None:
        print(f"wrote {', '.join(names)} to {out.shown}")
    return 0 if run.ok else 1


def write_run_files(run, out) -> list:
    """summary.json and, for a timed run, trace.json, pipeline.png, memory.png into ``out``."""
    from npusim.face import plot
    from npusim.face.report import summary_dict

    _write_json(out.file("summary.json"), summary_dict(run))
    names = ["summary.json"]
    if run.result.tracer is not None:
        run.result.write_trace(out.file("trace.json"))
        plot.pipeline(run.result, out.file("pipeline.png"), max_cores=2)
        plot.memory(run.result, out.file("memory.png"))
        names += ["trace.json", "pipeline.png", "memory.png"]
    return names


def _write_json(path: str, data) -> None:
    with open(path, "w") as f:
        json.dump(data, f, indent=1, default=str)
        f.write("\n")


def _compare(args) -> int:
    from contextlib import nullcontext

    from npusim.cases.run import compare_runs
    from npusim.chip import load_chip
    from npusim.face import charts
    from npusim.face.outdir import OutputDir
    from npusim.face.progress import Progress
    from npusim.face.report import compare_markdown, compare_text

    case, shape, dtype, params, tiling = _inputs(args)
    chips = [load_chip(name.strip()) for name in args.chips.split(",") if name.strip()]
    if not chips:
        raise NpusimError("--chips: name at least one chip (see npusim chips)")
    with OutputDir(args.out) if args.out else nullcontext() as out:
        with Progress(f"running {case.name} on {len(chips)} chips"):
            runs = compare_runs(case, chips, shape, dtype, params, tiling, args.mode,
                                args.seed, trace=False)
        print(f"{case.aclnn}: {dtype}, shape {'x'.join(map(str, shape))}, seed {args.seed}")
        print("\n".join(compare_text(runs)))
        if out is not None:
            charts.compare(runs, out.file("compare.png"))
            _write_json(out.file("compare.json"), _compare_json(runs))
            with open(out.file("compare.md"), "w") as f:
                f.write("\n".join(compare_markdown(runs)) + "\n")
    if out is not None:
        print(f"wrote compare.png, compare.json, compare.md to {out.shown}")
    else:
        print("(add --out DIR for compare.png)")
    return 0 if all(r.ok for r in runs if not r.error) else 1


def _compare_json(runs) -> list:
    from npusim.face.report import summary_dict

    return [{"chip": r.chip.name, "error": r.error} if r.error else summary_dict(r)
            for r in runs]


def _chips(args) -> int:
    from npusim.face.report import chip_table

    for line in chip_table():
        print(line)
    return 0


def _demo(args) -> int:
    from npusim.face.demo import run_demo

    return run_demo(args.out, quick=args.quick)


def _bench(args) -> int:
    from npusim.face.bench import run_bench

    return run_bench(quick=args.quick, groups=args.group or ("micro", "standard", "ops"),
                     json_path=args.json, against=args.against)


if __name__ == "__main__":
    sys.exit(main())
