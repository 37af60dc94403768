"""Lesson 9: coupled against separated cores, one convolution on the 910 and the 910B.

Run: python docs/lessons/09_coupled_separated.py
"""

from pathlib import Path

import numpy as np

from npusim import golden, load_chip, ops
from npusim.face import plot
from npusim.face.lesson_specs import TARGETS

FIGURES = Path(__file__).parent / "figures"
CHIPS = ("atlas-training", "atlas-a2")


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((64, 32, 3, 3)).astype(np.float16)
    x = rng.standard_normal((2, 32, 28, 28)).astype(np.float16)
    dy = rng.standard_normal((2, 64, 28, 28)).astype(np.float16)
    return dy, x, w


def main():
    for chip, target in TARGETS[9].items():
        print(f"exercise_target_{chip.replace('-', '_')} = {target:,}")
    dy, x, w = inputs()
    conv = dict(bias_sizes=[64], stride=[1, 1], padding=[1, 1], dilation=[1, 1])
    want = golden.convolution_backward(dy, x, w, **conv)
    FIGURES.mkdir(exist_ok=True)
    for name in CHIPS:
        chip = load_chip(name)
        key = name.replace("-", "_")
        print(f"{key}_layout = {'separated' if chip.separated else 'coupled'}")
        aiv = chip.vector_core_count if chip.separated else 0
        print(f"{key}_cores = {chip.ai_core_count}+{aiv}")
        r = ops.convolution_backward(dy, x, w, **conv, chip=chip)
        exact = all(np.array_equal(r.outputs[k], want[k]) for k in ("gradInput", "gradBias"))
        print(f"{key}_exact = {exact}")
        print(f"{key}_cycles = {r.cycles:,}")
        print(f"{key}_us = {r.time_us:.1f}")
        for kernel in r.stats["kernels"]:
            print(f"  {kernel['name']:<28} {kernel['cores']:>3} cores {kernel['cycles']:>8,}")
        dx = next(k for k in r.stats["kernels"] if k["name"] == "Conv2DBackpropInput")
        print(f"{key}_dx_cycles = {dx['cycles']:,}")
        plot.pipeline(r, FIGURES / f"09_conv_{name}.png")


if __name__ == "__main__":
    main()
