"""Table 8: Table 2's summary (its CSV holds all four OOD metrics) with every
column shown, AUPR-In included; no second bootstrap."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd

from fudbench.core.io import write_csv, write_text
from fudbench.workflow.jobs import setup_job
from fudbench.report.ood_quality import ood_table_tex
from fudbench.report.paper_tables import OOD_TABLES

setup_job(snakemake)
summary = pd.read_csv(snakemake.input[0])
labels = list(dict.fromkeys(summary["evaluator"]))
write_csv(snakemake.output.csv, summary, index=False, float_format="%.6g")
write_text(snakemake.output.tex, ood_table_tex(summary, labels, snakemake.params.models, **OOD_TABLES["table8_ood"]))
