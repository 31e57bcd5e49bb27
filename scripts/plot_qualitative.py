"""Fig. 4: every gallery image's intermediate samples under each evaluator, for one
model x explainer; and the all-pairs grid of one image (qualitative_samples). Images are
titled with their class (the labels file's `class` column for your own folder), object
masks outlined where the data has them."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import json

import numpy as np

from fudbench.core.io import load_npz, save_figure
from fudbench.workflow.jobs import setup_job
from fudbench.report.figures import class_names, fig4_qualitative, plt, qualitative_grid
from fudbench.report.gallery import check_gallery, gallery_key

setup_job(snakemake)
p, inp = snakemake.params, snakemake.input
plots = p.plots
plt.rcParams["savefig.dpi"] = plots["dpi"]
gallery = load_npz(inp.gallery)
check_gallery(gallery, inp.gallery)  # keys of another layout: remade, not misread
images = load_npz(inp.images)
names = class_names(json.load(open(inp.classes)), inp.get("labels") or None)
ids = np.asarray(gallery["ids"], dtype=int)
titles = [names.get(int(label), str(label)) for label in np.asarray(images["labels"])[ids]]
masks = bool(np.asarray(images.get("has_masks", True))) and "masks" in gallery and bool(np.any(gallery["masks"]))
# the configured main evaluators' samples, in the paper's column order where it has one (INFID, INS/DEL, Sen-N,
# FUD), then the others (params.curves: fudbench.report.captions.qualitative_curves)
paper = ("infidelity", "deletion_ratios", "sensitivity_n", "fud")
labels = {c: p.curves[c] for c in [*[c for c in paper if c in p.curves], *[c for c in p.curves if c not in paper]]}
shown = [e for e in plots["qualitative_explainers"] if gallery_key(p.models[0], e, "attributions") in gallery]
save_figure(
    fig4_qualitative(gallery, labels, p.models[0], (shown or plots["qualitative_explainers"])[0], titles, masks),
    snakemake.output.fig4,
)
save_figure(
    qualitative_grid(gallery, labels, explainers=plots["qualitative_explainers"], image_titles=titles, masks=masks),
    snakemake.output.grid,
)
