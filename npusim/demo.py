"""``npusim demo``: the engine's own micro-kernels on both chips, with their results.

For each chip: the vector micro-kernel (z = x + y and z = exp(x) * y, fp16, bf16 where the chip
has it), the GM stream kernel (aggregate bandwidth against HBM), and the cube micro-kernel
(C = A.B) when it is available. Each output is checked against numpy computed here, after the
run, only to say whether the simulated instructions got it right.
"""

import time

import numpy as np

from npusim.chip import load_chip
from npusim.errors import NpusimError
from npusim.micro.stream import run_stream
from npusim.micro.vector import run_vector

CHIPS = ("atlas-training", "atlas-a2")


def _vector_rows(chip):
    dtypes = ["float16", "float32"] + (["bfloat16"] if "bfloat16" in chip.cast_dtypes else [])
    for dtype in dtypes:
        for op in ("add", "exp_mul"):
            r = run_vector(op, chip=chip.name, dtype=dtype, tiles=8, tile_length=4096,
                           block_dim=min(8, chip.vector_core_count))
            x, y, z = (r.outputs[k].astype(np.float64) for k in "xyz")
            want = x + y if op == "add" else np.exp(x) * y
            err = np.max(np.abs(z - want) / np.maximum(np.abs(want), 1e-3))
            gbs = 3 * r.outputs["z"].nbytes / (r.time_us * 1e-6) / 1e9
            yield (f"vector {op:<8}", dtype, r, f"max rel err {err:.1e}, {gbs:,.0f} GB/s")


def _stream_row(chip):
    cores = chip.vector_core_count
    r = run_stream(chip=chip.name, block_dim=cores, per_core_bytes=4 << 20)
    total = cores * (4 << 20)
    tbs = total / (r.time_us * 1e-6) / 1e12
    yield ("GM stream", f"{cores} cores", r,
           f"{tbs:.2f} TB/s of {chip.hbm_bytes_per_s / 1e12:.2f} TB/s HBM")


def _matmul_rows(chip):
    try:
        from npusim.micro.matmul import run_matmul
    except ImportError:
        return
    r = run_matmul(chip=chip.name, m=128, n=128, k=256)
    a, b, c = (r.outputs[k].astype(np.float64) for k in ("a", "b", "c"))
    err = np.max(np.abs(c - a @ b)) / max(np.max(np.abs(a @ b)), 1e-9)
    tflops = 2 * 128 * 128 * 256 / (r.time_us * 1e-6) / 1e12
    yield ("cube matmul", "fp16->fp32", r, f"rel err {err:.1e}, {tflops:.2f} TFLOPS on 1 core")


def run_demo() -> int:
    start = time.perf_counter()
    print("npusim demo: the engine's micro-kernels on both chips\n")
    for name in CHIPS:
        chip = load_chip(name)
        kind = "coupled" if not chip.separated else "separated AIC/AIV"
        print(f"== {name} ({chip.soc}, {kind}, {chip.clock_hz / 1e9:.2f} GHz)")
        print(f"   {'kernel':<18}{'dtype':<12}{'cycles':>10}{'time us':>10}  check")
        for rows in (_vector_rows, _stream_row, _matmul_rows):
            try:
                for label, dtype, r, note in rows(chip):
                    print(f"   {label:<18}{dtype:<12}{r.cycles:>10,}{r.time_us:>10.2f}  {note}")
            except NpusimError as exc:
                print(f"   {rows.__name__[1:]:<30} not run: {exc}")
        print()
    print(f"done in {time.perf_counter() - start:.1f} s")
    return 0
