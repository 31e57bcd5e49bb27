"""Report: LaTeX tables (booktabs), matplotlib figures, the results page and the tables' sanity checks.

Floor 8: imports every floor below (core ... meta), never workflow."""

# Table columns that hold measured wall time: they differ between two runs of
# the same config, every other column must not (tests/test_resume.py,
# bench/compare_results.py).
TIMING_COLUMNS = {"table10_timing.csv": ("mean", "std", "min", "max"), "report_card.csv": ("seconds_per_image",)}
