"""The family gate (fudbench.meta.gate): does each family's best member beat
`random` on the independent truth (mass inside the ground-truth mask)? Beside it,
reported: whether a scatter-only metric recovers the family's order (gate.scatter_check)."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import re

import pandas as pd
import torch

from fudbench.meta.cue import reduce_map
from fudbench.meta.gate import family_gate, keep_top_boundary, scatter_check
from fudbench.analysis.localisation import mass_inside
from fudbench.core.io import load_npz, write_csv, write_text
from fudbench.workflow.jobs import setup_job
from fudbench.report.latex import booktabs, escape, fmt_ci

# the caption names fudbench.meta.inference by its path before 0.2.0, as the committed tables do (src/fudbench/report/cue.py)

log = setup_job(snakemake)
p = snakemake.params
masks = load_npz(snakemake.input.images)["masks"]
rows, boundary = [], []
for path in snakemake.input.attributions:
    model, explainer = re.search(r"attributions/([^/]+)/([^/]+)/shard\d+\.npz$", path).groups()
    d = load_npz(path)
    share = mass_inside(torch.from_numpy(d["attributions"]), torch.from_numpy(masks[d["ids"]]), p.reduction)
    rows += [
        {"model": model, "explainer": explainer, "image": int(i), "value": float(v)}
        for i, v in zip(d["ids"], share.numpy())
    ]
    spread = keep_top_boundary(reduce_map(d["attributions"], p.reduction), p.ratios)
    boundary += [
        {"model": model, "explainer": explainer, "image": int(i), "value": float(v)} for i, v in zip(d["ids"], spread)
    ]
degraded = {k: tuple(v) for k, v in p.degraded.items()}
gate = family_gate(pd.DataFrame(rows), degraded, p.random_entry, ci=p.ci)
gate = gate.merge(scatter_check(pd.DataFrame(boundary), degraded, p.ci), on=["model", "family"], how="left")
write_csv(snakemake.output.csv, gate, index=False, float_format="%.6g")
rows_tex = [
    [
        escape(r.model),
        escape(r.family),
        escape(r.best_member),
        f"{r.best_mean:.3f}",
        f"{r.random_mean:.3f}",
        fmt_ci(r.estimate, r.ci_low, r.ci_high, 3),
        fmt_ci(r.order_estimate, r.order_low, r.order_high, 2),
        fmt_ci(r.scatter_order_estimate, r.scatter_order_low, r.scatter_order_high, 2),
        "passes" if r.passes else "fails",
    ]
    for r in gate.itertuples()
]
write_text(
    snakemake.output.tex,
    booktabs(
        [
            "model",
            "family",
            "best member",
            "mass in (best)",
            "mass in (random)",
            "best - random",
            "order on truth",
            "scatter-only order",
            "gate",
        ],
        rows_tex,
        caption=f"Family gate on the ground-truth masks (share of the attribution mass inside): the best member "
        f"minus random, paired per image, and the mean per-image Spearman of the members' mass inside with "
        f"the family's order ({p.ci:.0%} intervals, fudbench.analysis.inference); a family counts on a model "
        f"only where both lie above 0. Reported, not deciding: the same Spearman for a metric that sees only the "
        f"scatter of the keep-top sets (minus their boundary share): above 0, the members differ in scatter too.",
        label="tab:family_gate",
    ),
)
with pd.option_context("display.width", 200, "display.max_columns", 14):
    print(gate.to_string(index=False), flush=True)
