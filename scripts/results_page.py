"""The results page (fudbench.report.results_page): every explainer x metric with its 95% interval, each
explainer's paired difference from `random`, plain sentences; the table, the figures and the report's front
page (report/front.rst, which the Snakefile gives `snakemake --report` as the page it opens on)."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd

from fudbench.core.io import save_figure, write_csv, write_text
from fudbench.workflow.jobs import setup_job
from fudbench.report import results_page as rp
from fudbench.report.figures import plt

log = setup_job(snakemake)
p, out = snakemake.params, snakemake.output
plt.rcParams["savefig.dpi"] = p.dpi
per_image = pd.read_parquet(snakemake.input.per_image)
# the cells' intervals are the score tables' (tables.cell_interval): the same resamples and seed
summary, paired = rp.summarise(per_image, p.explainers, p.evaluators, p.models, p.ci, p.bootstrap, p.seed)
write_csv(out.csv, summary, index=False, float_format="%.6g")
write_csv(out.paired, paired, index=False, float_format="%.6g")
ref = rp.random_explainer(p.explainers)
shown = rp.shown_explainers(p.explainers)
overview = rp.overview_figure(summary, p.models, shown, ref)
save_figure(overview, out.overview)
vs_random = None
if out.get("vs_random"):
    vs_random = rp.vs_random_figure(summary, paired, p.models, shown, ref)
    save_figure(vs_random, out.vs_random)
front = rp.front_page(
    p.description,
    summary,
    p.models,
    shown,
    ref,
    rp.page_png(overview, out.overview),
    None if vs_random is None else rp.page_png(vs_random, out.vs_random),
    p.ci,
    p.bootstrap,
)
write_text(out.front, front)
for model in p.models:
    for line in rp.sentences(summary, model, ref, p.ci):
        log.info("%s", line)
