"""The exercises of docs/lessons/: each one's inputs, golden, launch and cycle target.

An exercise names what the learner's file must define (a kernel class, or for lesson 8 a
tiling), runs it on seeded inputs and returns one ``Trial`` per run: the Result, the outputs
the lesson's golden expects (numpy, rounded the way the lesson says each instruction rounds)
and the cycle target. Each target is computed from the reasoning its lesson gives, on the
chip model's instruction costs (``npusim/face/lesson_targets.py``; ``why`` quotes the reasoning
with its numbers), never from a solution's run.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from npusim.chip import load_chip
from npusim.engine.launch import launch
from npusim.engine.memory import GlobalMemory
from npusim.face import lesson_targets as est

# Each exercise's reasoning on atlas-a2's instruction costs (the ``why`` of its Trial).
ESTIMATES = {lesson: f(load_chip("atlas-a2")) for lesson, f in (
    (1, est.copy_twice), (2, est.single_buffered), (3, est.double_buffered),
    (4, est.many_cores), (5, est.flags), (6, est.small_matmul), (7, est.tiled_matmul),
    (10, est.own_tile))}
# Each exercise's cycle target: its estimate plus 10%, rounded up to 100 cycles. Lesson 9's
# atlas-training target (one pass; the lesson's 64x64x64 took 2,272 cycles there) was fixed
# before issue 38 and that chip's costs did not change.
TARGETS = {lesson: e.target for lesson, e in ESTIMATES.items()} | {
    9: {"atlas-a2": ESTIMATES[6].target, "atlas-training": 3_000}}


@dataclass(frozen=True, kw_only=True)
class Trial:
    """One graded run: its label (a chip, say), Result, expected outputs and target."""

    label: str
    result: object
    expected: dict
    target: int
    why: str


@dataclass(frozen=True, kw_only=True)
class Exercise:
    """A lesson's exercise: what to define, what it must do, how it is run."""

    title: str
    symbol: str          # the name the learner's file must define
    task: str
    run: Callable        # run(symbol's value) -> the Trials, one at a time


