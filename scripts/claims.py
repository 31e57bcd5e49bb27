"""The claims of the meta-evaluation (fudbench.meta.claims), derived from
the run's curves and config, each decided with Holm's adjustment within the
claim; the family gate (tables/family_gate.csv) where the rule gives it as
the optional input `gate`."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd

from fudbench.meta.claims import decide_claims
from fudbench.analysis.curves import configured_curve_scores
from fudbench.core.io import write_csv, write_text
from fudbench.workflow.jobs import optional_input, setup_job
from fudbench.report.meta import claims_table

log = setup_job(snakemake)
p = snakemake.params
gate = optional_input(snakemake, "gate")  # absent: no gate (said in the table and the caption)
per_image = pd.read_parquet(snakemake.input.per_image).dropna(subset=["score"])
claims = decide_claims(
    per_image,
    p.explainers,
    configured_curve_scores(p.evaluators),
    n_boot=p.analysis["bootstrap"],
    ci=p.analysis["ci"],
    seed=p.seed,
    gate=gate,
)
write_csv(snakemake.output.csv, claims, index=False, float_format="%.6g")
write_text(snakemake.output.tex, claims_table(claims, p.analysis["ci"]))
with pd.option_context("display.width", 200, "display.max_columns", 12):
    print(claims.to_string(index=False), flush=True)
