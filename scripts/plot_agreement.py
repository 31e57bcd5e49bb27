"""Kendall tau between the explainer rankings of every pair of metrics, per model."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd

from fudbench.meta.families import metric_agreement
from fudbench.core.io import write_csv
from fudbench.workflow.jobs import setup_job
from fudbench.report.meta import agreement_heatmap

log = setup_job(snakemake)
p = snakemake.params
matrices, long = metric_agreement(
    pd.read_parquet(snakemake.input.per_image),
    p.explainers,
    n_boot=p.analysis["bootstrap"],
    ci=p.analysis["ci"],
    seed=p.seed,
    curves=p.metrics,
)
agreement_heatmap({m: matrices[m] for m in p.models if m in matrices}, snakemake.output.figures, p.plots)
write_csv(snakemake.output.csv, long, index=False, float_format="%.6g")
for model, m in matrices.items():
    print(model, m.round(2).to_string(), sep="\n", flush=True)
