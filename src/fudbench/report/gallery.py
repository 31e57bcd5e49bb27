"""The gallery: a few images' attributions and intermediate samples, for the
qualitative figures (Fig. 4). Plain numpy: the gallery job needs no torch.

Its keys join a model, an explainer and what the array is with SEP ("."), a
character no config name may hold (fudbench.config.names: entry names are lower-case
letters, digits and `_`), so every key splits back into its parts: with `__`
the models `cnn_` and `cnn` with the explainers `ig` and `_ig` gave one key
`cnn___ig__...` (issue 45). Build and read the keys only through the functions
here."""

from __future__ import annotations

import numpy as np

from fudbench.core.io import load_npz

SEP = "."
FORMAT = 2  # the gallery's key layout: 2 = the SEP keys below (1, without a `format` entry: `__` joins)
KINDS = ("attributions", "samples", "removed")


def gallery_key(model: str, explainer: str, kind: str, curve: str | None = None) -> str:
    """'<model>.<explainer>.attributions', '<model>.<explainer>.samples.<curve>' (N x steps x C x H x W)
    or '<model>.<explainer>.removed.<curve>' (the removed fraction of each step: (steps,) or (N, steps))."""
    for what, name in (("model", model), ("explainer", explainer)):
        if not name or SEP in name:
            raise ValueError(
                f"gallery key: the {what} name {name!r} is empty or contains {SEP!r}, which "
                f"separates the parts of a gallery key (fudbench.config.names refuses such names)"
            )
    if kind not in KINDS or (curve is None) != (kind == "attributions"):
        raise ValueError(
            f"gallery key: kind {kind!r} with curve {curve!r}; kinds: {', '.join(KINDS)} (a curve "
            f"with samples and removed only)"
        )
    return SEP.join((model, explainer, kind) + (() if curve is None else (curve,)))


def parse_key(key: str) -> tuple[str, str, str, str | None] | None:
    """(model, explainer, kind, curve or None) of a gallery key; None for the other entries
    (images, masks, ids, format)."""
    parts = key.split(SEP, 3)
    if len(parts) < 3 or parts[2] not in KINDS or (len(parts) == 4) == (parts[2] == "attributions"):
        return None
    return parts[0], parts[1], parts[2], parts[3] if len(parts) == 4 else None


def gallery_pairs(gallery) -> list[tuple[str, str]]:
    """The (model, explainer) pairs with attributions in the gallery, in its order."""
    return [(m, e) for m, e, kind, _ in filter(None, map(parse_key, gallery)) if kind == "attributions"]


def check_gallery(gallery, path="the gallery") -> None:
    """Refuse a gallery written with another key layout (an older version joined names with `__`)."""
    found = int(np.asarray(gallery["format"])) if "format" in gallery else 1
    if found != FORMAT:
        raise ValueError(
            f"{path}: gallery format {found}, expected {FORMAT} (the keys changed); delete the file "
            f"so that the gallery job remakes it"
        )


def build_gallery(images_path, attributions: dict, samples: dict, n_images: int) -> dict:
    """The first n_images of shard 0, flattened into one npz-ready dict.

    attributions: {(model, explainer): path}; samples: {(model, explainer, evaluator): path}.
    Keys: 'images', 'masks', 'ids', 'format' (FORMAT), then gallery_key's: attributions,
    samples and removed fractions (NaN past an image's last step) of each curve.
    """
    first = load_npz(next(iter(samples.values())), made_by="evaluate")
    ids = first["ids"][:n_images]
    data = load_npz(images_path)
    out = {"ids": ids, "images": data["images"][ids], "masks": data["masks"][ids], "format": np.array(FORMAT)}
    for (model, explainer), path in attributions.items():
        attr = load_npz(path, made_by="explain")["attributions"][: len(ids)]
        out[gallery_key(model, explainer, "attributions")] = attr
    for (model, explainer, _), path in samples.items():
        for key, arr in load_npz(path, made_by="evaluate").items():
            if key.startswith("removed_"):  # per step (steps,), or per image and step (N, steps)
                curve = key[len("removed_") :]
                out[gallery_key(model, explainer, "removed", curve)] = arr if arr.ndim == 1 else arr[: len(ids)]
            elif key != "ids":
                out[gallery_key(model, explainer, "samples", key)] = arr[: len(ids)]
    return out
