"""The pre-registered endpoint (fudbench.meta.endpoint): FUD symmetric and FUD
bottom against paper FUD on the scatter-matched families that pass the gate."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd

from fudbench.analysis.curves import configured_curve_scores
from fudbench.meta.endpoint import endpoint_table
from fudbench.core.io import write_csv, write_text
from fudbench.workflow.jobs import setup_job
from fudbench.report.endpoint import endpoint_latex

log = setup_job(snakemake)
p = snakemake.params
per_image = pd.read_parquet(snakemake.input.per_image).dropna(subset=["score"])
gate = pd.read_csv(snakemake.input.gate)
table = endpoint_table(per_image, p.explainers, configured_curve_scores(p.evaluators), gate, ci=p.ci)
write_csv(snakemake.output.csv, table, index=False, float_format="%.6g")
write_text(snakemake.output.tex, endpoint_latex(table, p.ci))
with pd.option_context("display.width", 220, "display.max_columns", 20):
    print(table.to_string(index=False), flush=True)
