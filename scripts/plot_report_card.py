"""Forest plot of the metric report card (tables/report_card.csv)."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd

from fudbench.workflow.jobs import setup_job
from fudbench.report.meta import report_card_figure

setup_job(snakemake)
report_card_figure(pd.read_csv(snakemake.input.csv), snakemake.output.figures, snakemake.params.plots)
