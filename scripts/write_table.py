"""Write one of the paper's tables as LaTeX (booktabs) and CSV."""
import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd

from fudbench.io import write_csv, write_text
from fudbench.jobs import setup_job
from fudbench.report import tables

log = setup_job(snakemake)
p = snakemake.params
builders = {"table4_kendall": tables.table4_kendall, "table7_scores": tables.table7_scores}
summary, tex = builders[snakemake.wildcards.table](
    pd.read_parquet(snakemake.input.per_image), p.models, p.explainers,
    p.analysis["bootstrap"], p.analysis["ci"], p.seed)
write_csv(snakemake.output.csv, summary, index=False, float_format="%.6g")
write_text(snakemake.output.tex, tex)
print(summary.to_string(index=False), flush=True)
