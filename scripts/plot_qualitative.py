"""Qualitative grid: one image, every model x explainer x evaluator's samples."""
import itertools

from fudbench.io import load_npz, save_figure
from fudbench.jobs import setup_job
from fudbench.report.figures import plt, qualitative_grid

setup_job(snakemake)
p = snakemake.params
plt.rcParams["savefig.dpi"] = p.plots["dpi"]
combos = itertools.product(p.models, p.explainers, p.evaluators)  # the order of the rule's expand()
galleries = [(f"{m}/{e.upper()}", load_npz(path)) for (m, e, _), path in zip(combos, snakemake.input)]
fig = qualitative_grid(galleries, {"fud": "FUD", "deletion_ratios": "INS/DEL"})
save_figure(fig, snakemake.output)
