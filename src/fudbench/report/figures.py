"""Figures. Each function returns a matplotlib Figure; callers save it."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from fudbench.analysis.curves import TAU_CURVES  # noqa: E402
from fudbench.report.captions import EXAMPLES_PER_CLASS  # noqa: E402
from fudbench.report.gallery import gallery_key, gallery_pairs  # noqa: E402


def _chw_to_hwc(img) -> np.ndarray:
    a = np.asarray(img, dtype=np.float32)
    if a.max() > 1.5:  # uint8 storage
        a = a / 255.0
    return np.clip(a.transpose(1, 2, 0), 0, 1)


def outline(ax, mask) -> None:
    """The object mask's outline over an image (nothing for an empty or a full mask)."""
    m = np.asarray(mask, dtype=float)
    if m.ndim == 2 and 0 < m.max() and m.min() < m.max():
        ax.contour(m > 0.5, levels=[0.5], colors="yellow", linewidths=1.0)
    elif m.ndim == 2 and m.min() > 0:  # the mask is the whole image: a frame
        h, w = m.shape
        ax.plot([-0.5, w - 0.5, w - 0.5, -0.5, -0.5], [-0.5, -0.5, h - 0.5, h - 0.5, -0.5], color="yellow", lw=2.0)


def image_grid(images, titles=None, ncols: int = 8, scale: float = 1.3, masks=None):
    """Images in a grid, with titles and (where `masks` is given) each object mask outlined."""
    n = len(images)
    ncols = max(1, min(ncols, n))
    nrows = max(1, int(np.ceil(n / ncols)))
    fig, axes = plt.subplots(nrows, ncols, figsize=(ncols * scale, nrows * scale * 1.15), squeeze=False)
    for k, ax in enumerate(axes.flat):
        ax.axis("off")
        if k < n:
            ax.imshow(_chw_to_hwc(images[k]), interpolation="nearest")
            if masks is not None:
                outline(ax, masks[k])
            if titles is not None:
                ax.set_title(titles[k], fontsize=7)
    fig.tight_layout()
    return fig


def class_names(classes: list, labels_file=None) -> dict:
    """{class index: its name in the figures}: the labels file's `class` column where it has one (your own
    folder: `file,label,class`; the index follows in brackets), else the class list (data/classes.json)."""
    names = {i: str(c) for i, c in enumerate(classes)}
    if labels_file:
        import pandas as pd

        table = pd.read_csv(labels_file)
        if "class" in table.columns:
            for label, name in zip(table["label"], table["class"]):
                if isinstance(name, str) and name.strip():
                    names[int(label)] = f"{name.strip()} ({int(label)})"
    return names


def dataset_examples(images, labels, class_names, per_class: int = EXAMPLES_PER_CLASS, masks=None):
    """Up to `per_class` images of each class present, titled with the class name (class_names: a list or
    {index: name}), object masks outlined where given."""
    names = class_names if isinstance(class_names, dict) else dict(enumerate(class_names))
    labels = np.asarray(labels)
    picks = [i for c in sorted(set(labels.tolist())) for i in np.flatnonzero(labels == c)[:per_class]]
    return image_grid(
        images[picks],
        [names.get(int(labels[i]), str(labels[i])) for i in picks],
        ncols=2 * per_class * 2,
        masks=None if masks is None else np.asarray(masks)[picks],
    )


