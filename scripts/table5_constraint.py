"""Table 5: hard vs soft constraint, image quality of FUD samples at one kept fraction."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import numpy as np
import pandas as pd
import torch

from fudbench.analysis.quality import QUALITY_METRICS, quality_metrics
from fudbench.core.io import load_npz, write_csv, write_text
from fudbench.workflow.jobs import setup_job
from fudbench.report.diagnostics import table5_caption
from fudbench.report.ood_quality import table3_quality

setup_job(snakemake)
p, inp = snakemake.params, snakemake.input
metrics = [m for m in QUALITY_METRICS if m in p.quality["metrics"]]
images = load_npz(inp.images)["images"]
frames = []
for model, path in zip(p.models, inp.constraint):
    d = load_npz(path)
    originals = torch.from_numpy(images[d["ids"]].astype(np.float32) / 255)
    for constraint in ("hard", "soft"):
        q = quality_metrics(torch.from_numpy(d[constraint]), originals, metrics=metrics)
        frames.append(
            pd.DataFrame(
                {"evaluator": constraint, "model": model, "explainer": p.explainer, "image": d["ids"], "step": 0, **q}
            )
        )
    kept, sigma = float(d["kept"]), float(d["soft_sigma"])
summary, tex = table3_quality(
    pd.concat(frames, ignore_index=True),
    p.analysis["bootstrap"],
    p.analysis["ci"],
    p.seed,
    metrics=metrics,
    evaluators=["hard", "soft"],
    first_column="Constraint",
    caption=table5_caption(kept, sigma, p.explainer),
    tex_label="tab:constraint",
)
write_csv(snakemake.output.csv, summary, index=False, float_format="%.6g")
write_text(snakemake.output.tex, tex)
print(summary.to_string(index=False), flush=True)
