"""Grid of benchmark examples, two per class, titled with the class name, object masks outlined."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import json

import numpy as np

from fudbench.core.io import load_npz, save_figure
from fudbench.workflow.jobs import setup_job
from fudbench.report.figures import class_names, dataset_examples, plt

setup_job(snakemake)
inp = snakemake.input
plt.rcParams["savefig.dpi"] = snakemake.params.plots["dpi"]
test = load_npz(inp.test)
# the object masks: the images' own file where it has them (synthetic test split), else the eval set's
# (real data: the examples are its first images), where the data has masks at all
masks = None
source = test if "masks" in test else (load_npz(inp.images) if inp.get("images") else {})
if "masks" in source and bool(np.asarray(source.get("has_masks", True))):
    masks = source["masks"][: len(test["images"])]
names = class_names(json.load(open(inp.classes)), inp.get("labels") or None)
save_figure(dataset_examples(test["images"], test["labels"], names, masks=masks), snakemake.output)
