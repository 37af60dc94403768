"""``npusim validate --steps``: predict every whole-step row's workload at its batch, on the
chips its rows name, and give the rows' errors (``npusim.studies.validate.steps``)."""

from npusim.studies.validate.steps import load_steps, step_errors


def run_steps(rows=None, *, jobs: int = 1, scheduler=None, on_record=None) -> list:
    """Predict every row's workload and batch on the chips its rows name; their errors."""
    from npusim.studies.predict.study import predict

    rows = rows if rows is not None else load_steps()
    out = []
    for workload, batch in dict.fromkeys((r.workload, r.batch) for r in rows):
        mine = [r for r in rows if (r.workload, r.batch) == (workload, batch)]
        chips = list(dict.fromkeys(r.model for r in mine))
        result = predict(workload, chips, jobs=jobs, scheduler=scheduler, batch=batch,
                         on_record=on_record)
        out += step_errors(result, mine)
    return out
