"""Superpixels: segment images into regions, score each region by the mean of a
per-pixel map, the building blocks of region-based protocols (SRG / R-OMS,
FUD's `granularity: slic | patch`, and any new metric that removes regions).

- segment: one (H, W) label map per image, labels 0..K-1 consecutive: SLIC
  (scikit-image, `n_segments`, `compactness`) or squares of `square_side`.
- region_means: the mean per-pixel score of each region; a region with any
  non-finite pixel is least relevant (-inf), as masks.py ranks non-finite
  pixels last.

Region orders and keep-masks from these scores are masks.region_order's.
"""

from __future__ import annotations

import numpy as np

SEGMENTATIONS = ("slic", "squares")


def segment(
    images: np.ndarray, method: str = "slic", n_segments: int = 16, compactness: float = 10.0, square_side: int = 8
) -> list[np.ndarray]:
    """(N, C, H, W) images in [0, 1] -> one (H, W) int label map per image,
    labels 0..K-1 consecutive."""
    n, c, h, w = images.shape
    if method == "squares":
        if not 1 <= square_side <= min(h, w):
            raise ValueError(f"square side {square_side} must be in [1, {min(h, w)}] for {h}x{w} images")
        cols = -(-w // square_side)
        yy, xx = np.mgrid[0:h, 0:w]
        labels = (yy // square_side) * cols + xx // square_side
        return [labels.copy() for _ in range(n)]
    if method != "slic":
        raise ValueError(f"segmentation must be one of {SEGMENTATIONS}, got {method!r}")
    from skimage.segmentation import slic

    out = []
    for img in images:
        hwc = np.ascontiguousarray(np.moveaxis(img.astype(np.float64), 0, -1))
        seg = slic(
            hwc if c > 1 else hwc[..., 0],
            n_segments=n_segments,
            compactness=compactness,
            start_label=0,
            channel_axis=-1 if c > 1 else None,
        )
        out.append(np.unique(seg, return_inverse=True)[1].reshape(h, w))
    return out


def region_means(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Mean per-pixel score inside each superpixel; any non-finite pixel makes it -inf (least relevant)."""
    flat, lab = scores.ravel().astype(np.float64), labels.ravel()
    k = int(lab.max()) + 1
    bad = ~np.isfinite(flat)
    rel = np.bincount(lab, np.where(bad, 0.0, flat), k) / np.bincount(lab, minlength=k)
    rel[np.bincount(lab, bad.astype(float), k) > 0] = -np.inf
    return rel
