"""The lessons' cycle targets, each computed from the reasoning its lesson gives.

Each function adds up the instruction costs the reasoning names, read from the chip model (a
GM move: ``gm_latency_cycles`` when its pipe was idle, plus bytes over the measured rate at
that transfer size, ``Chip.rate``; a vector instruction: ``Chip.vector_cost``; LoadData2D,
Mmad and FixPipe: their start-ups and rates), and returns an ``Estimate``: the figure, the
target (the figure plus 10%, for the flag hand-offs and issue slots the sums leave out,
rounded up to 100 cycles) and the reasoning with its numbers. No run is looked at: a target
is set before the result it judges. What is not modelled here: contention between cores (the
reasoning of lesson 4 checks HBM has room), and which instructions overlap beyond what each
reasoning states.
"""

import math
from dataclasses import dataclass, field

MARGIN = 1.10           # the estimate plus 10%, rounded up to 100 cycles
FRACTAL = 16            # the cube's fractal side, float16
FP16 = 2


@dataclass(frozen=True)
class Estimate:
    cycles: float        # the reasoning's figure
    why: str             # the reasoning, with the numbers it used
    figures: dict = field(default_factory=dict)   # those numbers by name, for the pages

    @property
    def target(self) -> int:
        return int(math.ceil(MARGIN * self.cycles / 100) * 100)

    def lines(self) -> str:
        """``exercise_NAME = value`` lines (what a lesson prints and its page quotes)."""
        figs = self.figures | {"estimate": self.cycles, "target": self.target}
        return "\n".join(f"exercise_{k} = {n(v)}" for k, v in figs.items())


def n(x: float) -> str:
    return f"{x:,.0f}"


def gm_move(chip, key: str, nbytes: int, idle: bool = True) -> float:
    """One GM move of ``nbytes``: GM latency when its pipe was idle, then the measured rate."""
    return (chip.gm_latency_cycles if idle else 0) + nbytes / chip.rate(key, nbytes)


def vec(chip, op: str, nbytes: int) -> float:
    """One float16 vector instruction over ``nbytes``: start-up + cycles per 256-byte repeat."""
    start, per = chip.vector_cost(op, "f16")
    return start + per * nbytes / 256


def copy_twice(chip, tiles=8, tile_bytes=4096) -> Estimate:
    load = gm_move(chip, "gm_to_ub_bytes_per_cycle", tile_bytes)
    store = gm_move(chip, "ub_to_gm_bytes_per_cycle", tile_bytes)
    again = gm_move(chip, "ub_to_gm_bytes_per_cycle", tile_bytes, idle=False)
    total = tiles * (load + store + again)
    figs = dict(load=load, store=store, store_again=again)
    return Estimate(total, figures=figs, why=(
        f"{tiles} loads of about {n(load)} cycles and {2 * tiles} stores, one "
        f"after another: the first of each tile about {n(store)} (GM latency "
        f"after an idle MTE3), the second {n(again)} (it follows the first): "
        f"about {n(total)}"))


def tile_parts(chip, tile_bytes: int, ops=("sub", "muls")) -> tuple[float, float, float]:
    """(MTE2's two loads of a tile, V's instructions on it, MTE3's store of it)."""
    loads = (gm_move(chip, "gm_to_ub_bytes_per_cycle", tile_bytes)
             + gm_move(chip, "gm_to_ub_bytes_per_cycle", tile_bytes, idle=False))
    compute = sum(vec(chip, op, tile_bytes) for op in ops)
    store = gm_move(chip, "ub_to_gm_bytes_per_cycle", tile_bytes)
    return loads, compute, store


def single_buffered(chip, length=65536, tile=4096) -> Estimate:
    tiles, nbytes = length // tile, tile * FP16
    loads, compute, store = tile_parts(chip, nbytes)
    total = tiles * (loads + compute) + store
    figs = dict(loads=loads, compute=compute, store=store)
    return Estimate(total, figures=figs, why=(
        f"single buffered, each of {tiles} tiles loads x and y (about "
        f"{n(loads)} cycles on MTE2) and then computes (sub and muls, about "
        f"{n(compute)}), its store running beside the next load, plus the last "
        f"store ({n(store)}): about {n(total)}, as the lesson's z = 3x + y, whose "
        "V work is as long"))


def double_buffered(chip, length=65536, tile=4096) -> Estimate:
    tiles, nbytes = length // tile, tile * FP16
    loads, compute, store = tile_parts(chip, nbytes)
    mte2 = tiles * loads
    total = mte2 + compute + store
    figs = dict(mte2=mte2, loads=loads, compute=compute, store=store)
    return Estimate(total, figures=figs, why=(
        f"MTE2 alone is busy about {n(mte2)} cycles loading x and y "
        f"({tiles} tiles of {n(loads)}); double buffered, the run is that plus "
        f"the last tile's compute ({n(compute)}) and store ({n(store)}): about "
        f"{n(total)}"))


def many_cores(chip, cores=8, length=65536, tile=4096) -> Estimate:
    one = double_buffered(chip, length, tile).cycles
    need = cores * 3 * length * FP16 / one
    figs = dict(hbm_need=need)
    return Estimate(one, figures=figs, why=(
        f"each of {cores} cores does lesson 3's work (about {n(one)} cycles) "
        f"at once; together they need about {n(need)} of HBM's "
        f"{n(chip.hbm_bytes_per_cycle)} bytes per cycle"))


