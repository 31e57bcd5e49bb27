"""Collect every model's quality gate into one file and print it."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import json

from fudbench.core.io import write_json
from fudbench.workflow.jobs import setup_job

setup_job(snakemake)
p = snakemake.params
summary = {"classifiers": {}, "gates": p.gates}
for model, path in zip(p.models, snakemake.input.classifiers):
    m = json.load(open(path))
    summary["classifiers"][model] = {k: m[k] for k in ("arch", "test_accuracy", "passes_gate", "parameters")}
if snakemake.input.score_model:  # absent when no evaluator reads the score model (a run without FUD)
    score = json.load(open(snakemake.input.score_model))
    summary["score_model"] = {
        m: {k: r[k] for k in ("auroc", "fpr95", "aupr_in", "aupr_out")} for m, r in score["classifiers"].items()
    }
write_json(snakemake.output[0], summary)
print(json.dumps(summary, indent=2), flush=True)
