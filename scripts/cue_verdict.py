"""Planted cue, metric verdicts (fudbench.meta.cue): per model, metric, truth and
explainer set (with and without ISA), the mean per-image Spearman between the metric's
scores of the explainers and their cue coverage, beside the macro Spearman; the per-image
Spearman values (analysis/cue_spearman_per_image.csv) and the endpoint cells (FUD
symmetric / bottom minus paper FUD, tables/cue_endpoint)."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd

from fudbench.meta.cue import CueCheck, cue_verdict_frames, endpoint_rows, failed_checks
from fudbench.report.cue import endpoint_table, verdict_table
from fudbench.analysis.curves import configured_curve_scores
from fudbench.core.io import write_csv, write_text
from fudbench.workflow.jobs import setup_job

log = setup_job(snakemake)
p = snakemake.params
per_image = pd.read_parquet(snakemake.input.per_image).dropna(subset=["score"])
coverage = pd.read_parquet(snakemake.input.coverage)
failed = failed_checks(pd.read_csv(snakemake.input.intervention))
primary = CueCheck.from_config(p.check).truth
verdicts, rho = cue_verdict_frames(
    per_image,
    coverage,
    p.explainers,
    configured_curve_scores(p.evaluators),
    n_boot=p.analysis["bootstrap"],
    ci=p.analysis["ci"],
    seed=p.seed,
    failed=failed,
)
endpoint = endpoint_rows(rho, primary=(primary, True), ci=p.analysis["ci"], verdicts=verdicts)
write_csv(snakemake.output.csv, verdicts, index=False, float_format="%.6g")
write_text(snakemake.output.tex, verdict_table(verdicts[verdicts["truth"] == primary], p.analysis["ci"]))
write_csv(snakemake.output.per_image, rho, index=False, float_format="%.6g")
write_csv(snakemake.output.endpoint_csv, endpoint, index=False, float_format="%.6g")
write_text(snakemake.output.endpoint_tex, endpoint_table(endpoint, p.analysis["ci"]))
with pd.option_context("display.width", 220, "display.max_columns", 20):
    print(verdicts[verdicts["truth"] == primary].to_string(index=False), flush=True)
    print(endpoint.to_string(index=False), flush=True)
