"""The embedded synthetic benchmark.

One object per image on a textured background. Classes are (shape, brightness)
pairs: every shape comes as a dark and a light object on the same kind of
background, so a dark/light pair differs only in object brightness. Filling
removed pixels with zeros (black) therefore adds evidence for the dark classes,
which is the paper's black-cat example in a controlled form. Ground-truth
object masks are stored with the images, which gives explainers a known answer.

Planted cue (`cue` in the config; absent = the benchmark above, unchanged):
the label is the colour of a small saturated square (the cue) placed at a
uniformly random position clear of the object, and the object (shape, tone)
is drawn independently of the label, balanced over the (cue, object) cells.
The stored mask is then the cue's square, so whatever reads masks (the oracle
and background explainers, the oracle family) follows the cue; the object
class and mask are stored beside it (`object_labels`, `object_masks`).
`generate_cue_split(..., counterfactuals=True)` also renders each image
without its cue, without its object and with its cue in another class's
colour, from the same draws: the intervention check of the cue ground truth
(fudbench.meta.cue, docs/meta_evaluation.md, "Planted cue").

Deterministic: the same (config, seed, split) gives the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.ndimage import zoom

from fudbench.core.seeding import derive_seed

SHAPES = ("circle", "square", "triangle", "cross", "diamond", "ring")
_SUPERSAMPLE = 4  # anti-aliased edges: render at 4x and average


# Cue colours must differ by this much in some channel: the class must be decidable at a glance.
CUE_MIN_COLOUR_DISTANCE = 0.3
_CUE_ATTEMPTS = 100  # objects redrawn until the cue fits beside one


@dataclass(frozen=True)
class CueSpec:
    size: int  # side of the square, pixels
    colours: tuple[tuple[str, tuple[float, float, float]], ...]  # (class name, RGB in [0, 1]) per class
    margin: int = 1  # clear pixels between the cue and any pixel the object touches

    @classmethod
    def from_config(cls, cfg: dict) -> "CueSpec":
        return cls(
            size=int(cfg["size"]),
            colours=tuple((str(k), tuple(float(c) for c in v)) for k, v in cfg["colours"].items()),
            margin=int(cfg.get("margin", 1)),
        )


@dataclass(frozen=True)
class SyntheticSpec:
    image_size: int
    shapes: tuple[str, ...]
    dark: float
    light: float
    object_scale: tuple[float, float]
    cue: CueSpec | None = None

    @classmethod
    def from_config(cls, cfg: dict) -> "SyntheticSpec":
        return cls(
            image_size=int(cfg["image_size"]),
            shapes=tuple(cfg["shapes"]),
            dark=float(cfg["dark"]),
            light=float(cfg["light"]),
            object_scale=(float(cfg["object_scale"][0]), float(cfg["object_scale"][1])),
            cue=CueSpec.from_config(cfg["cue"]) if cfg.get("cue") else None,
        )

    @property
    def object_class_names(self) -> list[str]:
        return [f"{tone}_{shape}" for shape in self.shapes for tone in ("dark", "light")]

    @property
    def class_names(self) -> list[str]:
        """The labels: the object classes, or with a cue the cue's colours."""
        if self.cue is not None:
            return [f"cue_{name}" for name, _ in self.cue.colours]
        return self.object_class_names


def cue_problems(synthetic: dict) -> list[str]:
    """What the schema cannot say about data.synthetic.cue; each message names the key."""
    cue = synthetic.get("cue")
    if not cue:
        return []
    key, n = "data.synthetic.cue", synthetic["image_size"]
    problems = []
    size, margin = cue["size"], cue.get("margin", 1)
    if 2 * (size + margin) > n:
        problems.append(
            f"config key '{key}.size': a cue of {size} px with margin {margin} leaves no room for the "
            f"object in a {n} px image; need 2 * (size + margin) <= data.synthetic.image_size"
        )
    colours = list(cue["colours"].items())
    for i, (a, ca) in enumerate(colours):
        for b, cb in colours[i + 1 :]:
            if max(abs(x - y) for x, y in zip(ca, cb)) < CUE_MIN_COLOUR_DISTANCE:
                problems.append(
                    f"config key '{key}.colours': {a} {list(ca)} and {b} {list(cb)} differ by less "
                    f"than {CUE_MIN_COLOUR_DISTANCE} in every channel; the cue's class must be "
                    f"decidable from its colour"
                )
    return problems


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


def _object_and_background(spec: SyntheticSpec, label: int, rng: np.random.Generator):
    """The parts of one image of object class `label`: coverage HxW in [0, 1] (anti-aliased),
    the object's colour 3xHxW and the background 3xHxW, drawn in this order from rng."""
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
    return cover, obj, _background(rng, n)


