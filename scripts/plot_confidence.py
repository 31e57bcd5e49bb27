"""Mean confidence against the kept fraction, per evaluator and explainer."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd

from fudbench.core.io import save_figure
from fudbench.workflow.jobs import setup_job
from fudbench.report.figures import confidence_vs_ratio, plt

setup_job(snakemake)
p = snakemake.params
plt.rcParams["savefig.dpi"] = p.plots["dpi"]
fig = confidence_vs_ratio(pd.read_parquet(snakemake.input.records), p.models, p.explainers)
save_figure(fig, snakemake.output)
