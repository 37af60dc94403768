"""``npusim bench``: simulator speed on this machine, measured, not asserted.

Each case runs a kernel and reports the simulated instructions (set/wait flags included, buffer
marks excluded), the wall-clock seconds of the launch (recording the streams, the run and the
stats; making the random inputs is not counted) and their ratio; for timed runs also the
sanitizer's and the tracer's share, by running the case again with both switched off.
"""

from npusim.micro.stream import run_stream
from npusim.micro.vector import run_vector


def _timed(fn, **kw):
    """Run a case; return (Result, wall seconds of its launch: record + run + stats)."""
    r = fn(**kw)
    return r, r.stats["wall_seconds"]["total"]


def _cases(quick: bool):
    tiles = 16 if quick else 64
    yield "vector add fp16, 48 AIV, timed", run_vector, dict(
        op="add", block_dim=48, tiles=tiles, tile_length=4096)
    yield "vector exp*mul fp16, 48 AIV, timed", run_vector, dict(
        op="exp_mul", block_dim=48, tiles=tiles, tile_length=4096)
    yield "vector exp*mul fp16, 48 AIV, functional", run_vector, dict(
        op="exp_mul", block_dim=48, tiles=tiles, tile_length=4096, mode="functional")
    yield "vector exp*mul fp16, 32 cores, atlas-training", run_vector, dict(
        op="exp_mul", chip="atlas-training", block_dim=32, tiles=tiles, tile_length=4096)
    mb = 4 if quick else 16
    yield f"GM stream 48 x {mb} MB, numerics off", run_stream, dict(
        block_dim=48, per_core_bytes=mb << 20)
    yield from _extra_cases(quick)


def _silu(n: int, chip: str = "atlas-a2", **kw):
    """SiluBackward on ``n`` fp16 elements of seeded random inputs."""
    import numpy as np

    from npusim.ops import silu_backward

    rng = np.random.default_rng(0)
    dy, x = (rng.standard_normal(n, dtype=np.float32).astype(np.float16) for _ in range(2))
    return silu_backward(dy, x, chip=chip, **kw)


def _extra_cases(quick: bool):
    n = 1 << (18 if quick else 22)
    yield f"SiluBackward fp16 {n >> 10}K elements, atlas-a2", _silu, dict(n=n)
    try:
        from npusim.micro.matmul import run_matmul
    except ImportError:
        return
    k = 256 if quick else 1024   # A and B fill L1, L0C holds the 128 x 128 fp32 result
    yield f"cube matmul 128x128x{k} fp16, 1 AIC, timed", run_matmul, dict(
        m=128, n=128, k=k, base_k=128)


def run_bench(quick: bool = False) -> int:
    print(f"{'case':<48}{'instr':>9}{'wall s':>9}{'instr/s':>11}  notes")
    for name, fn, kw in _cases(quick):
        r, wall = _timed(fn, **kw)
        n = r.stats["instructions"]
        notes = ""
        if r.mode == "timed":
            _, bare = _timed(fn, **kw, sanitize=False, trace=False)
            notes = f"without sanitizer and tracer: {bare:.2f} s, {n / bare:,.0f} instr/s"
        print(f"{name:<48}{n:>9,}{wall:>9.2f}{n / wall:>11,.0f}  {notes}")
    return 0

