"""The metric report card (fudbench.meta.report_card): per model and metric,
the recovery of each ground-truth family's order with its interval, the
anchors' ranks against their expected ranks, the scatter reaction per scatter
pair, the family gate (tables/family_gate.csv, where the rule gives it as the
optional input `gate`), agreement and cost per image."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd

from fudbench.meta.report_card import report_card
from fudbench.core.io import write_csv, write_text
from fudbench.workflow.jobs import optional_input, setup_job
from fudbench.report.meta import report_card_table

log = setup_job(snakemake)
p = snakemake.params
per_image = pd.read_parquet(snakemake.input.per_image)
seconds = pd.read_parquet(snakemake.input.records, columns=["model", "explainer", "curve", "image", "seconds"])
gate = optional_input(snakemake, "gate")  # absent: no gate (said in the caption)
card = report_card(
    per_image,
    seconds,
    p.explainers,
    p.evaluators,
    p.classifiers,
    n_boot=p.analysis["bootstrap"],
    ci=p.analysis["ci"],
    seed=p.seed,
    target_half_width=p.target_half_width,
    gate=gate,
)
write_csv(snakemake.output.csv, card, index=False, float_format="%.6g")
write_text(snakemake.output.tex, report_card_table(card, p.target_half_width))
with pd.option_context("display.width", 200, "display.max_columns", 12):
    print(card.to_string(index=False), flush=True)
