"""The ``npusim`` command: chips, demo, bench.

Errors are one line on stderr and exit status 2, never a traceback.
"""

import argparse
import sys

from npusim.errors import NpusimError


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return args.func(args) or 0
    except NpusimError as exc:
        print(f"npusim: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("npusim: interrupted", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="npusim", description="Cycle-approximate simulator of Ascend NPU AI cores.")
    sub = parser.add_subparsers(title="commands")
    p = sub.add_parser("chips", help="list the chip models")
    p.set_defaults(func=_chips)
    p = sub.add_parser("demo", help="run the built-in kernels on both chips and print the results")
    p.set_defaults(func=_demo)
    p = sub.add_parser("bench", help="measure simulator speed (instructions per second)")
    p.add_argument("--quick", action="store_true", help="smaller cases")
    p.set_defaults(func=_bench)
    return parser


def _chips(args) -> int:
    from npusim.chip import chips, load_chip

    header = (f"{'chip':<16}{'soc':<13}{'cores':<8}{'GHz':>5}{'UB KB':>7}{'L1 KB':>7}"
              f"{'L0C KB':>7}{'HBM GB':>7}{'HBM TB/s':>9}{'L2 MB':>6}   peak TFLOPS (cube)")
    print(header)
    for name in chips():
        c = load_chip(name)
        cores = f"{c.ai_core_count}+{c.aiv_count}" if c.separated else f"{c.ai_core_count}"
        peaks = "  ".join(f"{dt} {c.peak_flops(dt) / 1e12:.0f}" if dt in c.input_dtypes
                          else f"{dt} -" for dt in ("float16", "bfloat16", "float32"))
        print(f"{name:<16}{c.soc:<13}{cores:<8}{c.clock_hz / 1e9:>5.2f}{c.ub_bytes >> 10:>7}"
              f"{c.l1_bytes >> 10:>7}{c.l0c_bytes >> 10:>7}{c.hbm_bytes >> 30:>7}"
              f"{c.hbm_bytes_per_s / 1e12:>9.2f}{c.l2_bytes >> 20:>6}   {peaks}")
    print("cores: AI cores (+ vector cores on separated chips); UB per vector core")
    return 0


def _demo(args) -> int:
    from npusim.demo import run_demo

    return run_demo()


def _bench(args) -> int:
    from npusim.bench import run_bench

    return run_bench(quick=args.quick)


if __name__ == "__main__":
    sys.exit(main())
