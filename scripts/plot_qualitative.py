"""Qualitative grid: one image, every model x explainer x evaluator's samples."""
import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
from fudbench.analysis.curves import INTERMEDIATE_CURVES
from fudbench.io import load_npz, save_figure
from fudbench.jobs import setup_job
from fudbench.report.figures import plt, qualitative_grid

setup_job(snakemake)
plots = snakemake.params.plots
plt.rcParams["savefig.dpi"] = plots["dpi"]
fig = qualitative_grid(load_npz(snakemake.input[0]), INTERMEDIATE_CURVES, explainers=plots["qualitative_explainers"])
save_figure(fig, snakemake.output)
