"""Many runs, one executor: tiling sweeps (and, later, predictions and validations).

A study turns its work into independent points, each plain data (operator, chip, shape, dtype,
params, tiling), runs them on one executor (in-process, a local process pool or a Dask cluster)
and gets back plain records, the same whatever ran them. Studies reach operators only through
the registry in ``npusim/cases/``.
"""
