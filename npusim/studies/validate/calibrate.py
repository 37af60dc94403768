"""The calibration: every calibrated number of the chip models, re-derived from its source.

No number is fitted to the operator rows of the validation table (they only judge the model).
A number here comes from an instruction-level measurement, a document, or a kernel whose whole
time is that number:

- the data paths' rates: the measured tables of ``models/costs/`` (msKPP), read as they are
  (``npusim/chip/tables.py``); the command prints each table's source;
- ``launch.kernel_start_cycles`` (an Ascend C kernel's start-up): cann-bench's smallest MatMul,
  64 x 64 x 64 fp16 on 910B2 at 1.91 us of device time, less what npusim's own instructions of
  that kernel take (CATLASS's matmul on one block, run with a zero start-up);
- ``launch.tbe_kernel_start_cycles`` and ``launch.tik_kernel_start_cycles``: cann-bench's
  smallest TBE/TIK chain, Conv2D case 12 on 910B2 (TransData x 3, TIK, and Conv2D x 1, TBE; 15.6
  KiB of input) at 13.90 us summed device time, over its 4 kernels, less each kernel's per-block
  start-up on one block. An upper bound: the kernels' own work is not subtracted (npusim has no
  Conv2D forward kernel to simulate it); the chain does not say how it splits between TBE and
  TIK, so both kinds take the same figure;
- ``vector.cost``: msKPP's measured vector instruction tables (``models/costs/910b/vector.csv``)
  for every class they cover (``npusim/studies/validate/vector_costs.py``);
- ``mte.load3d_l0b_bytes_per_cycle``: asc-devkit's documented Load3Dv2 L1->L0B peak (a range
  of 28.4-128 B/cycle whose selector the page leaves to the layout; the peak is taken, no
  measurement exists).

The Atlas A2 models (atlas-a2 and its 910B1/B3/B4 variants) derive their own figures; the
training and inference chips have no public measurement and keep the A2's times, marked
assumed. ``python -m npusim.studies.validate.calibrate`` prints every derived number with its
source and whether models/ holds it (exit 1 if one differs); ``tests/test_calibrate.py`` holds
models/ to it.
"""

import argparse
import sys

import numpy as np

from npusim.chip import Chip, load_chip
from npusim.studies.validate import vector_costs

A2_MODELS = ("atlas-a2", "atlas-a2-910b1", "atlas-a2-910b3", "atlas-a2-910b4")
MATMUL_US = 1.91
MATMUL_SOURCE = ("cann-bench bench_lab/tilelang_ascend_bench/metadata/910b2.json gemm case 19 "
                 "@d59d44ca1cf14ed20c1e90cbbcbf4a3747ff84de: MatMul x 1, 64x64x64 fp16, 1.91 us")
CHAIN_US, CHAIN_KERNELS = 13.90, 4
CHAIN_SOURCE = ("cann-bench tasks/metadata/910b2.json conv_2d case 12 @bc7fa5c (before the "
                "baselines were capped): TransData x 3 + Conv2D x 1, x 3x7x13x13 fp32, 13.90 us "
                "summed msprof Task Duration")
LOAD3D_L0B = 128.0
LOAD3D_SOURCE = ("asc-devkit tests/perf/load_data_perf/README_en.md @82b89a15f26329511fc7fbc80"
                 "7d5132a1f9b4ba7 scenario 6: Load3Dv2 L1->L0B 28.4-128 B/cycle, 50-cycle "
                 "latency; the peak taken (the page leaves the rate to the layout)")


def matmul_body_cycles(chip) -> float:
    """npusim's cycles of the 64^3 MatMul on one block with a zero Ascend C start-up."""
    from npusim.cases import lookup_case  # studies reach kernels through the registry

    catlass_matmul = lookup_case("catlass_matmul").function()
    zero = Chip(chip.path, chip.sources, dict(chip.values, kernel_start_cycles=0))
    a = np.zeros((64, 64), np.float16)
    r = catlass_matmul(a, a, chip=zero, tiling={"block_dim": 1}, mode="timed",
                       numerics=False, trace=False, sanitize=False)
    return r.cycles


def derive(name: str) -> dict:
    """{key: (value, source)} of the calibrated numbers of the A2 model ``name``. Both
    measurements are of a 910B2 (``atlas-a2``): its start-ups are derived there, in
    microseconds, and the 910B1/B3/B4 models take them as times at their own clock."""
    chip, b2 = load_chip(name), load_chip("atlas-a2")
    body = matmul_body_cycles(b2)
    ascendc_us = MATMUL_US - body / b2.clock_hz * 1e6
    tbe_us = CHAIN_US / CHAIN_KERNELS - b2.kernel_start_per_block_cycles / b2.clock_hz * 1e6
    ascendc, tbe = round(ascendc_us * 1e-6 * chip.clock_hz), round(tbe_us * 1e-6 * chip.clock_hz)
    on = "" if name == "atlas-a2" else "; the 910B2's figure as a time at this chip's clock"
    return {
        "kernel_start_cycles": (ascendc, f"{MATMUL_SOURCE}, less npusim's {body:.0f} cycles of "
                                         f"that kernel's instructions on atlas-a2{on}"),
        "tbe_kernel_start_cycles": (tbe, f"{CHAIN_SOURCE}, / {CHAIN_KERNELS} kernels, less one "
                                         f"block's start-up (an upper bound){on}"),
        "tik_kernel_start_cycles": (tbe, "the same chain (TBE and TIK kernels not split)"),
        "load3d_l0b_bytes_per_cycle": (LOAD3D_L0B, LOAD3D_SOURCE),
    }


def report(names=A2_MODELS) -> tuple[list[str], int]:
    """The lines the command prints, and how many numbers of models/ differ."""
    lines, off = [], 0
    for name in names:
        chip = load_chip(name)
        lines.append(f"{name}:")
        for key, table in sorted(chip.rate_tables.items()):
            lines.append(f"  {key}: table {table.file} ({len(table.sizes)} sizes, "
                         f"{table.rates[0]:.1f}-{table.plateau:.1f} B/cycle) "
                         f"from {table.meta['source']}")
        for key, (value, source) in derive(name).items():
            held = chip.values[key]
            same = held == value
            off += not same
            lines.append(f"  {key} = {value} ({value / chip.clock_hz * 1e6:.3f} us)"
                         if key.endswith("cycles") else f"  {key} = {value}")
            lines[-1] += f"  [models/: {held}{'' if same else ' DIFFERS'}]  from {source}"
        same = vector_costs.derive(chip.cost) == chip.cost
        off += not same
        lines.append(f"  vector.cost: {len(vector_costs.measured_classes())} classes from "
                     f"{vector_costs.TABLE} (msKPP), the rest PTO-VEC  [models/: "
                     f"{'holds them' if same else 'DIFFERS'}]")
    return lines, off


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m npusim.studies.validate.calibrate",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--chip", action="append", choices=A2_MODELS,
                        help="an Atlas A2 model (default: all four)")
    args = parser.parse_args(argv)
    lines, off = report(tuple(args.chip or A2_MODELS))
    print("\n".join(lines))
    if off:
        print(f"{off} number(s) in models/ differ from what their sources give", file=sys.stderr)
    return 1 if off else 0


if __name__ == "__main__":
    sys.exit(main())
