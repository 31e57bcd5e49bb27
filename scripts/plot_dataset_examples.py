"""Grid of benchmark examples, two per class."""
import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import json

from fudbench.io import load_npz, save_figure
from fudbench.jobs import setup_job
from fudbench.report.figures import dataset_examples, plt

setup_job(snakemake)
plt.rcParams["savefig.dpi"] = snakemake.params.plots["dpi"]
test = load_npz(snakemake.input.test)
fig = dataset_examples(test["images"], test["labels"], json.load(open(snakemake.input.classes)))
save_figure(fig, snakemake.output)
