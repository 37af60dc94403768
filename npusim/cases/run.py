"""Running a case and measuring it: the check against the golden, the roofline.

``run_case`` makes the seeded inputs, runs the operator on the simulator and compares each
output with the golden bit for bit (after the run: the golden never fills an output).
``metrics`` derives what the command and the studies report from the Result:

- bytes: the operator's tensors in and out, each once (what an ideal kernel moves through GM: HBM,
  or the LPDDR4X DRAM of the Atlas inference series, named by the chip's ``memory_kind``);
- achieved TB/s and TFLOPS: those bytes and the case's flops over the simulated time;
- roofline bound: bytes / GM bandwidth for a vector operator; for a cube operator the larger
  of that and flops / the cube peak of the chip at the operator's dtype. The ratio is bound over
  simulated time (100% would be the bound itself).

Not modelled here: host-side time (argument checks, tiling, launch), which the Result does not
include either.
"""

import dataclasses
import warnings
from dataclasses import dataclass, field

import numpy as np

from npusim.cases.common import OpCase, zero_inputs
from npusim.chip import load_chip
from npusim.engine import launch_memo
from npusim.engine.fast import fast_runs
from npusim.errors import NpusimError
from npusim.golden.atomic import AtomicSum

# buffer name in the stats -> the chip attribute of its size (as npusim.face.plot, which this module
# does not import so that the command starts without matplotlib)
SIZE_KEYS = {"UB": "ub_bytes", "L1": "l1_bytes", "L0A": "l0a_bytes", "L0B": "l0b_bytes",
             "L0C": "l0c_bytes", "BT": "bias_table_bytes", "FB": "fixpipe_buffer_bytes"}


@dataclass
class CaseRun:
    """One operator run on one chip, with what the command reports about it."""

    case: OpCase
    chip: object
    dtype: str
    shape: tuple
    params: dict
    seed: int
    result: object = None
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    checks: list = field(default_factory=list)   # (output name, ok, text)
    error: str = ""                              # why it did not run on this chip

    @property
    def ok(self) -> bool:
        return not self.error and all(ok for _, ok, _ in self.checks)


