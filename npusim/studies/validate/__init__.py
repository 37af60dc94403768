"""npusim validate and correlate: predictions held against published measurements (study,
validation.toml, validation_status.toml), against an msprof op_summary (correlate), the error
bands (bands), ranking pairs (ranking), the calibration of the chip models from
instruction-level and smallest-kernel measurements (calibrate, vector_costs), the fidelity
check a report prints (fidelity) and the table's report and scatter plot."""
