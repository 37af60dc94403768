"""A fuzzer the project keeps: random argument sets for every operator, and random command lines.

    python tests/fuzz.py 1000            # 1,000 draws from seed 0
    python tests/fuzz.py 100000 --start 5000 --quiet
    python tests/fuzz.py 1 --start 4711  # replay one draw by its seed

Every draw is made from its own seed, so a failure is replayed by that seed alone. An operator
draw takes a registered case (``npusim.cases``: every operator the command runs, new ones
included), a chip (a real one, or a name that is none), a dtype (one the case lists, or one it
does not), a small shape with zeros and odd sizes, parameters (defaults, or values drawn from
a menu of good and bad ones), sometimes a tiling field in or out of range, sometimes NaN and
inf in the inputs, and runs it through ``npusim.cases.run.run_case``. A command-line draw runs
``npusim run ...`` in-process with such arguments written as text, some of them malformed.

A draw passes when:
- the call returns and every output is bit-identical to its golden (the golden rounds in the
  kernel's order; with NaN or inf in the inputs, NaN where the golden has NaN); and, for the
  operators below with a PyTorch oracle, within a tolerance of PyTorch on finite inputs;
- or the call raises one ``npusim.NpusimError`` with a non-empty one-line message;
- or, for a command line, the command exits 0, 1 or 2 (never 3, an internal error).
Anything else (another exception, a mismatch, a draw that runs past ``TIMEOUT_S``) fails, with
its seed.
"""

import argparse
import contextlib
import io
import random
import re
import signal
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

TIMEOUT_S = 120          # a draw that runs longer is a hang
MAX_ELEMENTS = 1 << 13   # inputs stay small: a draw takes well under a second
DIMS = (0, 1, 2, 3, 5, 7, 8, 15, 16, 17, 31, 33, 64)
BAD_CHIPS = ("atlas-nothing", "", "ATLAS-A2", "../etc/passwd")
BAD_DTYPES = ("int32", "float64", "int8", "banana")
PARAM_MENU = ("0", "1", "-1", "2", "3", "7", "true", "false", "0.5", "1,1", "1,2,1", "x",
              "", "-100", "none", "mean", "sum", "64x3", "16x1", "8x3x3")
TILING_FIELDS = ("tile_length", "block_dim", "buffer_num", "base_m", "base_n", "base_k",
                 "l1_m", "l1_n", "nosuch")
TILING_VALUES = (0, 1, -1, 2, 8, 16, 17, 48, 256, 4096, 1 << 30, "lots", True, 1.5)


@dataclass
class Outcome:
    seed: int
    kind: str        # "ok", "error" (a clean NpusimError), "fail"
    what: str        # the draw, in words
    detail: str = ""


DRAWN: dict = {}   # seed -> the draw in words, kept for a draw that raises


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang(f"no answer within {TIMEOUT_S} s")


def _shape(rng: random.Random, rank: int) -> tuple:
    shape = [rng.choice(DIMS) for _ in range(rank)]
    while np.prod(shape) > MAX_ELEMENTS:
        shape[rng.randrange(rank)] //= 2
    return tuple(shape)


def _params(rng: random.Random, case) -> dict:
    return {p.name: rng.choice(PARAM_MENU) for p in case.params if rng.random() < 0.1}


def tiling_fields(case) -> list:
    """The tiling fields the case's help names (``block_dim (...), tile_length (...)``)."""
    return re.findall(r"(?:^|, )(\w+) \(", case.tiling_help) or list(TILING_FIELDS)


def _tiling(rng: random.Random, case) -> dict | None:
    if rng.random() > 0.2:
        return None
    field = rng.choice([*tiling_fields(case), rng.choice(TILING_FIELDS)])
    return {field: rng.choice(TILING_VALUES)}


