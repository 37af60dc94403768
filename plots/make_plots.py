"""Regenerate the figures of the README and docs/ with npusim: ``python plots/make_plots.py``.

- ``silu_double_buffering.png`` / ``silu_single_buffering.png``: the pipes of one vector core
  running SiluBackward's tile loop, with and without double buffering;
- ``silu_chips.png``: SiluBackward on atlas-training and atlas-a2 against the roofline;
- ``silu_dtypes.png``: SiluBackward per dtype on both chips (bars);
- ``conv_chips.png``: ConvolutionBackward on both chips (bars);
- ``conv_pipeline_atlas-a2.png`` / ``conv_pipeline_atlas-training.png``: the pipes of the first
  cube core (and on atlas-a2 the first vector core) through the whole operator (TransData,
  gradInput, gradWeight, gradBias): FixPipe out of L0C on atlas-a2, L0C->UB, vector cast and
  MTE3 on atlas-training.

Every number in the figures comes from a simulated run; nothing is drawn from a formula except
the dashed roofline bound.
"""

import sys
from pathlib import Path

from npusim.cases import CASES
from npusim.cases.run import compare_runs, run_case
from npusim.face import charts, plot

HERE = Path(__file__).resolve().parent
CHIPS = ("atlas-training", "atlas-a2")
SILU = CASES["silu_backward"]
# one AIV walking 8 tiles of 2048 fp16 elements: long enough to show the loop's steady state
TILE_LOOP = dict(shape=(2, 8 * 2048), tiling=dict(block_dim=2, tile_length=2048))


def tile_loop(buffer_num: int, name: str) -> None:
    """The pipes of core 0 for SiluBackward's tile loop with ``buffer_num`` buffers per queue."""
    tiling = dict(TILE_LOOP["tiling"], buffer_num=buffer_num)
    run = run_case(SILU, "atlas-a2", TILE_LOOP["shape"], "float16", {}, tiling=tiling)
    plot.pipeline(run.result, HERE / name, cores=[0])
    print(f"{name}: {run.result.cycles:,} cycles, buffer_num={buffer_num}")


def silu_chips() -> None:
    shape = SILU.default_shape
    runs = compare_runs(SILU, CHIPS, shape, "float16", {}, trace=False)
    charts.compare(runs, HERE / "silu_chips.png")
    groups = {dtype: compare_runs(SILU, CHIPS, shape, dtype, {}, trace=False)
              for dtype in SILU.dtypes}
    charts.bars(groups, HERE / "silu_dtypes.png",
                f"aclnnSiluBackward {'x'.join(map(str, shape))}: simulated time per dtype")
    print("silu_chips.png, silu_dtypes.png")


def conv_chips() -> None:
    conv = CASES["convolution_backward"]
    if not conv.available():
        print("conv_chips.png: skipped, npusim.ops has no convolution_backward yet")
        return
    runs = compare_runs(conv, CHIPS, conv.demo_shape, "float16", conv.parse_params({}))
    charts.compare(runs, HERE / "conv_chips.png")
    print("conv_chips.png")
    for run in runs:
        labels = run.result.stats["core_labels"]
        shown = [labels.index(c) for c in ("aic0", "aiv0", "core0") if c in labels]
        name = f"conv_pipeline_{run.chip.name}.png"
        plot.pipeline(run.result, HERE / name, cores=shown)
        print(f"{name}: {run.result.cycles:,} cycles")


def main() -> int:
    tile_loop(2, "silu_double_buffering.png")
    tile_loop(1, "silu_single_buffering.png")
    silu_chips()
    conv_chips()
    for png in HERE.glob("*.png"):
        png.chmod(0o644)     # the plots are written private first, then renamed
    return 0


if __name__ == "__main__":
    sys.exit(main())
