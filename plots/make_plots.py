"""Regenerate every figure of the README and docs/ with npusim: ``python plots/make_plots.py``.

- ``silu_double_buffering.png`` / ``silu_single_buffering.png``: the pipes of one vector core
  running SiluBackward's tile loop, with and without double buffering;
- ``silu_chips.png``: SiluBackward on atlas-training and atlas-a2 against the roofline;
- ``silu_dtypes.png``: SiluBackward per dtype on both chips (bars);
- ``conv_chips.png``: ConvolutionBackward on both chips (bars);
- ``conv_pipeline_<chip>.png`` / ``conv_memory_<chip>.png``: the pipes and the buffers through
  the whole operator (TransData, gradInput, gradWeight, gradBias) of every core type the run
  used: on atlas-a2 the first cube core (FixPipe out of L0C; L1, L0A, L0B, L0C) above the first
  vector core (UB), on atlas-training one coupled core (L0C -> UB, vector cast, MTE3);
- ``docs/modelling/validation.png``: ``npusim validate``'s table, predicted against measured
  (every row, the slow GEMMs too: minutes; ``--skip-validation`` leaves it alone).

Every number in the figures comes from a simulated run; nothing is drawn from a formula except
the dashed roofline bound. The script prints each number the pages quote as ``key = value``
(``tests/quoted.py``); ``--numbers`` prints them without drawing (seconds: what
``tests/test_figures.py`` holds the pages against); ``--out DIR`` draws under DIR instead.
"""

import argparse
import sys
from pathlib import Path

from npusim.cases import CASES
from npusim.cases.run import compare_runs, metrics, run_case

ROOT = Path(__file__).resolve().parents[1]
CHIPS = ("atlas-training", "atlas-a2")
SILU = CASES["silu_backward"]
CONV = CASES["convolution_backward"]
# one AIV walking 8 tiles of 2048 fp16 elements: long enough to show the loop's steady state
TILE_LOOP = dict(shape=(2, 8 * 2048), tiling=dict(block_dim=2, tile_length=2048))
# every figure this script writes, relative to the repository; the pages link exactly these
OUTPUTS = ("plots/silu_double_buffering.png", "plots/silu_single_buffering.png",
           "plots/silu_chips.png", "plots/silu_dtypes.png", "plots/conv_chips.png",
           *(f"plots/conv_{kind}_{chip}.png" for chip in CHIPS for kind in ("pipeline", "memory")),
           "docs/modelling/validation.png")


def say(key: str, value) -> None:
    """Print a number a page quotes, as ``key = value`` (integers with thousands commas)."""
    print(f"{key} = {value:,}" if isinstance(value, int) else f"{key} = {value}")


def target(out: Path, name: str) -> Path:
    """Where figure ``name`` (a path relative to the repository) goes under ``out``."""
    path = out / name
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def tile_loop(buffer_num: int, name: str, out: Path | None) -> None:
    """The pipes of core 0 for SiluBackward's tile loop with ``buffer_num`` buffers per queue
    (``out``: the folder the figures go under; None: the numbers alone)."""
    tiling = dict(TILE_LOOP["tiling"], buffer_num=buffer_num)
    run = run_case(SILU, "atlas-a2", TILE_LOOP["shape"], "float16", {}, tiling=tiling,
                   trace=out is not None)
    if out is not None:
        from npusim.face import plot
        plot.pipeline(run.result, target(out, f"plots/{name}"), cores=[0])
    key = {2: "double", 1: "single"}[buffer_num]
    say(f"silu_{key}_cycles", int(run.result.cycles))


def silu_chips(out: Path | None) -> None:
    """SiluBackward at its default shape on both chips: time, roofline share, pipes' use."""
    shape = SILU.default_shape
    runs = compare_runs(SILU, CHIPS, shape, "float16", {}, trace=False)
    for run in runs:
        m = metrics(run)
        say(f"silu.{run.chip.name}.cycles", int(m["cycles"]))
        say(f"silu.{run.chip.name}.roofline", f"{m['roofline_ratio']:.0%}")
        say(f"silu.{run.chip.name}.v_busy", f"{m['pipe_utilisation']['V']:.0%}")
    if out is not None:
        from npusim.face import charts
        charts.compare(runs, target(out, "plots/silu_chips.png"))
        groups = {dtype: compare_runs(SILU, CHIPS, shape, dtype, {}, trace=False)
                  for dtype in SILU.dtypes}
        charts.bars(groups, target(out, "plots/silu_dtypes.png"),
                    f"aclnnSiluBackward {'x'.join(map(str, shape))}: simulated time per dtype")


def conv_chips(out: Path | None) -> None:
    """ConvolutionBackward at the demo's shape on both chips, and each run's pipes and
    buffers: the first core of every type it used (``plot.shown_cores``,
    ``plot.memory_panels``). Traced even for the numbers: the peak live UB comes from the
    trace's memory marks (without one, the stats give the bytes carved, not the bytes live)."""
    runs = compare_runs(CONV, CHIPS, CONV.demo_shape, "float16", CONV.parse_params({}))
    for run in runs:
        m = metrics(run)
        say(f"conv.{run.chip.name}.cycles", int(m["cycles"]))
        say(f"conv.{run.chip.name}.time_us", f"{m['time_us']:.1f}")
        say(f"conv.{run.chip.name}.peak_ub_kb", f"{m['peak_live_bytes']['UB'] / 1024:.1f}")
    if out is not None:
        from npusim.face import charts, plot
        charts.compare(runs, target(out, "plots/conv_chips.png"))
        for run in runs:
            chip = run.chip.name
            plot.pipeline(run.result, target(out, f"plots/conv_pipeline_{chip}.png"), max_cores=1)
            plot.memory(run.result, target(out, f"plots/conv_memory_{chip}.png"))


def validation(out: Path) -> None:
    """``npusim validate`` over the whole table (one process), its plot into docs/modelling/."""
    from npusim.studies.validate.report import plot_validation
    from npusim.studies.validate.study import validate

    result = validate(slow=True)
    plot_validation(result, target(out, "docs/modelling/validation.png"))
    print(f"validation.png: {result['within']} of {result['ran']} counted rows within tolerance")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--numbers", action="store_true",
                        help="print the numbers the pages quote, draw nothing")
    parser.add_argument("--skip-validation", action="store_true",
                        help="leave docs/modelling/validation.png (minutes) alone")
    parser.add_argument("--out", type=Path, default=ROOT,
                        help="write the figures under DIR (plots/..., docs/...) instead of the "
                             "repository")
    args = parser.parse_args(argv)
    out = None if args.numbers else args.out
    tile_loop(2, "silu_double_buffering.png", out)
    tile_loop(1, "silu_single_buffering.png", out)
    silu_chips(out)
    conv_chips(out)
    if out is not None and not args.skip_validation:
        validation(out)
    for path in OUTPUTS if out is not None else ():
        if (out / path).exists():
            (out / path).chmod(0o644)   # the plots are written private first, then renamed
    return 0


if __name__ == "__main__":
    sys.exit(main())
