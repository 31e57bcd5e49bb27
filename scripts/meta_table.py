"""How every metric recovers the known order of each family (Spearman or known-pairs concordance; meta.py)."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd
import pyarrow.parquet as pq

from fudbench.meta.families import default_step_values, ground_truth_correlations
from fudbench.core.io import write_csv, write_text
from fudbench.workflow.jobs import setup_job
from fudbench.report.meta import meta_table

log = setup_job(snakemake)
p = snakemake.params
degraded = {name: tuple(v) for name, v in p.degraded.items()}
per_image = pd.read_parquet(snakemake.input.per_image)
# Only what micro needs: the degraded explainers' rows and the per-step value columns.
wanted = ["model", "explainer", "curve", "image", "step", *sorted(set(default_step_values().values()))]
present = set(pq.read_schema(snakemake.input.records).names)
records = pd.read_parquet(
    snakemake.input.records, columns=[c for c in wanted if c in present], filters=[("explainer", "in", list(degraded))]
)
corr = ground_truth_correlations(
    per_image, degraded, records, n_boot=p.analysis["bootstrap"], ci=p.analysis["ci"], seed=p.seed, curves=p.metrics
)
csv, tex = meta_table(corr, models=p.models, families=list(dict.fromkeys(f for f, _ in degraded.values())))
write_csv(snakemake.output.csv, csv, index=False, float_format="%.6g")
write_text(snakemake.output.tex, tex)
print(csv.to_string(index=False), flush=True)