def confidence_vs_ratio(records: pd.DataFrame, models, explainers):
    """Mean p(y) against the kept fraction rho, per model; one line per evaluator x explainer."""
    d = records[records["curve"].isin(TAU_CURVES)]
    mean = d.groupby(["model", "curve", "explainer", "kept"])["confidence"].agg(["mean", "sem"]).reset_index()
    fig, axes = plt.subplots(1, len(models), figsize=(4.2 * len(models), 3.4), squeeze=False, sharey=True)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    styles = {"fud": "-", "deletion_ratios": "--"}
    for ax, model in zip(axes[0], models):
        for k, ex in enumerate(explainers):
            for curve, label in TAU_CURVES.items():
                g = mean[(mean.model == model) & (mean.explainer == ex) & (mean.curve == curve)].sort_values("kept")
                if len(g):
                    ax.errorbar(
                        g["kept"],
                        g["mean"],
                        yerr=g["sem"],
                        ls=styles.get(curve, ":"),
                        color=colours[k % len(colours)],
                        marker="o",
                        ms=3,
                        capsize=2,
                        label=f"{label} / {ex}",
                    )
        ax.set_title(model)
        ax.set_xlabel(r"kept fraction $\rho$")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("mean confidence p(y)")
    axes[0][-1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig


def image_removed(removed: np.ndarray, image: int) -> np.ndarray:
    """An image's removed fraction per step, from a gallery entry that holds
    them per step (steps,) or per image and step (N, steps)."""
    return removed if removed.ndim == 1 else removed[image]


def qualitative_grid(
    gallery: dict, curve_labels: dict[str, str], image: int = 0, explainers=None, image_titles=None, masks: bool = False
):
    """Rows of (original, attribution, samples from least to most removed) for one
    image, one row per model x explainer x curve of the gallery (fudbench.report.gallery.build_gallery);
    `explainers` restricts the rows (default: all). image_titles: a title per gallery image (its class);
    masks: outline the gallery's object masks on the originals."""
    rows = []
    pairs = gallery_pairs(gallery)
    if explainers is not None:
        pairs = [p for p in pairs if p[1] in explainers]
    for pair in pairs:
        attr = np.abs(gallery[gallery_key(*pair, "attributions")][image]).sum(0)
        attr = attr / max(float(attr.max()), 1e-12)
        for curve, label in curve_labels.items():
            if gallery_key(*pair, "samples", curve) in gallery:
                removed = image_removed(gallery[gallery_key(*pair, "removed", curve)], image)
                order = np.argsort(removed)[: int(np.isfinite(removed).sum())]
                samples = gallery[gallery_key(*pair, "samples", curve)][image][order]
                rows.append((f"{'/'.join(pair)} {label}", attr, samples))
    n_cols = 2 + max(r[2].shape[0] for r in rows)
    fig, axes = plt.subplots(len(rows), n_cols, figsize=(1.2 * n_cols, 1.3 * len(rows)), squeeze=False)
    for ax_row, (title, attr, samples) in zip(axes, rows):
        for ax in ax_row:
            ax.axis("off")
        ax_row[0].imshow(_chw_to_hwc(gallery["images"][image]), interpolation="nearest")
        if masks:
            outline(ax_row[0], gallery["masks"][image])
        ax_row[0].set_title(title, fontsize=6, loc="left")
        ax_row[1].imshow(attr, cmap="inferno", interpolation="nearest")
        for j, s in enumerate(samples):
            ax_row[j + 2].imshow(_chw_to_hwc(s), interpolation="nearest")
    if image_titles is not None:
        fig.suptitle(f"image {int(gallery['ids'][image])}: {image_titles[image]}", fontsize=8)
    fig.tight_layout()
    return fig


def fig4_qualitative(
    gallery: dict, curve_labels: dict[str, str], model: str, explainer: str, image_titles=None, masks: bool = False
):
    """FUD's Fig. 4, widened to every evaluator: for each gallery image, one row
    per evaluator with the original, the explainer's heat-map and the
    intermediate samples from the least to the most removed pixels."""
    pair = (model, explainer)
    if gallery_key(*pair, "attributions") not in gallery:
        raise KeyError(f"the gallery has no attributions of {model}/{explainer}")
    curves = [(c, label) for c, label in curve_labels.items() if gallery_key(*pair, "samples", c) in gallery]
    n_images = len(gallery["ids"])
    n_cols = 2 + max(gallery[gallery_key(*pair, "samples", c)].shape[1] for c, _ in curves)
    n_rows = n_images * len(curves)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(1.1 * n_cols, 1.15 * n_rows), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for i in range(n_images):
        attr = np.abs(gallery[gallery_key(*pair, "attributions")][i]).sum(0)
        attr = attr / max(float(attr.max()), 1e-12)
        for k, (curve, label) in enumerate(curves):
            row = axes[i * len(curves) + k]
            removed = image_removed(gallery[gallery_key(*pair, "removed", curve)], i)
            order = np.argsort(removed)[: int(np.isfinite(removed).sum())]  # NaN: steps this image lacks
            row[0].imshow(_chw_to_hwc(gallery["images"][i]), interpolation="nearest")
            if masks:
                outline(row[0], gallery["masks"][i])
            name = f", {image_titles[i]}" if image_titles is not None else ""
            row[0].set_title(f"image {int(gallery['ids'][i])}{name}: {label}", fontsize=6, loc="left")
            row[1].imshow(attr, cmap="inferno", interpolation="nearest")
            for j, s in enumerate(gallery[gallery_key(*pair, "samples", curve)][i][order]):
                row[j + 2].imshow(_chw_to_hwc(s), interpolation="nearest")
                if i == 0:  # each evaluator's own removal fractions, on the first image's rows
                    row[j + 2].set_title(f"{removed[order][j]:.0%} removed", fontsize=5)
    fig.suptitle(f"{model} / {explainer}: original, heat-map, intermediate samples", fontsize=8)
    fig.tight_layout()
    return fig
