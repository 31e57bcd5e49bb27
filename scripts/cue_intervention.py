"""Planted cue, intervention check (fudbench.meta.cue): each classifier on the test
split clean, with the cue removed, the object removed and the cue recoloured, each
counterfactual rendered from the generator's own draws; and the dose-response (a share
of the cue's pixels removed, tables/cue_dose)."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import json

import numpy as np
import pandas as pd
import torch

from fudbench.meta.cue import CueCheck, dose_response, failed_checks, intervention_check
from fudbench.report.cue import dose_table, intervention_table
from fudbench.data.synthetic import CUE_REMOVAL_ORDERS, SyntheticSpec, cue_removal_ranks, generate_cue_split
from fudbench.core.device import resolve_device
from fudbench.core.io import load_npz, write_csv, write_text
from fudbench.workflow.jobs import setup_job
from fudbench.models.classifiers import load_classifier

log = setup_job(snakemake)
p = snakemake.params
check = CueCheck.from_config(p.check)
test = load_npz(snakemake.input.test)
data = generate_cue_split(
    SyntheticSpec.from_config(p.synthetic), len(test["labels"]), p.seed, "test", counterfactuals=True
)
# The counterfactuals are only counterfactuals of these images if the draws are the same.
if not (np.array_equal(data["images"], test["images"]) and np.array_equal(data["labels"], test["labels"])):
    raise SystemExit(
        f"{snakemake.input.test} is not the test split that data.synthetic and seed make now: "
        "rerun make_dataset (delete the file)"
    )
n_classes = len(json.load(open(snakemake.input.classes)))
device = resolve_device(p.device)

ranks = {order: cue_removal_ranks(data["masks"], p.seed, "test", order) for order in CUE_REMOVAL_ORDERS}

rows, dose_rows = [], []
for name, path in zip(p.models, snakemake.input.models):
    model = load_classifier(path, device)

    @torch.no_grad()
    def predict_proba(images, model=model):
        x = torch.from_numpy(images).float().div_(255)
        return torch.cat(
            [model(x[i : i + 256].to(device)).float().softmax(1).cpu() for i in range(0, len(x), 256)]
        ).numpy()

    rows += intervention_check(name, lambda images: predict_proba(images).argmax(1), data, n_classes, check, p.ci)
    dose_rows += dose_response(name, predict_proba, data["images"], data["no_cue"], ranks, data["labels"], ci=p.ci)
table = pd.DataFrame(rows)
doses = pd.DataFrame(dose_rows)
write_csv(snakemake.output.dose_csv, doses, index=False, float_format="%.6g")
write_text(snakemake.output.dose_tex, dose_table(doses, p.ci))
write_csv(snakemake.output.csv, table, index=False, float_format="%.6g")
write_text(snakemake.output.tex, intervention_table(table, p.ci))
with pd.option_context("display.width", 200, "display.max_columns", 12):
    log.info("intervention check:\n%s", table.to_string(index=False))  # in the log: kept if the rule fails
    log.info("dose-response:\n%s", doses.to_string(index=False))
failed = failed_checks(table)
if failed:
    msg = (
        "[cue] intervention check FAILED for "
        + "; ".join(f"{m}: {', '.join(c)}" for m, c in failed.items())
        + ": the cue is not shown to be the evidence these models use, so their cue verdicts are not licensed"
    )
    log.error(msg)
    if check.strict:  # Snakemake deletes a failed job's tables; the numbers stay in its log
        raise SystemExit(msg + " (analysis.cue.strict: false flags it in the tables instead)")
