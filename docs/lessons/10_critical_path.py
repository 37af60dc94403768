"""Lesson 10: reading a run's critical path. Run: python docs/lessons/10_critical_path.py"""

import importlib
from pathlib import Path

from npusim.face import plot
from npusim.face.lesson_specs import ESTIMATES

lesson2 = importlib.import_module("02_vector")
lesson3 = importlib.import_module("03_double_buffering")
lesson5 = importlib.import_module("05_sync")
FIGURES = Path(__file__).parent / "figures"
RUNS = (("single", lesson2.AxpyKernel, 4096), ("double", lesson3.DoubleBufferedAxpy, 4096),
        ("late", lesson5.LateRelease, 4096), ("small", lesson3.DoubleBufferedAxpy, 256))


def main():
    print(ESTIMATES[10].lines())
    FIGURES.mkdir(exist_ok=True)
    for name, kernel, tile in RUNS:
        r, _ = lesson2.run(kernel, tile=tile)
        e = r.explain()
        print(f"{name}_cycles = {r.cycles:,}")
        print(f"{name}_bound = {e.bound()}")
        for what, cycles, _share in e.shares()[:3]:
            print(f"{name}_path_{what.replace(' ', '_')} = {cycles:,.0f}")
        for w in e.what_ifs[:2]:
            print(f"{name}_if_{w.label.replace(' ', '_')} = {w.cycles:,}")
        if name in ("double", "late"):    # the 512-tile run has too many bars to draw quickly
            plot.critical_path(r, r.critical_path(), FIGURES / f"10_path_{name}.png")
    copies = 2 * 65536 // 256
    print(f"small_copies = {copies}")


if __name__ == "__main__":
    main()