def _make(case: OpCase, shape, dtype: str, params: dict, rng) -> tuple:
    """The case's inputs. A maker that derives one input from another (the saved statistics a
    gradient takes) may reduce over an empty axis of a shape with a zero: the NaN that gives is
    the value, not a numpy RuntimeWarning on the user's stderr."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return case.make(shape, dtype, params, rng)


def run_case(case: OpCase, chip, shape, dtype: str, params: dict, *, tiling=None,
             mode: str = "timed", seed: int = 0, trace: bool = True,
             numerics: bool = True, sanitize: bool = True, check: bool = True,
             form: str = "aclnn", fast: bool = False) -> CaseRun:
    """Make seeded inputs, run ``case`` on ``chip`` and check it against the golden (not
    with ``numerics=False``: a timing-only run computes no outputs; not with ``check=False``:
    the outputs are computed, the golden is not, and the run says so). ``form="5hd"`` runs
    the case's graph form (``npusim/cases/five_hd.py``) instead of its aclnn operator; its
    NC1HWC0 outputs are read back as NCHW for the check. ``fast=True`` (timing only: no
    numerics, no sanitizer) leaves the repeated periods of the kernels' steady loops out of
    the run (``npusim/engine/fast.py``), an approximation whose error ``npusim bench --group
    fast`` measures."""
    if fast and (numerics or sanitize):
        raise NpusimError(f"fast=True with numerics={numerics}, sanitize={sanitize}: a fast run "
                          "leaves iterations out, so it is timing only; pass numerics=False and "
                          "sanitize=False")
    chip = load_chip(chip)
    rng = np.random.default_rng(seed)
    with zero_inputs(not numerics and case.values_free_timing):
        args, kwargs = _make(case, shape, dtype, params, rng)
    run = CaseRun(case=case, chip=chip, dtype=dtype, shape=shape, params=params, seed=seed,
                  args=args, kwargs=kwargs)
    options = dict(chip=chip, tiling=tiling or None, mode=mode, trace=trace,
                   numerics=numerics, sanitize=sanitize)
    with fast_runs(fast):
        run.result = _run_form(case, form, args, kwargs, options)
    if numerics and not check:
        run.checks = [("-", True, "not checked (--check off): outputs computed, not compared "
                       "with the golden")]
    elif numerics:
        seen = run.result if form == "aclnn" else case.five_hd.to_nchw(run.result, args, kwargs)
        run.checks = check_outputs(case, args, kwargs, seen)
    return run


def _run_form(case: OpCase, form: str, args, kwargs, options: dict):
    """The aclnn operator's run, or its graph form's on NC1HWC0 (``form="5hd"``)."""
    if form == "5hd":
        if case.five_hd is None:
            raise NpusimError(f"{case.name} has no graph form on NC1HWC0 (form 5hd); "
                              "run it as aclnn does")
        return case.five_hd.run(args, kwargs, **options)
    if form == "aclnn":
        return case.function()(*args, **kwargs, **options)
    raise NpusimError(f"form {form!r}: aclnn or 5hd")


def check_outputs(case: OpCase, args, kwargs, result) -> list:
    """(name, bit-identical?, text) for every output the golden gives."""
    golden = case.golden()
    if golden is None:
        return [("-", True, f"not checked: npusim.golden has no {case.name} yet")]
    extra = case.golden_options(result, args, kwargs) if case.golden_options else {}
    with np.errstate(all="ignore"):
        want = golden(*args, **kwargs, **extra)
    if not isinstance(want, dict):
        want = {next(iter(result.outputs)): want}
    checks = []
    for name, expected in want.items():
        got = result.outputs.get(name)
        if expected is None or got is None:
            continue
        if isinstance(expected, AtomicSum):
            checks.append((name, *_compare_atomic(got, expected)))
        else:
            checks.append((name, *_compare(got, expected)))
    return checks


def _compare_atomic(got, expected: AtomicSum) -> tuple:
    """An output summed by GM atomic adds: bit-identical to the part-order golden, or within
    the bound any landing order gives (the order follows timing)."""
    ok, text = _compare(got, expected.value)
    if ok:
        return True, "bit-identical to the golden (atomic: order follows timing)"
    inside = expected.within(got)
    if inside.all():
        return True, "within the summation-order bound of the golden (atomic: order follows " \
                     "timing; " + text.removeprefix("MISMATCH: ") + ")"
    return False, f"MISMATCH beyond the summation-order bound: {int((~inside).sum()):,} " \
                  f"elements (atomic: order follows timing)"


def _compare(got, expected) -> tuple:
    """Bit-identical, or how many elements differ and by how much at most; compared a block
    of rows at a time (float64 copies of one block, never of a whole large output)."""
    from npusim.golden.atomic import row_blocks

    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape == expected.shape and _same_bits(got, expected):
        return True, "bit-identical to the golden"
    if got.shape != expected.shape:
        return False, f"shape {got.shape}, golden {expected.shape}"
    bad, worst = 0, 0.0
    for rows in row_blocks(got.shape):
        a, b = got[rows].astype(np.float64), expected[rows].astype(np.float64)
        diff = ~((a == b) | (np.isnan(a) & np.isnan(b)))
        if diff.any():
            bad += int(diff.sum())
            with np.errstate(invalid="ignore"):     # inf - inf where one side is NaN
                worst = max(worst, float(np.nanmax(np.abs(a - b)[diff], initial=0.0)))
    if not bad:
        return True, "bit-identical to the golden"
    return False, f"MISMATCH: {bad:,} of {got.size:,} elements differ (max |d| {worst:g})"


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """The same dtype and the same bytes (then the values compare equal too: the quick path
    of ``_compare``, without float64 copies of large outputs)."""
    if a.dtype != b.dtype:
        return False
    return np.array_equal(np.ascontiguousarray(a).reshape(-1).view(np.uint8),
                          np.ascontiguousarray(b).reshape(-1).view(np.uint8))


def _nbytes(arg) -> int:
    """An input's bytes; a tensor list (the foreach operators) counts every tensor."""
    if isinstance(arg, list | tuple):
        return sum(_nbytes(a) for a in arg)
    return arg.nbytes