def _chip(rng: random.Random, chips: list) -> str:
    """Mostly the two products every operator runs on; sometimes another model or none."""
    roll = rng.random()
    if roll < 0.8:
        return rng.choice(["atlas-a2", "atlas-a2", "atlas-training"])
    return rng.choice(chips) if roll < 0.95 else rng.choice(BAD_CHIPS)


def _poison(rng: random.Random, args) -> bool:
    """Put NaN and inf into one float input; True if it did."""
    floats = [a for a in args if isinstance(a, np.ndarray) and a.size
              and (a.dtype.kind == "f" or a.dtype.name == "bfloat16")]
    if not floats or rng.random() > 0.2:
        return False
    target = rng.choice(floats).reshape(-1)
    for value in (np.nan, np.inf, -np.inf):
        target[rng.randrange(target.size)] = value
    return True


def _inputs(case, shape, dtype: str, params: dict, seed: int):
    """The case's inputs in ``dtype``: made in it when the case takes it, else made in the
    case's first dtype and their floats cast, so the operator's own checks meet it."""
    rng = np.random.default_rng(seed)
    if dtype in case.dtypes:
        return case.make(shape, dtype, params, rng)
    args, kwargs = case.make(shape, case.dtypes[0], params, rng)
    other = np.dtype(dtype) if dtype in np.sctypeDict else np.dtype("float64")
    return tuple(a.astype(other) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
                 for a in args), kwargs


def draw_op(seed: int) -> Outcome:
    """One operator call, drawn from ``seed``."""
    from npusim import chips
    from npusim.cases import CASES
    from npusim.cases.run import check_outputs
    from npusim.chip import load_chip
    from npusim.errors import NpusimError

    rng = random.Random(seed)
    case = CASES[rng.choice(sorted(CASES))]
    chip = _chip(rng, chips())
    dtype = rng.choice(case.dtypes) if rng.random() < 0.9 else rng.choice(BAD_DTYPES)
    shape = _shape(rng, len(case.default_shape))
    pairs, tiling = _params(rng, case), _tiling(rng, case)
    mode = rng.choice(("timed", "timed", "functional"))
    what = (f"{case.name} chip={chip!r} dtype={dtype} shape={shape} params={pairs} "
            f"tiling={tiling} mode={mode}")
    DRAWN[seed] = what
    try:
        params = case.parse_params(pairs)
        args, kwargs = _inputs(case, shape, dtype, params, seed)
        poisoned = _poison(rng, args)
        what += " nan/inf" if poisoned else ""
        result = case.function()(*args, **kwargs, chip=load_chip(chip), tiling=tiling,
                                 mode=mode)
    except NpusimError as exc:
        text = str(exc)
        ok = bool(text.strip()) and "\n" not in text.strip() and "Traceback" not in text
        return Outcome(seed, "error" if ok else "fail", what, text)
    bad = [f"{name}: {text}" for name, same, text in check_outputs(case, args, kwargs, result)
           if not same]
    if not bad and not poisoned:
        bad = oracle_misses(case.name, args, kwargs, result)
    return Outcome(seed, "fail" if bad else "ok", what, "; ".join(bad))


def oracle_misses(name: str, args, kwargs, result) -> list:
    """PyTorch's word on the operators with an oracle here (finite inputs only)."""
    check = ORACLES.get(name)
    if check is None:
        return []
    try:
        check(args, kwargs, result)
    except AssertionError as exc:
        return [f"torch: {exc}"]
    return []


def _silu_oracle(args, kwargs, result):
    import torch

    from op_check import assert_close, to_torch

    dy, x = (to_torch(a) for a in args)
    s = torch.sigmoid(x)
    ref = dy * s * (1 + x * (1 - s))
    rtol = 1e-2 if args[0].dtype != np.float32 else 1e-4
    assert_close(result.outputs["gradInput"], ref.numpy(), rtol, None, "gradInput")


