"""``npusim bench --group memory``: the peak memory of the large runs issue 24 measured.

Each case runs in a process of its own, as the other groups' cases do, so the peak RSS the
bench reports is the case's own:

- ``npusim run embedding_dense_backward --shape 8192x4096 --param indices=zipf`` as the command
  runs it (trace on, every output checked against the golden): the 152 MB gradient scatters into
  a 32000 x 4096 fp32 table (524 MB), which the op's GM, the result and the golden each hold;
- ``npusim predict moe-llm-layer-backward --jobs 1``: eight timing-only points in one process,
  each run's memory freed before the next;
- ``npusim predict resnet50-backward`` at batch 256 on both chips, ``--jobs 1`` (about 20
  minutes on one core): 48 points, the largest of which sets the peak.

The instructions column counts the simulated instructions of every point (set/wait flags
included); the wall time is the whole case's.
"""

import dataclasses
import time
from types import SimpleNamespace


def cases(quick: bool):
    rows, batch = (2048, 64) if quick else (8192, 256)
    yield (f"run embedding_dense_backward {rows}x4096 zipf, checked", checked_run,
           dict(op="embedding_dense_backward", shape=(rows, 4096),
                params={"indices": "zipf"}), False)
    yield "predict moe-llm-layer-backward, --jobs 1", prediction, dict(
        workload="moe-llm-layer-backward"), False
    yield f"predict resnet50-backward at batch {batch}, --jobs 1", prediction, dict(
        workload="resnet50-backward", batch=batch), False


def checked_run(op: str, shape, params: dict, **options):
    """``npusim run OP``: the run and its golden check (a mismatch is an error row)."""
    from npusim.cases import CASES
    from npusim.cases.run import run_case
    from npusim.errors import NpusimError

    case = CASES[op]
    run = run_case(case, "atlas-a2", tuple(shape), case.dtypes[0], case.parse_params(params),
                   **options)
    if not run.ok:
        raise NpusimError(f"{op}: {run.checks}")
    return run.result


def predict_cases(quick: bool):
    """``npusim bench --group predict``: ResNet-50's backward step at batch 32 and 256 on both
    default chips with ``--jobs 2``, whole and ``--fast``, each a process of its own; the peak
    RSS is the largest of the process and its workers. The cache of points is off (every
    point simulated)."""
    for batch in (8, 32) if quick else (32, 256):
        yield f"predict resnet50-backward at batch {batch}, --jobs 2", prediction, dict(
            workload="resnet50-backward", batch=batch, jobs=2), False
        yield f"predict resnet50-backward at batch {batch}, --jobs 2 --fast", prediction, dict(
            workload="resnet50-backward", batch=batch, jobs=2, fast=True), False


def prediction(workload: str, batch: int | None = None, jobs: int = 1, fast: bool = False,
               **options):
    """``npusim predict WORKLOAD --jobs N --no-cache`` (``batch``: every call's leading
    dimension)."""
    from npusim.studies import cache
    from npusim.studies.predict.study import predict
    from npusim.studies.workload import load_workload

    wl = load_workload(workload)
    if batch is not None:
        wl = dataclasses.replace(wl, calls=[dataclasses.replace(c, shape=(batch, *c.shape[1:]))
                                            for c in wl.calls])
    counted, t0 = [0], time.perf_counter()

    def count(i, record):
        counted[0] += sum((record.get("instruction_counts") or {}).values())

    with cache.disabled():
        predict(wl, jobs=jobs, on_record=count, fast=fast)
    return SimpleNamespace(stats={"instructions": counted[0],
                                  "wall_seconds": {"total": time.perf_counter() - t0}},
                           cycles=None, mode="timed")
