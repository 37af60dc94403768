"""What each ``npusim`` command does, once ``npusim.face.cli`` has parsed its arguments: one
function per command, taking the parsed arguments and returning the exit status.

Each imports what it needs when it runs, so that ``npusim chips`` or a usage error does not
load the simulator, the studies or matplotlib.
"""

import json
import os

from npusim.errors import NpusimError


def sweep_command(args) -> int:
    from npusim.cases import parse_shape
    from npusim.studies.executor import default_jobs
    from npusim.studies.sweep.study import sweep

    case = args.case
    rows = sweep(case.name, chip=args.chip,
                 shape=parse_shape(args.shape, args.case) if args.shape else None, dtype=args.dtype,
                 params=_pairs(args.param, "--param"), space=args.tiling,
                 samples=args.samples, seed=args.seed, jobs=args.jobs or default_jobs(),
                 scheduler=args.scheduler, check=args.check, out=args.out,
                 resume=args.resume)
    with open(os.path.join(args.out, "sweep.md")) as f:
        print(f.read().rstrip())
    print(f"wrote sweep.csv, sweep.id.json, sweep.json, sweep.md, sweep.png, pareto.png to "
          f"{args.out}")
    return 1 if any(r["status"] == "mismatch" for r in rows) else 0


def predict_command(args) -> int:
    from npusim.face import interrupt
    from npusim.face.outdir import OutputDir
    from npusim.face.progress import Bar
    from npusim.studies.executor import connect, default_jobs
    from npusim.studies.predict.report import text_lines, write_report
    from npusim.studies.predict.study import predict, resolve_chips
    from npusim.studies.workload import load_workload, rescale

    wl = load_workload(args.workload)
    if args.batch is not None:
        wl = rescale(wl, _batch(args.batch))
    chips = [c.strip() for c in args.chips.split(",") if c.strip()]
    if not chips:
        raise NpusimError("--chips: name at least one chip (see npusim chips)")
    chips = list(resolve_chips(chips).values())
    client = connect(args.scheduler) if args.scheduler else None
    with OutputDir(args.out) as out:
        modelled = sum(c.modelled for c in wl.calls) * len(chips)
        bar = Bar(modelled, 0, label="predict")
        try:
            result = predict(wl, chips, jobs=args.jobs or default_jobs(), scheduler=client,
                             on_record=lambda i, r: bar.step(), on_more=bar.grow,
                             fast=args.fast)
        finally:
            bar.close()
            if client is not None:
                client.close()
        names = write_report(result, out)
        print(f"{wl.name}: {len(wl.calls)} calls on {', '.join(result['chips'])}")
        print("\n".join(text_lines(result)), flush=True)
        interrupt.check()     # a Ctrl-C the report's drawing swallowed: no folder, exit 130
    print(f"wrote {', '.join(names)} to {out.shown}")
    return 0


def _batch(text: str) -> int:
    try:
        batch = int(text)
    except ValueError:
        batch = 0
    if batch < 1:
        raise NpusimError(f"--batch {text}: a positive integer (the step's batch, e.g. 64)")
    return batch


def validate_command(args) -> int:
    from npusim.studies.validate.report import text_lines, write_validation
    from npusim.studies.validate.study import load_table, validate, write_status

    rows = load_table(args.table)
    todo = {r.key() for r in rows if not (args.skip_slow and r.slow)}
    result = _study(args, len(todo), "validate",
                    lambda **kw: validate(rows, slow=not args.skip_slow, fast=args.fast,
                                          **kw),
                    text_lines, write_validation)
    if args.record and not args.table:
        print(f"recorded the table's figures in {write_status(result)}")
    steps_missed = _validate_steps(args)
    # 1: a counted row outside its tolerance, or a ranking pair outside its own
    return 0 if not (result["missed"] or result["pairs_missed"] or steps_missed) else 1


def _validate_steps(args) -> bool:
    """The second block (whole-step rows): run with --steps, else named; True when a row ran
    outside its tolerance."""
    from npusim.studies.executor import default_jobs
    from npusim.studies.validate.steps import lines, load_steps
    from npusim.studies.validate.steps_run import run_steps

    rows = load_steps()
    if not args.steps:
        print(f"whole-step rows: {len(rows)} in npusim/studies/validate/steps.toml, not run "
              "(npusim validate --steps runs them: minutes)")
        return False
    print("whole-step rows (published training steps against the predicted step):")
    found = run_steps(rows, jobs=args.jobs or default_jobs())
    for line in lines(found):
        print(f"  {line}")
    return any(x["counted"] and not x["within"] for x in found)


def correlate_command(args) -> int:
    from npusim.chip import load_chip
    from npusim.studies.validate.correlate import correlate, plan, read_csv
    from npusim.studies.validate.report import correlate_text, write_correlation

    chip = load_chip(args.chip)
    rows = read_csv(args.csv)
    _study(args, len(plan(rows, chip.name, args.csv)[1]), "correlate",
           lambda **kw: {**correlate(args.csv, chip.name, rows=rows, **kw),
                         "chip_spec": args.chip},     # the band checks the chip file
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
    shape = parse_shape(args.shape, case) if args.shape else case.default_shape
    dtype = parse_dtype(args.dtype, case)
    params = case.parse_params(_pairs(args.param, "--param"))
    return case, shape, dtype, params, _tiling(args.tiling)


def run_command(args) -> int:
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
                           seed=args.seed, check=args.check == "on")
        print("\n".join(summary_lines(run)))
        explained = _explain(run) if args.explain else None
        if out is not None:
            with Progress("writing the trace and plots"):
                names = write_run_files(run, out, explained)
    if out is not None:
        print(f"wrote {', '.join(names)} to {out.shown}")
    return 0 if run.ok else 1


def _explain(run):
    """Print the run's critical path and what-ifs (``npusim run --explain``); return it."""
    from npusim.errors import NpusimError
    from npusim.face.progress import Progress

    if run.result is None or run.result.mode != "timed":
        raise NpusimError("--explain needs a timed run (--mode timed)")
    with Progress("following the critical path"):
        explained = run.result.explain()
    print(str(explained))
    return explained


def write_run_files(run, out, explained=None) -> list:
    """summary.json and, for a timed run, trace.json, pipeline.png, memory.png into ``out``;
    with ``explained`` (``--explain``) also critical_path.png."""
    from npusim.face import plot
    from npusim.face.report import summary_dict

    _write_json(out.file("summary.json"), summary_dict(run))
    names = ["summary.json"]
    if run.result.tracer is not None:
        run.result.write_trace(out.file("trace.json"))
        plot.pipeline(run.result, out.file("pipeline.png"), max_cores=2)
        plot.memory(run.result, out.file("memory.png"))
        names += ["trace.json", "pipeline.png", "memory.png"]
    if explained is not None:
        plot.critical_path(run.result, explained.path, out.file("critical_path.png"))
        names.append("critical_path.png")
    return names


def _write_json(path: str, data) -> None:
    with open(path, "w") as f:
        json.dump(data, f, indent=1, default=str)
        f.write("\n")


def compare_command(args) -> int:
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


def chips_command(args) -> int:
    from npusim.face.report import chip_table

    for line in chip_table():
        print(line)
    return 0


def demo_command(args) -> int:
    from npusim.face.demo import run_demo

    return run_demo(args.out, quick=args.quick)


def bench_command(args) -> int:
    from npusim.face.bench import run_bench

    return run_bench(quick=args.quick, groups=args.group or ("micro", "standard", "ops"),
                     json_path=args.json, against=args.against)