def moved_bytes(run: CaseRun) -> int:
    """The operator's tensors in and out, each counted once."""
    inputs = sum(_nbytes(a) for a in run.args)
    outputs = sum(o.nbytes for o in run.result.outputs.values() if o is not None)
    return inputs + outputs


def cube_dtype(run: CaseRun) -> str:
    """The dtype the cube ran at, for the roofline: what the run chose (the case's
    ``golden_options``: fp16 for fp32 inputs with cube_math_type 2, HF32 where the chip and
    cube_math_type give it), else the input dtype when the cube takes it, else fp16."""
    if run.case.golden_options and run.result is not None:
        opts = run.case.golden_options(run.result, run.args, run.kwargs)
        if opts.get("compute_dtype"):
            return "hfloat32" if opts.get("hf32_bits") else opts["compute_dtype"]
    return run.dtype if run.dtype in run.chip.input_dtypes else "float16"


def metrics(run: CaseRun) -> dict:
    """What the command reports about a timed (or functional) run."""
    r, chip = run.result, run.chip
    nbytes, flops = moved_bytes(run), run.case.flops(run.args, run.kwargs)
    out = {"bytes": nbytes, "flops": flops, "cycles": r.cycles, "time_us": r.time_us}
    memory_us = nbytes / chip.hbm_bytes_per_s * 1e6
    bound_us, bound = memory_us, "memory"
    if run.case.unit == "cube":
        dt = cube_dtype(run)
        compute_us = flops / chip.peak_flops(dt) * 1e6
        out["peak_tflops"], out["cube_dtype"] = chip.peak_flops(dt) / 1e12, dt
        if compute_us > memory_us:
            bound_us, bound = compute_us, "compute"
    out.update(bound_us=bound_us, bound=bound)
    if r.cycles:
        seconds = r.time_us * 1e-6
        out.update(tbs=nbytes / seconds / 1e12, tflops=flops / seconds / 1e12,
                   roofline_ratio=bound_us / r.time_us)
    out["pipe_utilisation"] = r.stats.get("pipe_utilisation", {})
    # the most live at once (with the trace), else what init_buffer carved: two things, so the
    # report labels which (``peak_kind``)
    live = r.stats.get("peak_live_bytes")
    out["peak_kind"] = "live" if live else "carved"
    out["peak_live_bytes"] = live or r.stats.get("peak_bytes", {})
    out["capacity_bytes"] = {b: getattr(chip, SIZE_KEYS[b]) for b in out["peak_live_bytes"]
                             if b in SIZE_KEYS}
    return out


def tiling_dict(tiling) -> dict:
    if tiling is None:
        return {}
    if dataclasses.is_dataclass(tiling):
        return dataclasses.asdict(tiling)
    return dict(tiling) if isinstance(tiling, dict) else {"tiling": str(tiling)}


def compare_runs(case, chips, shape, dtype, params, tiling=None, mode="timed", seed=0,
                 trace=True) -> list:
    """One CaseRun per chip; a chip that refuses the case carries the reason in ``error``."""
    runs = []
    for chip in map(load_chip, chips):
        try:
            runs.append(run_case(case, chip, shape, dtype, params, tiling=tiling, mode=mode,
                                 seed=seed, trace=trace))
        except NpusimError as exc:
            runs.append(CaseRun(case=case, chip=chip, dtype=dtype, shape=shape, params=params,
                                seed=seed, error=" ".join(str(exc).split())))
    if all(r.error for r in runs):
        raise NpusimError(runs[0].error)
    return runs


def same_launches(directory: str | None = None):
    """``with same_launches():`` a study's timing-only launches that are identical run once
    (``npusim/engine/launch_memo.py``); ``directory``: the scope a pool worker joins."""
    return launch_memo.scope(directory)


def join_same_launches(directory: str | None) -> None:
    """In a pool worker: use the parent study's ``same_launches`` scope in ``directory``."""
    launch_memo.join(directory)
