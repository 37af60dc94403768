"""npusim predict: a workload's calls on each chip (study), the summary and accounting, and the
report (report, sections, details, blocks, figures)."""
