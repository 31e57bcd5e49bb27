"""LaTeX tables (booktabs) and matplotlib figures."""

# Table columns that hold measured wall time: they differ between two runs of
# the same config, every other column must not (tests/test_resume.py,
# bench/compare_results.py).
TIMING_COLUMNS = {"table10_timing.csv": ("mean", "std", "min", "max"), "report_card.csv": ("seconds_per_image",)}
