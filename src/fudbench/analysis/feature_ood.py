"""Feature-based OOD detectors beside Energy: Mahalanobis (Lee et al. 2018) and
k-NN distance (Sun et al. 2022) on a classifier's penultimate features.

The features are the input of the classifier's last nn.Linear, taken in the
forward pass that gives the logits (fudbench.models.features.FeatureTap).
A REFERENCE is fitted once per classifier on a seeded subset of training
images (scripts/ood_reference.py):

- Mahalanobis: class means mu_k of the reference features (true labels) and
  one shared (tied) covariance S = 1/n sum_i (f_i - mu_{y_i})(f_i - mu_{y_i})^T.
  A ridge keeps it invertible: precision P = (S + lambda I)^-1 with
  lambda = ridge * trace(S) / D (default ridge 1e-3, i.e. 0.1% of the mean
  feature variance; it matters where the reference has fewer images than
  feature dimensions, e.g. ResNet-50's 2048). Score of a feature f:
  min_k (f - mu_k)^T P (f - mu_k), the squared distance to the closest class.
- k-NN: the reference features L2-normalised; score = Euclidean distance of the
  normalised f to its k-th nearest reference feature (k = 10 by default: Sun
  et al. use k = 10 for a 1% sample of ImageNet's training set).

For both, LARGER = more OOD, the opposite sign of Energy's "in-distribution"
score -E (fudbench.models.energy): the OOD tables use -score like they use
energy, i.e. they rank by "score" where larger means more OOD for all three.
Scores are computed in float64 on the CPU, one row at a time, so a sample's
score does not depend on the batch it came in.

A reference may be UNAVAILABLE (no training images for the data source, or a
classifier with no nn.Linear): it is then stored with `available = False`
and a reason, and every score is NaN (the workflow keeps running; the tables
leave that detector's cells empty).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional

import numpy as np

log = logging.getLogger(__name__)

DETECTORS = ("mahalanobis", "knn")  # record columns, in order (next to `energy`)
REFERENCE_IMAGES = 2000  # reference images per classifier (seeded subset of the training split)
RIDGE = 1e-3  # covariance ridge, relative to the mean feature variance
KNN_K = 10  # k of the k-NN distance


def fit_reference(features, labels, ridge: float = RIDGE, knn_k: int = KNN_K) -> dict:
    """The reference arrays (what save_reference writes) of features (n, D) with
    true labels (n,): class means, tied precision, normalised bank for k-NN."""
    f = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels).astype(np.int64)
    if f.ndim != 2 or len(f) != len(y) or len(f) < 2:
        raise ValueError(f"need (n >= 2, D) features and n labels, got {f.shape} and {y.shape}")
    if not np.isfinite(f).all():
        raise ValueError("reference features are not all finite")
    classes = np.unique(y)
    means = np.stack([f[y == c].mean(axis=0) for c in classes])
    centred = f - means[np.searchsorted(classes, y)]
    cov = centred.T @ centred / len(f)
    lam = ridge * float(np.trace(cov)) / cov.shape[0]
    if not lam > 0:  # all features constant within their class: any positive ridge
        lam = ridge
    precision = np.linalg.inv(cov + lam * np.eye(cov.shape[0]))
    precision = (precision + precision.T) / 2
    bank = f / np.maximum(np.linalg.norm(f, axis=1, keepdims=True), 1e-12)
    return {
        "available": np.array(True),
        "reason": np.array(""),
        "classes": classes,
        "means": means,
        "precision": precision,
        "ridge": np.float64(ridge),
        "ridge_absolute": np.float64(lam),
        "bank": bank.astype(np.float32),
        "knn_k": np.int64(min(knn_k, len(f))),
        "n_images": np.int64(len(f)),
        "dim": np.int64(f.shape[1]),
    }


def unavailable_reference(reason: str) -> dict:
    """A reference that scores NaN, with the reason (logged where it is used)."""
    return {"available": np.array(False), "reason": np.array(str(reason))}


def save_reference(path, reference: dict, **extra) -> None:
    """Atomic npz write (fudbench.core.io.write_npz); extra: more arrays (e.g. the layer name)."""
    from fudbench.core.io import write_npz

    write_npz(path, **reference, **{k: np.asarray(v) for k, v in extra.items()})


@dataclass
class FeatureDetector:
    """Scores (N, D) features with a fitted reference; scores NaN when unavailable."""

    means: Optional[np.ndarray] = None
    precision: Optional[np.ndarray] = None
    bank: Optional[np.ndarray] = None
    knn_k: int = KNN_K
    reason: str = ""

    def __post_init__(self):
        if self.means is not None:
            self._pm = self.precision @ self.means.T  # (D, K)
            self._mpm = np.einsum("kd,dk->k", self.means, self._pm)  # (K,)

    @property
    def available(self) -> bool:
        return self.means is not None

    @classmethod
    def from_arrays(cls, ref: dict) -> "FeatureDetector":
        if not bool(ref.get("available", True)):
            return cls(reason=str(ref.get("reason", "")))
        return cls(
            np.asarray(ref["means"], np.float64),
            np.asarray(ref["precision"], np.float64),
            np.asarray(ref["bank"], np.float64),
            int(ref["knn_k"]),
        )

    @classmethod
    def load(cls, path) -> "FeatureDetector":
        from fudbench.core.io import load_npz

        det = cls.from_arrays(load_npz(path, made_by="ood_reference"))
        if not det.available:
            log.warning(
                "OOD reference %s is unavailable (%s): the mahalanobis and knn columns are NaN", path, det.reason
            )
        return det

    def _per_row(self, features, score_row) -> np.ndarray:
        """score_row applied to each row (float64), NaN when unavailable. Row by
        row: a sample's score does not depend on the batch it came in."""
        f = np.asarray(features, np.float64)
        if not self.available:
            return np.full(len(f), np.nan)
        return np.array([score_row(row) for row in f], dtype=np.float64).reshape(len(f))

    def mahalanobis(self, features) -> np.ndarray:
        """min over classes of the squared Mahalanobis distance, per row."""

        def score_row(row):
            d = row @ self.precision @ row - 2 * (row @ self._pm) + self._mpm
            return max(float(d.min()), 0.0)

        return self._per_row(features, score_row)

    def knn(self, features) -> np.ndarray:
        """Distance of the L2-normalised row to its k-th nearest normalised reference feature."""
        k = min(self.knn_k, len(self.bank)) if self.available else 0

        def score_row(row):
            z = row / max(np.linalg.norm(row), 1e-12)
            kth = np.partition(-(self.bank @ z), k - 1)[k - 1]  # -(k-th largest cosine similarity)
            return float(np.sqrt(max(2.0 + 2.0 * kth, 0.0)))

        return self._per_row(features, score_row)

    def score(self, features) -> dict:
        """{detector column: (N,) scores}, larger = more OOD."""
        return {"mahalanobis": self.mahalanobis(features), "knn": self.knn(features)}


