"""Planted cue, metric verdicts (fudbench.analysis.cue): per model and metric, the mean
per-image Spearman between the metric's scores of the explainers and their cue coverage."""
import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd

from fudbench.analysis.cue import CueCheck, cue_verdicts, failed_checks, verdict_table
from fudbench.analysis.curves import configured_curve_scores
from fudbench.io import write_csv, write_text
from fudbench.jobs import setup_job

log = setup_job(snakemake)
p = snakemake.params
per_image = pd.read_parquet(snakemake.input.per_image).dropna(subset=["score"])
coverage = pd.read_parquet(snakemake.input.coverage)
failed = failed_checks(pd.read_csv(snakemake.input.intervention))
verdicts = cue_verdicts(per_image, coverage, p.explainers, configured_curve_scores(p.evaluators),
                        truth=CueCheck.from_config(p.check).truth, n_boot=p.analysis["bootstrap"],
                        ci=p.analysis["ci"], seed=p.seed, failed=failed)
write_csv(snakemake.output.csv, verdicts, index=False, float_format="%.6g")
write_text(snakemake.output.tex, verdict_table(verdicts, p.analysis["ci"]))
with pd.option_context("display.width", 200, "display.max_columns", 14):
    print(verdicts.to_string(index=False), flush=True)
