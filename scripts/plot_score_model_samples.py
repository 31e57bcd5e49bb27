"""Grid of unconditional samples of the score model."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
from fudbench.core.io import load_npz, save_figure
from fudbench.workflow.jobs import setup_job
from fudbench.report.figures import image_grid, plt

setup_job(snakemake)
plt.rcParams["savefig.dpi"] = snakemake.params.plots["dpi"]
samples = load_npz(snakemake.input.samples)["samples"][:64]
save_figure(image_grid(samples, ncols=8, scale=1.0), snakemake.output)
