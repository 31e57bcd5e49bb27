"""Write a table of per-image scores (Tables 4 and 7, the appendix protocols'
score tables) as LaTeX (booktabs) and CSV."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd

from fudbench.core.io import write_csv, write_text
from fudbench.workflow.jobs import setup_job
from fudbench.report import tables
from fudbench.report.paper_tables import SCORE_TABLES, score_labels, score_table_caption

log = setup_job(snakemake)
p, name = snakemake.params, snakemake.wildcards.table
per_image = pd.read_parquet(snakemake.input.per_image)
common = (per_image, p.models, p.explainers, p.analysis["bootstrap"], p.analysis["ci"], p.seed)
if name == "table4_kendall":
    summary, tex = tables.table4_kendall(*common)
elif name == "table7_scores":
    summary, tex = tables.table7_scores(*common)
else:
    spec, labels = SCORE_TABLES[name], score_labels(per_image["curve"].unique())
    curves = [c for c in labels if spec["select"](c) and c in set(per_image["curve"])]
    summary, tex = tables.score_table(
        per_image,
        p.models,
        p.explainers,
        curves,
        labels,
        p.analysis["bootstrap"],
        p.analysis["ci"],
        p.seed,
        caption=score_table_caption(name, curves),
        tex_label=spec["tex_label"],
    )
write_csv(snakemake.output.csv, summary, index=False, float_format="%.6g")
write_text(snakemake.output.tex, tex)
print(summary.to_string(index=False), flush=True)