def _moe_oracle(args, kwargs, result):
    from test_op_moe_token_permute_grad import torch_index_add

    from op_check import assert_close, to_torch

    grad, indices = args
    ref = torch_index_add(to_torch(grad), to_torch(indices), num_topk=kwargs["num_topk"])["out"]
    rtol = 1e-2 if grad.dtype != np.float32 else 1e-5
    assert_close(result.outputs["out"], ref.numpy(), rtol, None, "out")


ORACLES = {"silu_backward": _silu_oracle, "moe_token_permute_grad": _moe_oracle}


def _argv(rng: random.Random) -> list:
    from npusim.cases import CASES

    case = CASES[rng.choice(sorted(CASES))]
    shape = "x".join(str(d) for d in _shape(rng, len(case.default_shape)))
    shape = rng.choice([shape, shape, f"-{shape}", "0x3", "abc", "4x", "x", "1e3x2"])
    argv = ["run", rng.choice([case.name, case.name, "no_such_op"]), "--shape", shape]
    if rng.random() < 0.5:
        argv += ["--dtype", rng.choice([*case.dtypes, *BAD_DTYPES, "bf16", "fp16"])]
    if rng.random() < 0.5:
        argv += ["--chip", rng.choice(["atlas-a2", "atlas-training", *BAD_CHIPS])]
    for _ in range(rng.randrange(3)):
        argv += ["--tiling", f"{rng.choice(TILING_FIELDS)}={rng.choice(TILING_VALUES)}"]
    for p in case.params:
        if rng.random() < 0.2:
            argv += ["--param", f"{p.name}={rng.choice(PARAM_MENU)}"]
    if rng.random() < 0.2:
        argv += ["--mode", rng.choice(["functional", "timed", "warp"])]
    return argv


def draw_cli(seed: int) -> Outcome:
    """One command line, drawn from ``seed``, run in-process in an empty folder."""
    from npusim.face.cli import main

    argv = _argv(random.Random(seed))
    what = DRAWN[seed] = "npusim " + " ".join(argv)
    out, err = io.StringIO(), io.StringIO()
    with tempfile.TemporaryDirectory() as work, contextlib.chdir(work), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    if code in (0, 1, 2):
        return Outcome(seed, "ok" if code == 0 else "error", what, err.getvalue().strip())
    return Outcome(seed, "fail", what, f"exit {code}: {err.getvalue().strip()[-2000:]}")


def draw(seed: int) -> Outcome:
    """Draw ``seed``: one in five a command line, the rest operator calls."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT_S)
    try:
        return draw_cli(seed) if seed % 5 == 4 else draw_op(seed)
    except Exception as exc:   # noqa: BLE001 - any other exception is what the fuzzer finds
        return Outcome(seed, "fail", DRAWN.get(seed, f"seed {seed}"), "".join(
            traceback.format_exception(exc))[-3000:])
    finally:
        signal.alarm(0)


def fuzz(count: int, start: int = 0, quiet: bool = False) -> list[Outcome]:
    outcomes = []
    for seed in range(start, start + count):
        outcome = draw(seed)
        outcomes.append(outcome)
        if outcome.kind == "fail" or not quiet:
            print(f"{outcome.kind:5} seed {seed}: {outcome.what}"
                  + (f"\n      {outcome.detail}" if outcome.kind == "fail" else ""),
                  flush=True)
    return outcomes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python tests/fuzz.py", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("count", type=int, help="draws to make")
    parser.add_argument("--start", type=int, default=0, help="first seed (default 0)")
    parser.add_argument("--quiet", action="store_true", help="print failures only")
    args = parser.parse_args(argv)
    outcomes = fuzz(args.count, args.start, args.quiet)
    kinds = {k: sum(o.kind == k for o in outcomes) for k in ("ok", "error", "fail")}
    print(f"{len(outcomes)} draws: {kinds['ok']} ran, {kinds['error']} refused with a clear "
          f"error, {kinds['fail']} failed")
    return 1 if kinds["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
