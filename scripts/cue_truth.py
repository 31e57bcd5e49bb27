"""Planted cue, coverage of the cue by every map (fudbench.meta.cue): per image
(analysis/cue_coverage.parquet) and its means per model and explainer (tables/cue_truth)."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import re

import pandas as pd

from fudbench.meta.cue import coverage_frame, coverage_summary
from fudbench.report.cue import truth_table
from fudbench.core.io import load_npz, write_csv, write_parquet, write_text
from fudbench.workflow.jobs import setup_job

log = setup_job(snakemake)
p = snakemake.params
masks = load_npz(snakemake.input.images)["masks"]  # the cue squares (data.synthetic.cue)
frames = []
for path in snakemake.input.attributions:
    model, explainer = re.search(r"attributions/([^/]+)/([^/]+)/shard\d+\.npz$", path).groups()
    d = load_npz(path)
    frames.append(coverage_frame(model, explainer, d["ids"], d["attributions"], masks[d["ids"]], p.reduction))
coverage = pd.concat(frames, ignore_index=True)
write_parquet(snakemake.output.coverage, coverage)
summary = coverage_summary(coverage, p.analysis["bootstrap"], p.analysis["ci"], p.seed)
write_csv(snakemake.output.csv, summary, index=False, float_format="%.6g")
write_text(snakemake.output.tex, truth_table(summary, p.analysis["ci"]))
with pd.option_context("display.width", 200, "display.max_columns", 12):
    print(summary.to_string(index=False), flush=True)