def flags(chip, length=16384, tile=4096) -> Estimate:
    est = single_buffered(chip, length, tile)
    figs = est.figures
    return Estimate(est.cycles, figures=figs, why=(
        "with each flag set as soon as its pipe is done, the next load "
        "starts while the store runs, as with queues: " + est.why.split(", as")[0]))


def own_tile(chip, length=65536, copies=16) -> Estimate:
    nbytes = 2 * length * FP16 // copies               # x and y, in ``copies`` copies
    body = nbytes / chip.rate("gm_to_ub_bytes_per_cycle", nbytes)
    mte2 = copies * body + copies // 2 * chip.gm_latency_cycles
    _, compute, store = tile_parts(chip, nbytes)
    total = mte2 + compute + store
    figs = dict(copy=body, mte2=mte2, compute=compute, store=store)
    return Estimate(total, figures=figs, why=(
        f"MTE2 moves 256 KB in {copies} copies of {nbytes // 1024} KB, about "
        f"{n(body)} cycles each, and each tile's first copy pays "
        f"{n(chip.gm_latency_cycles)} of GM latency: about {n(mte2)}; "
        f"{copies} copies or fewer, plus the last tile's compute ({n(compute)}) and "
        f"store ({n(store)}): about {n(total)}"))


def cube_pass(chip, m: int, n_: int, k: int) -> tuple[float, list]:
    """One pass of C = A.B through MTE2 (ND->NZ), MTE1, M and FixPipe, one after another, as
    lesson 6's kernel issues it: (cycles, [(pipe, cycles)])."""
    key = "gm_to_l1_nd2nz_bytes_per_cycle"
    mte2 = gm_move(chip, key, m * k * FP16) + gm_move(chip, key, k * n_ * FP16, idle=False)
    mte1 = chip.load2d_startup_cycles + load2d(chip, m, n_, k)
    mmad = chip.head_cycles + (m // FRACTAL) * (k // FRACTAL) * (n_ // FRACTAL)
    fix = fixpipe(chip, m, n_)
    stages = [("MTE2", mte2), ("MTE1", mte1), ("M", mmad), ("FIX", fix)]
    return sum(c for _, c in stages), stages


def load2d(chip, m: int, n_: int, k: int) -> float:
    """MTE1's LoadData2Ds of one k step: A by rows of fractals, B by k of fractals."""
    a_one, b_one = (k // FRACTAL) * 512, (n_ // FRACTAL) * 512
    return ((m // FRACTAL) * a_one / chip.rate("l1_to_l0a_bytes_per_cycle", a_one)
            + (k // FRACTAL) * b_one / chip.rate("l1_to_l0b_bytes_per_cycle", b_one))


def fixpipe(chip, m: int, n_: int) -> float:
    nbytes = m * n_ * 4
    return chip.fixpipe_startup_cycles + nbytes / chip.rate("l0c_to_gm_bytes_per_cycle", nbytes)


def small_matmul(chip, m=32, n_=64, k=128) -> Estimate:
    total, stages = cube_pass(chip, m, n_, k)
    lesson, _ = cube_pass(chip, 64, 64, 64)
    parts = ", ".join(f"{p} {n(c)}" for p, c in stages)
    figs = {p.lower(): c for p, c in stages} | {"lesson_sum": lesson}
    return Estimate(total, figures=figs, why=(
        f"one pass through MTE2, MTE1, M and FIX, one after another: "
        f"{parts}, about {n(total)} (the same sum for the lesson's 64x64x64 is "
        f"{n(lesson)}; this moves 1.5x its input bytes, but an ND->NZ copy costs "
        "nearly the same from 4 KB to 64 KB)"))


def tiled_matmul(chip, m=256, n_=128, k=512, cores=2, base_k=128) -> Estimate:
    rows, key = m // cores, "gm_to_l1_nd2nz_bytes_per_cycle"
    mte2 = gm_move(chip, key, rows * k * FP16) + gm_move(chip, key, k * n_ * FP16, idle=False)
    steps = k // base_k
    mte1 = chip.load2d_startup_cycles + steps * load2d(chip, rows, n_, base_k)
    loads = steps * ((rows + base_k) // FRACTAL)
    mmad = steps * (rows // FRACTAL) * (base_k // FRACTAL) * (n_ // FRACTAL)
    fix = fixpipe(chip, rows, n_)
    longer, name = (mte1, "MTE1") if mte1 >= mmad else (mmad, "the cube")
    total = mte2 + longer + fix
    kb = (rows + n_) * k * FP16 // 1024
    figs = dict(mte2=mte2, mte1=mte1, mmad=mmad, fix=fix)
    return Estimate(total, figures=figs, why=(
        f"per core, MTE2 loads {kb} KB (about {n(mte2)} cycles), MTE1's "
        f"{loads} loads about {n(mte1)} (one start-up of "
        f"{chip.load2d_startup_cycles} when MTE1 was idle), the Mmads {n(mmad)} and "
        f"FixPipe about {n(fix)}: MTE2, then {name} (the longer of MTE1 and the "
        f"cube, the other beside it), then FixPipe: about {n(total)}"))
