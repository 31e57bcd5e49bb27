"""The embedded synthetic benchmark.

One object per image on a textured background. Classes are (shape, brightness)
pairs: every shape comes as a dark and a light object on the same kind of
background, so a dark/light pair differs only in object brightness. Filling
removed pixels with zeros (black) therefore adds evidence for the dark classes,
which is the paper's black-cat example in a controlled form. Ground-truth
object masks are stored with the images, which gives explainers a known answer.

Deterministic: the same (config, seed, split) gives the same bytes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.ndimage import zoom

from fudbench.seeding import derive_seed

SHAPES = ("circle", "square", "triangle", "cross", "diamond", "ring")
_SUPERSAMPLE = 4  # anti-aliased edges: render at 4x and average


@dataclass(frozen=True)
class SyntheticSpec:
    image_size: int
    shapes: tuple[str, ...]
    dark: float
    light: float
    object_scale: tuple[float, float]

    @classmethod
    def from_config(cls, cfg: dict) -> "SyntheticSpec":
        return cls(
            image_size=int(cfg["image_size"]),
            shapes=tuple(cfg["shapes"]),
            dark=float(cfg["dark"]),
            light=float(cfg["light"]),
            object_scale=(float(cfg["object_scale"][0]), float(cfg["object_scale"][1])),
        )

    @property
    def class_names(self) -> list[str]:
        return [f"{tone}_{shape}" for shape in self.shapes for tone in ("dark", "light")]


def _inside(shape: str, u: np.ndarray, v: np.ndarray, r: float) -> np.ndarray:
    """Indicator of `shape` of radius r in local (rotated, centred) coordinates."""
    if shape == "circle":
        return u**2 + v**2 <= r**2
    if shape == "square":
        h = r * 0.8
        return (np.abs(u) <= h) & (np.abs(v) <= h)
    if shape == "diamond":
        return np.abs(u) + np.abs(v) <= r
    if shape == "cross":
        w = r / 3
        return ((np.abs(u) <= w) & (np.abs(v) <= r)) | ((np.abs(v) <= w) & (np.abs(u) <= r))
    if shape == "ring":
        d2 = u**2 + v**2
        return (d2 <= r**2) & (d2 >= (0.55 * r) ** 2)
    if shape == "triangle":
        # Equilateral triangle inscribed in the circle of radius r: three half-planes.
        ok = np.ones_like(u, dtype=bool)
        for k in range(3):
            a = np.pi / 2 + k * 2 * np.pi / 3 + np.pi  # outward normal of each side
            ok &= u * np.cos(a) + v * np.sin(a) <= r / 2
        return ok
    raise ValueError(f"unknown shape {shape!r}; choose from {', '.join(SHAPES)}")


def _background(rng: np.random.Generator, size: int) -> np.ndarray:
    """A coloured texture in [0.25, 0.75]: smooth blobs plus fine grain."""
    base = rng.uniform(0.38, 0.62, size=(3, 1, 1))
    coarse = rng.normal(0, 0.08, size=(3, 4, 4))
    smooth = np.stack([zoom(c, size / 4, order=1) for c in coarse])[:, :size, :size]
    stripes_f = rng.uniform(1.5, 4.0)
    stripes_a = rng.uniform(0.0, 0.05)
    theta = rng.uniform(0, np.pi)
    yy, xx = np.mgrid[0:size, 0:size] / size
    stripes = stripes_a * np.sin(2 * np.pi * stripes_f * (xx * np.cos(theta) + yy * np.sin(theta)))
    grain = rng.normal(0, 0.025, size=(3, size, size))
    return np.clip(base + smooth + stripes + grain, 0.25, 0.75)


def render_image(spec: SyntheticSpec, label: int, rng: np.random.Generator):
    """Render one image of class `label`; returns (image float32 3xHxW in [0,1], mask HxW bool)."""
    n = spec.image_size
    shape = spec.shapes[label // 2]
    tone = spec.dark if label % 2 == 0 else spec.light
    lo, hi = spec.object_scale
    radius = rng.uniform(lo, hi) * n / 2
    margin = radius * 0.9
    cy, cx = rng.uniform(margin, n - margin, size=2) if n - 2 * margin > 0 else (n / 2, n / 2)
    angle = rng.uniform(0, 2 * np.pi)

    s = _SUPERSAMPLE
    grid = (np.arange(n * s) + 0.5) / s
    yy, xx = np.meshgrid(grid, grid, indexing="ij")
    dy, dx = yy - cy, xx - cx
    u = dx * np.cos(angle) + dy * np.sin(angle)
    v = -dx * np.sin(angle) + dy * np.cos(angle)
    cover = _inside(shape, u, v, radius).reshape(n, s, n, s).mean(axis=(1, 3))

    colour = np.clip(tone + rng.normal(0, 0.03, size=(3, 1, 1)), 0, 1)
    obj = np.clip(colour + rng.normal(0, 0.02, size=(3, n, n)), 0, 1)
    img = cover * obj + (1 - cover) * _background(rng, n)
    return img.astype(np.float32), cover >= 0.5


def generate_split(spec: SyntheticSpec, n: int, seed: int, split: str):
    """n images with balanced labels. Returns uint8 images (N,3,H,W), labels (N,), masks (N,H,W)."""
    rng = np.random.default_rng(derive_seed(seed, "synthetic", split))
    n_classes = 2 * len(spec.shapes)
    labels = rng.permutation(np.arange(n) % n_classes)
    images = np.empty((n, 3, spec.image_size, spec.image_size), dtype=np.uint8)
    masks = np.empty((n, spec.image_size, spec.image_size), dtype=np.uint8)
    for i, y in enumerate(labels):
        img, mask = render_image(spec, int(y), rng)
        images[i] = np.round(img * 255).astype(np.uint8)
        masks[i] = mask
    return images, labels.astype(np.int64), masks


def make_benchmark(cfg: dict, n_eval: int, seed: int) -> dict:
    """All splits of the benchmark plus the evaluated subset (first n_eval test images)."""
    spec = SyntheticSpec.from_config(cfg)
    splits = {}
    for split in ("train", "val", "test"):
        images, labels, masks = generate_split(spec, cfg[f"n_{split}"], seed, split)
        splits[split] = {"images": images, "labels": labels, "masks": masks}
    test = splits["test"]
    splits["eval"] = {k: v[:n_eval] for k, v in test.items()}
    return {"splits": splits, "class_names": spec.class_names}
