"""Lesson 4: many cores share the work and the HBM. Run: python docs/lessons/04_many_cores.py"""

import importlib
from pathlib import Path

import numpy as np

from npusim import load_chip
from npusim.dsl import get_block_idx, get_block_num
from npusim.face import plot
from npusim.face.lesson_specs import ESTIMATES

lesson2 = importlib.import_module("02_vector")
FIGURES = Path(__file__).parent / "figures"
PER_CORE = 65536          # elements of x, y and z each core handles


class ManyCoreAxpy(lesson2.AxpyKernel):
    """Lesson 3's double-buffered kernel; each core binds its own slice of x, y and z."""

    buffer_num = 2

    def init(self, x, y, z, length, tile):
        per_core = length // get_block_num()
        start = get_block_idx() * per_core
        super().init(x[start], y[start], z[start], per_core, tile)


def roofline_cycles(chip, nbytes):
    """The least time HBM needs to move nbytes, in cycles: bytes / (bytes per cycle)."""
    return nbytes / (chip.hbm_bytes_per_s / chip.clock_hz)


def main():
    print(ESTIMATES[4].lines())
    chip = load_chip("atlas-a2")
    print(f"hbm_bytes_per_cycle = {chip.hbm_bytes_per_s / chip.clock_hz:.0f}")
    print(f"vector_cores = {chip.vector_core_count}")
    results = {}
    for cores in (1, 8, 24, 48):
        r, want = lesson2.run(ManyCoreAxpy, length=cores * PER_CORE, block_dim=cores)
        assert np.array_equal(r.outputs["z"], want)
        nbytes = 3 * 2 * cores * PER_CORE             # x and y in, z out, 2 bytes each
        bound = roofline_cycles(chip, nbytes)
        results[cores] = r
        print(f"cores_{cores}_cycles = {r.cycles:,}")
        print(f"cores_{cores}_bytes_per_cycle = {nbytes / r.cycles:.0f}")
        print(f"cores_{cores}_roofline = {bound / r.cycles:.0%}")
    one, all48 = results[1].cycles, results[48].cycles
    print(f"cores_48_slowdown = {all48 / one:.2f}")
    FIGURES.mkdir(exist_ok=True)
    plot.pipeline(results[48], FIGURES / "04_48_cores_pipeline.png", cores=[0, 47])


if __name__ == "__main__":
    main()
