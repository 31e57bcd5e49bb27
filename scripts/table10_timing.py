"""Table 10: FUD's wall time per image against the number of DDIM steps."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd

from fudbench.core.io import write_csv, write_text
from fudbench.workflow.jobs import setup_job
from fudbench.report.diagnostics import table10_timing

setup_job(snakemake)
timings = pd.concat([pd.read_parquet(f) for f in snakemake.input], ignore_index=True)
summary, tex = table10_timing(timings, timings["device"].iloc[0])
write_csv(snakemake.output.csv, summary, index=False, float_format="%.6g")
write_text(snakemake.output.tex, tex)
print(summary.to_string(index=False), flush=True)