def fp16_pair(length: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The seeded float16 inputs x and y of the vector exercises, uniform in [-4, 4)."""
    rng = np.random.default_rng(seed)
    return (rng.uniform(-4, 4, length).astype(np.float16),
            rng.uniform(-4, 4, length).astype(np.float16))


def half_difference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """z = (x - y) * 0.5, each step rounded to float16 as the V pipe rounds it."""
    return ((x - y).astype(np.float16) * np.float16(0.5)).astype(np.float16)


def vector_trial(kernel, *, length, tile, block_dim, target, why, chip="atlas-a2"):
    """Launch a z = f(x, y) exercise kernel ``init(x, y, z, length, tile)``, or
    ``init(x, y, z, length)`` when ``tile`` is None (the kernel chooses its own)."""
    x0, y0 = fp16_pair(length)
    gm = GlobalMemory()
    x, y = gm.tensor("x", "float16", length, x0), gm.tensor("y", "float16", length, y0)
    z = gm.tensor("z", "float16", length)
    args = dict(x=x, y=y, z=z, length=length) | ({} if tile is None else {"tile": tile})
    r = launch(kernel, chip=chip, block_dim=block_dim, gm=gm, args=args,
               outputs={"z": (z, (length,))})
    return [Trial(label="", result=r, expected={"z": half_difference(x0, y0)}, target=target,
                  why=why)]


def copy_twice(kernel) -> list[Trial]:
    length, tile = 16384, 2048
    x0 = fp16_pair(length)[0]
    gm = GlobalMemory()
    x, z = gm.tensor("x", "float16", length, x0), gm.tensor("z", "float16", 2 * length)
    r = launch(kernel, chip="atlas-a2", block_dim=1, gm=gm,
               args=dict(x=x, z=z, length=length, tile=tile),
               outputs={"z": (z, (2 * length,))})
    return [Trial(label="", result=r, expected={"z": np.concatenate([x0, x0])}, target=TARGETS[1],
                  why=ESTIMATES[1].why)]


def vector_single(kernel) -> list[Trial]:
    return vector_trial(kernel, length=65536, tile=4096, block_dim=1, target=TARGETS[2],
                        why=ESTIMATES[2].why)


def vector_double(kernel) -> list[Trial]:
    return vector_trial(kernel, length=65536, tile=4096, block_dim=1, target=TARGETS[3],
                        why=ESTIMATES[3].why)


def vector_cores(kernel) -> list[Trial]:
    return vector_trial(kernel, length=8 * 65536, tile=4096, block_dim=8, target=TARGETS[4],
                        why=ESTIMATES[4].why)


def vector_flags(kernel) -> list[Trial]:
    return vector_trial(kernel, length=16384, tile=4096, block_dim=1, target=TARGETS[5],
                        why=ESTIMATES[5].why)


def vector_own_tile(kernel) -> list[Trial]:
    """A z = (x - y) * 0.5 kernel ``init(x, y, z, length)`` that chooses its own tile."""
    return vector_trial(kernel, length=65536, tile=None, block_dim=1, target=TARGETS[10],
                        why=ESTIMATES[10].why)


def matmul_golden(a: np.ndarray, b: np.ndarray, k0: int = 16) -> np.ndarray:
    """The cube's order: each k0-deep step summed exactly, rounded to float32, accumulated."""
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for lo in range(0, a.shape[1], k0):
        step = a[:, lo:lo + k0].astype(np.float64) @ b[lo:lo + k0].astype(np.float64)
        acc = acc + step.astype(np.float32)
    return acc


def matmul_trial(kernel, *, chip, m, n, k, block_dim=1, target, why, label=""):
    """Launch a matmul exercise kernel ``init(a, b, c, m, n, k)`` on seeded float16 inputs."""
    rng = np.random.default_rng(0)
    a0 = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b0 = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    gm = GlobalMemory()
    a, b = gm.tensor("a", "float16", m * k, a0), gm.tensor("b", "float16", k * n, b0)
    c = gm.tensor("c", "float32", m * n)
    r = launch(kernel, chip=chip, block_dim=block_dim, gm=gm,
               args=dict(a=a, b=b, c=c, m=m, n=n, k=k), outputs={"c": (c, (m, n))})
    return Trial(label=label, result=r, expected={"c": matmul_golden(a0, b0)}, target=target,
                 why=why)


def small_matmul(kernel) -> list[Trial]:
    return [matmul_trial(kernel, chip="atlas-a2", m=32, n=64, k=128, target=TARGETS[6],
                         why=ESTIMATES[6].why)]


def tiled_matmul(kernel) -> list[Trial]:
    return [matmul_trial(kernel, chip="atlas-a2", m=256, n=128, k=512, block_dim=2,
                         target=TARGETS[7], why=ESTIMATES[7].why)]


SILU_SHAPE = (4, 256, 1024)


def silu_target(chip) -> int:
    """1.2 x (the HBM roofline of SiluBackward's three float16 tensors + the 48-core launch of
    SiluGrad, a TBE kernel: ``npusim/engine/kernel_costs.py``)."""
    from npusim.engine.kernel_costs import start_cycles

    nbytes = 3 * 2 * int(np.prod(SILU_SHAPE))
    launch = start_cycles(chip, 48, "tbe")
    return round(1.2 * (nbytes / (chip.hbm_bytes_per_s / chip.clock_hz) + launch))


def silu_tiling(tiling) -> list[Trial]:
    from npusim import golden, load_chip, ops

    chip = load_chip("atlas-a2")
    rng = np.random.default_rng(0)
    dy, x = (rng.standard_normal(SILU_SHAPE).astype(np.float16) for _ in range(2))
    r = ops.silu_backward(dy, x, chip=chip, tiling=tiling)
    return [Trial(label="", result=r, expected={"gradInput": golden.silu_backward(dy, x)},
                  target=silu_target(chip), why="within 20% of the HBM roofline of the "
                  "three tensors plus the launch on 48 cores")]


def both_chips(kernel):
    yield matmul_trial(kernel, chip="atlas-a2", m=32, n=64, k=128,
                       target=TARGETS[9]["atlas-a2"], why=ESTIMATES[6].why, label="atlas-a2")
    yield matmul_trial(kernel, chip="atlas-training", m=32, n=64, k=128,
                       target=TARGETS[9]["atlas-training"], label="atlas-training",
                       why="one pass through each stage; the lesson's 64x64x64 took 2,272 "
                           "cycles on this chip")


EXERCISES = {
    1: Exercise(title="copy GM -> UB -> GM", symbol="CopyKernel", run=copy_twice,
                task="CopyKernel.init(x, z, length, tile) writes x twice into z "
                     "(z[:length] and z[length:]), loading each tile once"),
    2: Exercise(title="a vector kernel", symbol="HalfDiffKernel", run=vector_single,
                task="HalfDiffKernel.init(x, y, z, length, tile): z = (x - y) * 0.5 in "
                     "float16, tile by tile"),
    3: Exercise(title="double buffering", symbol="HalfDiffKernel", run=vector_double,
                task=f"lesson 2's HalfDiffKernel, double buffered, in at most {TARGETS[3]:,} "
                     "cycles"),
    4: Exercise(title="many cores", symbol="HalfDiffKernel", run=vector_cores,
                task="HalfDiffKernel on 8 cores: each core takes its 1/8 of length"),
    5: Exercise(title="synchronisation", symbol="FlagHalfDiffKernel", run=vector_flags,
                task="FlagHalfDiffKernel.init(x, y, z, length, tile): z = (x - y) * 0.5 with "
                     "TBuf buffers and set_flag/wait_flag, no queues"),
    6: Exercise(title="the cube path", symbol="MatmulKernel", run=small_matmul,
                task="MatmulKernel.init(a, b, c, m, n, k): C = A.B on one cube core of "
                     "atlas-a2, float16 in, float32 out (m=32, n=64, k=128)"),
    7: Exercise(title="tiling a GEMM", symbol="MatmulKernel", run=tiled_matmul,
                task="MatmulKernel.init(a, b, c, m, n, k) on 2 cube cores of atlas-a2 "
                     "(m=256, n=128, k=512): split the rows over the cores and K so that "
                     "each step fits L0A and L0B"),
    8: Exercise(title="a real operator", symbol="TILING", run=silu_tiling,
                task="TILING, a dict of SiluBackward tiling fields (tile_length, buffer_num, "
                     "block_dim) for shape 4x256x1024 float16 on atlas-a2, within 20% of "
                     "the roofline"),
    9: Exercise(title="coupled against separated cores", symbol="MatmulKernel",
                run=both_chips, task="lesson 6's MatmulKernel, running on atlas-a2 (FixPipe) "
                "and on atlas-training (L0C -> UB -> MTE3)"),
    10: Exercise(title="reading the critical path", symbol="HalfDiffKernel",
                 run=vector_own_tile, task="HalfDiffKernel.init(x, y, z, length): z = (x - y) "
                 f"* 0.5 on one core, your choice of tile, in at most {TARGETS[10]:,} cycles"),
}
