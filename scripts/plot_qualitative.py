"""Qualitative grid: one image, every model x explainer x evaluator's samples."""
import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
from fudbench.io import load_npz, save_figure
from fudbench.jobs import setup_job
from fudbench.report.figures import plt, qualitative_grid

setup_job(snakemake)
plt.rcParams["savefig.dpi"] = snakemake.params.plots["dpi"]
fig = qualitative_grid(load_npz(snakemake.input[0]), {"fud": "FUD", "deletion_ratios": "INS/DEL"})
save_figure(fig, snakemake.output)
