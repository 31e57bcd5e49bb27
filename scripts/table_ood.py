"""Tables 2 and 11: OOD detection of intermediate samples vs clean images by
Energy, Mahalanobis and k-NN, with the sanity row (10%-zeroed clean images)
(Table 8 is rendered from Table 2's summary: scripts/table8_ood.py)."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd

from fudbench.core.io import write_csv, write_text
from fudbench.workflow.jobs import setup_job
from fudbench.report.ood_quality import table2_ood
from fudbench.report.paper_tables import OOD_TABLES, intermediate_curves

setup_job(snakemake)
p, table = snakemake.params, snakemake.wildcards.table
records = pd.read_parquet(snakemake.input.records)
records = records[records["explainer"].isin(p.explainers)]
clean = pd.read_parquet(snakemake.input.clean_energy)  # model, image, energy, mahalanobis, knn, sanity_*
present = {c: label for c, label in intermediate_curves(table).items() if c in set(records["curve"])}
# the LaTeX caption naming the protocols that ran (fudbench.report.captions.ood_tex_caption; None: the default)
spec = {**OOD_TABLES[table], **({"caption": p.tex_caption} if getattr(p, "tex_caption", None) else {})}
summary, tex = table2_ood(
    records,
    clean,
    present,
    p.models,
    p.analysis["bootstrap"],
    p.analysis["ci"],
    p.seed,
    pooling=p.analysis["ood_pooling"],
    **spec,
)
write_csv(snakemake.output.csv, summary, index=False, float_format="%.6g")
write_text(snakemake.output.tex, tex)
print(summary.to_string(index=False), flush=True)