def nan_scores(n: int) -> dict:
    return {name: np.full(n, np.nan) for name in DETECTORS}


def with_detector_columns(records):
    """The records with every DETECTORS column, NaN where the run had no
    reference, placed after `energy` (in place; returns the frame)."""
    cols = list(records.columns)
    at = cols.index("energy") + 1 if "energy" in cols else len(cols)
    for name in DETECTORS:
        if name not in records.columns:
            records.insert(at, name, np.nan)
        at = list(records.columns).index(name) + 1
    return records


def reference_subset(n_available: int, n: int, seed: int) -> np.ndarray:
    """Sorted indices of a seeded subset of min(n, n_available) images."""
    rng = np.random.default_rng(_seed(seed))
    return np.sort(rng.choice(n_available, size=min(n, n_available), replace=False))


# ------------------------------------------------------- reference images


def reference_images(spec: dict, seed: int, n: int = REFERENCE_IMAGES):
    """(uint8 images (m, C, H, W), labels (m,), description) of the reference set of
    a data source, m <= n, or (None, None, reason) where the source has none.

    spec: {"source": "synthetic", "train": path of the training split npz} | {"source":
    "imagenet", "imagenet": data.imagenet (paths resolved), "manifest": the eval
    set's manifest} | {"source": "folder", "folder": data.folder (resolved),
    "n_eval": ...}. Synthetic: a seeded subset of the training split. ImageNet:
    seeded validation images NOT in the evaluated sample (the paper profile has no
    training images; unreadable files are skipped and logged). Folder: the labels
    file's rows after the first n_eval (the evaluated ones), if any."""
    from collections import Counter
    from pathlib import Path

    source = spec["source"]
    if source == "synthetic":
        from fudbench.core.io import load_npz

        train = load_npz(spec["train"])
        pick = reference_subset(len(train["labels"]), n, seed)
        return train["images"][pick], train["labels"][pick].astype(np.int64), f"{len(pick)} training images"
    if source == "imagenet":
        import pandas as pd

        from fudbench.data.imagenet import CorruptImageError, index_imagenet, read_image

        cfg = spec["imagenet"]
        index = index_imagenet(cfg.get("root"), cfg.get("layout", "auto"), cfg.get("labels"), cfg.get("synsets"))
        evaluated = set(pd.read_csv(spec["manifest"])["file"].astype(str))
        entries = [e for e in index.entries if str(e.path.relative_to(index.root)) not in evaluated]
        order = np.random.default_rng(_seed(seed)).permutation(len(entries))
        files = [(entries[int(j)].path, entries[int(j)].label) for j in order]
        resize, crop = cfg["resize"], cfg["crop"]
        what = "ImageNet validation images outside the evaluated sample"
    elif source == "folder":
        from fudbench.data.folder import read_labels
        from fudbench.data.imagenet import CorruptImageError, read_image

        cfg = spec["folder"]
        rest = read_labels(cfg["root"], cfg["labels"])[spec["n_eval"] :]
        pick = reference_subset(len(rest), n, seed) if rest else []
        files = [(Path(cfg["root"]) / rest[int(j)][0], rest[int(j)][1]) for j in pick]
        resize, crop = cfg["resize"], cfg["crop"]
        what = "listed images after the evaluated ones"
    else:
        raise ValueError(f"unknown data source {source!r}")
    images, labels, modes, skipped = [], [], Counter(), 0
    for path, label in files:
        if len(images) == n:
            break
        try:
            image, _ = read_image(path, resize, crop, modes, exif=source == "folder")  # as make_dataset
        except CorruptImageError as exc:
            log.warning("reference image skipped: %s", exc)
            skipped += 1
            continue
        images.append(image)
        labels.append(label)
    if len(images) < 2:
        return None, None, f"data.source {source}: {len(images)} {what} (at least 2 needed)"
    return np.stack(images), np.asarray(labels, np.int64), f"{len(images)} {what} ({skipped} unreadable skipped)"


def _seed(seed: int) -> int:
    from fudbench.core.seeding import derive_seed

    return derive_seed(seed, "ood_reference")


# ------------------------------------------------------- sanity corruption


SANITY_FRACTION = 0.1
SANITY_LABEL = "Sanity: 10% pixels zeroed"


def zero_pixels(images: np.ndarray, ids, seed: int, fraction: float = SANITY_FRACTION):
    """Copies of images (N, C, H, W) with round(fraction * H * W) pixels per image
    set to zero in every channel, chosen at random per image id
    (derive_seed(seed, "ood_sanity", image id)). Returns (images, masks (N, H, W) bool
    of the zeroed pixels)."""
    from fudbench.core.seeding import derive_seed

    x = np.array(images, copy=True)
    n, _, h, w = x.shape
    k = int(round(fraction * h * w))
    masks = np.zeros((n, h * w), bool)
    for i, image_id in enumerate(ids):
        rng = np.random.default_rng(derive_seed(seed, "ood_sanity", int(image_id)))
        masks[i, rng.choice(h * w, size=k, replace=False)] = True
    masks = masks.reshape(n, h, w)
    x[np.broadcast_to(masks[:, None], x.shape)] = 0
    return x, masks
