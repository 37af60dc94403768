"""Lesson 3: double buffering, the same kernel with two buffers per queue.

Run: python docs/lessons/03_double_buffering.py
"""

import importlib
from pathlib import Path

import numpy as np

from npusim.face import plot
from npusim.face.lesson_specs import ESTIMATES

lesson2 = importlib.import_module("02_vector")     # this folder is on sys.path when run
FIGURES = Path(__file__).parent / "figures"


class DoubleBufferedAxpy(lesson2.AxpyKernel):
    """Lesson 2's kernel, unchanged but for two buffers per queue."""

    buffer_num = 2


def busy_cycles(r, pipe):
    return sum(p[pipe]["busy_cycles"] for p in r.stats["per_core"].values() if pipe in p)


def main():
    print(ESTIMATES[3].lines())
    single, want = lesson2.run(lesson2.AxpyKernel)
    double, _ = lesson2.run(DoubleBufferedAxpy)
    print("double_exact =", np.array_equal(double.outputs["z"], want))
    print(f"single_cycles = {single.cycles:,}")
    print(f"double_cycles = {double.cycles:,}")
    print(f"double_speedup = {single.cycles / double.cycles:.2f}")
    mte2 = busy_cycles(single, "MTE2")
    print(f"single_mte2_busy_cycles = {mte2:,.0f}")
    for name, r in (("single", single), ("double", double)):
        busy = r.stats["pipe_utilisation"]
        print(f"{name}_mte2_busy = {busy['MTE2']:.0%}")
        print(f"{name}_ub_peak = {r.stats['peak_live_bytes']['UB']:,}")
    FIGURES.mkdir(exist_ok=True)
    scale = max(single.time_us, double.time_us)        # one time axis for both charts
    plot.pipeline(single, FIGURES / "03_single_pipeline.png", x_max_us=scale)
    plot.pipeline(double, FIGURES / "03_double_pipeline.png", x_max_us=scale)
    plot.memory(double, FIGURES / "03_double_memory.png")


if __name__ == "__main__":
    main()