def render_image(spec: SyntheticSpec, label: int, rng: np.random.Generator):
    """Render one image of class `label`; returns (image float32 3xHxW in [0,1], mask HxW bool)."""
    cover, obj, background = _object_and_background(spec, label, rng)
    img = cover * obj + (1 - cover) * background
    return img.astype(np.float32), cover >= 0.5


def _cue_places(cover: np.ndarray, size: int, margin: int) -> np.ndarray:
    """(K, 2) top-left corners (y, x) where a size x size square keeps `margin` clear
    pixels from every pixel the object touches (cover > 0, anti-aliased edges too)."""
    n = cover.shape[0]
    touched = np.pad(cover > 0, margin)  # the square grown by the margin may reach past the border
    k = size + 2 * margin
    c = np.pad(touched.cumsum(0).cumsum(1), ((1, 0), (1, 0)))  # summed-area table
    inside = c[k:, k:] - c[:-k, k:] - c[k:, :-k] + c[:-k, :-k]  # touched pixels per grown window
    free = inside[: n - size + 1, : n - size + 1] == 0
    return np.argwhere(free)


def render_cue_image(
    spec: SyntheticSpec, label: int, object_label: int, rng: np.random.Generator, swap_label: int | None = None
) -> dict:
    """One image of cue class `label` with an object of class `object_label`. Returns
    float32 `image`, bool `mask` (the cue), bool `object_mask` and, with swap_label, the
    counterfactuals from the same draws: `no_cue`, `no_object`, `swapped` (the cue in
    swap_label's colour)."""
    cue, n = spec.cue, spec.image_size
    for _ in range(_CUE_ATTEMPTS):
        cover, obj, background = _object_and_background(spec, object_label, rng)
        places = _cue_places(cover, cue.size, cue.margin)
        if len(places):
            break
    else:
        raise ValueError(
            f"config key 'data.synthetic.cue.size': no place for a {cue.size} px cue (margin "
            f"{cue.margin}) beside the object in {_CUE_ATTEMPTS} draws; lower the cue's size or "
            f"data.synthetic.object_scale"
        )
    y, x = places[rng.integers(len(places))]
    noise = rng.normal(0, 0.02, size=(3, cue.size, cue.size))  # the same grain as the object's

    def paste(img, cls):
        img = img.copy()
        img[:, y : y + cue.size, x : x + cue.size] = np.clip(np.reshape(cue.colours[cls][1], (3, 1, 1)) + noise, 0, 1)
        return img

    plain = cover * obj + (1 - cover) * background
    mask = np.zeros((n, n), dtype=bool)
    mask[y : y + cue.size, x : x + cue.size] = True
    out = {"image": paste(plain, label), "mask": mask, "object_mask": cover >= 0.5}
    if swap_label is not None:
        out.update(no_cue=plain, no_object=paste(background, label), swapped=paste(plain, swap_label))
    return {k: v.astype(np.float32) if v.dtype.kind == "f" else v for k, v in out.items()}


def _to_uint8(img: np.ndarray) -> np.ndarray:
    return np.round(img * 255).astype(np.uint8)


def generate_cue_split(spec: SyntheticSpec, n: int, seed: int, split: str, counterfactuals: bool = False) -> dict:
    """n images of the planted-cue benchmark. Labels (the cue's colour) and object classes
    are crossed: each (label, object class) cell gets n / (K * objects) images (+-1), so the
    object says (next to) nothing about the label even within the sample. Returns uint8
    `images`, `labels`, `masks` (the cue), `object_labels`, `object_masks` and, with
    counterfactuals, uint8 `no_cue`, `no_object`, `swapped` and `swapped_labels`
    (label + 1 + i mod (K - 1), mod K: every other class in turn, no extra draws)."""
    if spec.cue is None:
        raise ValueError("generate_cue_split needs a spec with a cue (data.synthetic.cue)")
    rng = np.random.default_rng(derive_seed(seed, "synthetic", split, "cue"))
    k, n_objects = len(spec.cue.colours), 2 * len(spec.shapes)
    cells = rng.permutation(np.arange(n) % (k * n_objects))
    labels, object_labels = cells % k, cells // k
    swapped_labels = (labels + 1 + np.arange(n) % (k - 1)) % k
    size = spec.image_size
    names = ["images", *(("no_cue", "no_object", "swapped") if counterfactuals else ())]
    out = {name: np.empty((n, 3, size, size), dtype=np.uint8) for name in names}
    out["masks"] = np.empty((n, size, size), dtype=np.uint8)
    out["object_masks"] = np.empty((n, size, size), dtype=np.uint8)
    for i in range(n):
        r = render_cue_image(
            spec, int(labels[i]), int(object_labels[i]), rng, int(swapped_labels[i]) if counterfactuals else None
        )
        out["images"][i] = _to_uint8(r["image"])
        out["masks"][i], out["object_masks"][i] = r["mask"], r["object_mask"]
        for name in names[1:]:
            out[name][i] = _to_uint8(r[name])
    out["labels"], out["object_labels"] = labels.astype(np.int64), object_labels.astype(np.int64)
    if counterfactuals:
        out["swapped_labels"] = swapped_labels.astype(np.int64)
    return out


