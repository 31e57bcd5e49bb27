"""The gallery: a few images' attributions and intermediate samples, for the
qualitative figures (Fig. 4). Plain numpy: the gallery job needs no torch."""
from __future__ import annotations

from fudbench.io import load_npz


def build_gallery(images_path, attributions: dict, samples: dict, n_images: int) -> dict:
    """The first n_images of shard 0, flattened into one npz-ready dict.

    attributions: {(model, explainer): path}; samples: {(model, explainer, evaluator): path}.
    Keys: 'images', 'masks', 'ids', then '<model>__<explainer>__attributions' and
    '<model>__<explainer>__<curve>' (samples, N x steps x C x H x W) with
    '<model>__<explainer>__<curve>__removed' (the removed fraction of each step, or of each
    image's steps: (N, steps), NaN past an image's last step).
    """
    first = load_npz(next(iter(samples.values())), made_by="evaluate")
    ids = first["ids"][:n_images]
    data = load_npz(images_path)
    out = {"ids": ids, "images": data["images"][ids], "masks": data["masks"][ids]}
    for (model, explainer), path in attributions.items():
        out[f"{model}__{explainer}__attributions"] = load_npz(path, made_by="explain")["attributions"][:len(ids)]
    for (model, explainer, _), path in samples.items():
        for key, arr in load_npz(path, made_by="evaluate").items():
            if key.startswith("removed_"):  # per step (steps,), or per image and step (N, steps)
                out[f"{model}__{explainer}__{key[len('removed_'):]}__removed"] = arr if arr.ndim == 1 else arr[:len(ids)]
            elif key != "ids":
                out[f"{model}__{explainer}__{key}"] = arr[:len(ids)]
    return out
