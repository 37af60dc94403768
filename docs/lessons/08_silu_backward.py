"""Lesson 8: a real operator, SiluBackward: its kernel, its tiling, then a sweep.

Run: python docs/lessons/08_silu_backward.py
"""

import shutil
import tempfile
from pathlib import Path

import numpy as np

import npusim
from npusim import golden, load_chip, ops
from npusim.face.lesson_specs import silu_target

FIGURES = Path(__file__).parent / "figures"
SHAPE = (4, 256, 1024)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(SHAPE).astype(np.float16),
            rng.standard_normal(SHAPE).astype(np.float16))


def bound_cycles(chip):
    """HBM roofline of 3 float16 tensors of SHAPE, plus the kernel launch on 48 cores
    (SiluGrad is a TBE kernel: it pays the TBE start-up)."""
    nbytes = 3 * 2 * int(np.prod(SHAPE))
    launch = chip.tbe_kernel_start_cycles + 48 * chip.kernel_start_per_block_cycles
    return nbytes / (chip.hbm_bytes_per_s / chip.clock_hz), launch


def main():
    chip = load_chip("atlas-a2")
    dy, x = inputs()
    r = ops.silu_backward(dy, x, chip=chip)
    print("silu_exact =", np.array_equal(r.outputs["gradInput"], golden.silu_backward(dy, x)))
    print(r.tiling)
    print(f"silu_default_cycles = {r.cycles:,}")
    for field in ("block_dim", "tile_length", "buffer_num"):
        print(f"silu_default_{field} = {getattr(r.tiling, field)}")
    counts = r.stats["instruction_counts"]
    print("instructions:", dict(sorted(counts.items())))
    memory, launch = bound_cycles(chip)
    print(f"silu_target = {silu_target(chip):,}")
    print(f"silu_hbm_bound_cycles = {memory:,.0f}")
    print(f"silu_launch_cycles = {launch:,}")
    for tiling in ({"buffer_num": 1}, {"tile_length": 1024, "buffer_num": 1}):
        t = ops.silu_backward(dy, x, chip=chip, tiling=tiling)
        name = "_".join(f"{k}_{v}" for k, v in tiling.items())
        print(f"silu_{name}_cycles = {t.cycles:,}")
    with tempfile.TemporaryDirectory() as out:
        rows = npusim.sweep("silu_backward", shape=SHAPE, out=out,
                            space=["tile_length=1024,2048,4096,6144", "buffer_num=1,2"])
        FIGURES.mkdir(exist_ok=True)
        shutil.copy(Path(out) / "sweep.png", FIGURES / "08_sweep.png")
    ok = sorted((row for row in rows if row["status"] == "ok"), key=lambda row: row["cycles"])
    for row in ok:
        print(row["tiling"], f"{row['cycles']:,}")
    best = ok[0]
    print(f"sweep_points = {len(rows)}")
    print(f"sweep_best_cycles = {best['cycles']:,}")
    print(f"sweep_best_tiling = {best['tiling']}")


if __name__ == "__main__":
    main()