CUE_REMOVAL_ORDERS = ("random", "centre_first", "border_first")


def cue_removal_ranks(masks: np.ndarray, seed: int, split: str, order: str = "random") -> np.ndarray:
    """(N, H, W) int: the rank at which each cue pixel is removed in the dose-response
    check (0 first), -1 outside the cue. `random`: a seeded permutation per image;
    `centre_first` / `border_first`: by distance to the cue's centre, ascending /
    descending, ties broken by that same permutation. Dose q removes the pixels of
    rank < round(q |cue|), so the removed sets are nested across doses."""
    if order not in CUE_REMOVAL_ORDERS:
        raise ValueError(f"cue removal order {order!r}; choose from {', '.join(CUE_REMOVAL_ORDERS)}")
    m = np.asarray(masks).astype(bool)
    rng = np.random.default_rng(derive_seed(seed, "synthetic", split, "cue_dose"))
    ranks = np.full(m.shape, -1, dtype=np.int64)
    for i in range(len(m)):
        ys, xs = np.nonzero(m[i])
        tiebreak = rng.permutation(len(ys))  # drawn for every order: the orders share it
        if order == "random":
            key = np.lexsort((tiebreak,))
        else:
            dist = np.hypot(ys - ys.mean(), xs - xs.mean()).round(9)
            key = np.lexsort((tiebreak, dist if order == "centre_first" else -dist))
        ranks[i, ys[key], xs[key]] = np.arange(len(ys))
    return ranks


def n_removed(dose: float, k: int) -> int:
    """Cue pixels a dose in [0, 1] removes out of k (half up: 0.25 of 16 = 4)."""
    if not 0 <= dose <= 1:
        raise ValueError(f"a cue dose is a fraction in [0, 1], got {dose}")
    return int(np.floor(dose * k + 0.5))


def cue_dose_images(images: np.ndarray, no_cue: np.ndarray, ranks: np.ndarray, dose: float) -> np.ndarray:
    """The images with a share `dose` of each cue's pixels removed: those pixels
    (ranks from cue_removal_ranks) take the generator's cue-free rendering of the
    same draws (generate_cue_split's `no_cue`: the background that was under the
    cue), the others keep the image's. Dose 0 is the image, dose 1 `no_cue`, bit
    for bit: the two renderings differ only inside the cue."""
    k = (ranks >= 0).sum((1, 2))
    cut = np.array([n_removed(dose, int(ki)) for ki in k])[:, None, None]
    removed = (ranks >= 0) & (ranks < cut)
    return np.where(removed[:, None], no_cue, images)


def generate_split(spec: SyntheticSpec, n: int, seed: int, split: str):
    """n images with balanced labels. Returns uint8 images (N,3,H,W), labels (N,), masks (N,H,W).
    With a cue, the masks are the cue's squares (generate_cue_split has the rest)."""
    if spec.cue is not None:
        d = generate_cue_split(spec, n, seed, split)
        return d["images"], d["labels"], d["masks"]
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


def make_benchmark(cfg: dict, n_eval: int, seed: int, offset: int = 0) -> dict:
    """All splits of the benchmark plus the evaluated subset: test images offset ..
    offset + n_eval - 1 (data.eval_offset: a replication on images disjoint from
    another run's, same data set and models' training data)."""
    if offset < 0 or offset + n_eval > cfg["n_test"]:
        raise ValueError(
            f"data.eval_offset {offset} + data.n_eval {n_eval} must lie within the "
            f"{cfg['n_test']} test images (data.synthetic.n_test)"
        )
    spec = SyntheticSpec.from_config(cfg)
    splits = {}
    for split in ("train", "val", "test"):
        if spec.cue is not None:  # the object's class and mask too: the intervention check removes the object
            splits[split] = generate_cue_split(spec, cfg[f"n_{split}"], seed, split)
            continue
        images, labels, masks = generate_split(spec, cfg[f"n_{split}"], seed, split)
        splits[split] = {"images": images, "labels": labels, "masks": masks}
    test = splits["test"]
    splits["eval"] = {k: v[offset : offset + n_eval] for k, v in test.items()}
    return {"splits": splits, "class_names": spec.class_names}
