"""Job-level functions behind the workflow's scripts: one shard of explaining
or evaluating. Kept here (not in scripts/) so they are unit-tested and usable
from a researcher's own code."""
from __future__ import annotations

import logging
import time

import numpy as np
import torch

from fudbench.data.shards import load_eval_shard
from fudbench.io import load_npz
from fudbench.seeding import derive_seed

log = logging.getLogger(__name__)


def _targets(model, x, labels, target_mode: str, batch_size: int = 256) -> torch.Tensor:
    """The class each image is explained and evaluated for."""
    if target_mode == "label":
        return torch.as_tensor(labels, device=x.device)
    with torch.no_grad():
        return torch.cat([model(x[i:i + batch_size]).argmax(1) for i in range(0, len(x), batch_size)])


def explain_shard(model_path, images_path, shard: int, shard_size: int, explainer: str, settings: dict,
                  target_mode: str, seed_key: tuple, device) -> dict:
    from fudbench.explainers import build_explainer
    from fudbench.models.classifiers import load_classifier

    model = load_classifier(model_path, device)
    data = load_eval_shard(images_path, shard, shard_size)
    x = torch.from_numpy(data["images"]).to(device)
    target = _targets(model, x, data["labels"], target_mode)
    method = build_explainer(explainer, settings)
    seeds = [derive_seed(*seed_key, int(i)) for i in data["ids"]]
    t0 = time.perf_counter()
    attribution = method.explain(model, x, target, seeds=seeds)
    seconds = (time.perf_counter() - t0) / len(x)
    a = attribution.float().cpu().numpy()
    n_bad = int((~np.isfinite(a)).any(axis=(1, 2, 3)).sum())
    if n_bad:
        log.warning("%s produced non-finite attributions for %d image(s); they rank last", explainer, n_bad)
    return {"attributions": a.astype(np.float32), "targets": target.cpu().numpy(), "ids": data["ids"],
            "labels": data["labels"], "seconds_per_image": np.float64(seconds)}


def evaluate_shard(model_path, images_path, attributions_path, shard: int, shard_size: int, evaluator: str,
                   settings: dict, evaluation: dict, assets: dict, seed_key: tuple, device):
    """Returns (records DataFrame, {curve: samples (N, steps, C, H, W) float16})."""
    from fudbench.evaluators import build_evaluator
    from fudbench.models.classifiers import load_classifier

    model = load_classifier(model_path, device)
    data = load_eval_shard(images_path, shard, shard_size)
    attr = load_npz(attributions_path)
    if not np.array_equal(attr["ids"], data["ids"]):
        raise RuntimeError(f"{attributions_path} holds images {attr['ids'].tolist()}, expected shard "
                           f"{shard} = {data['ids'].tolist()}; delete it so the explain job reruns")
    x = torch.from_numpy(data["images"]).to(device)
    y = torch.from_numpy(attr["targets"]).to(device)
    a = torch.from_numpy(attr["attributions"]).to(device)
    ev = build_evaluator(evaluator, settings, evaluation, assets, device)
    records, samples = ev.run(model, x, y, a, data["ids"], seed_key)
    records["label"] = records["image"].map(dict(zip(data["ids"].tolist(), data["labels"].tolist())))
    samples["ids"] = data["ids"]
    return records, samples


def gallery_subset(images_path, attributions_path, samples_path, n_images: int) -> dict:
    """The first n_images of shard 0: originals, attributions and every curve's samples."""
    images = load_npz(images_path)
    attr = load_npz(attributions_path)
    samples = load_npz(samples_path)
    n = min(n_images, len(samples["ids"]))
    out = {"ids": samples["ids"][:n], "images": images["images"][samples["ids"][:n]],
           "masks": images["masks"][samples["ids"][:n]], "attributions": attr["attributions"][:n],
           "targets": attr["targets"][:n]}
    for key, arr in samples.items():
        if key.startswith("removed_"):
            out[key] = arr
        elif key != "ids":
            out[f"samples_{key}"] = arr[:n]
    return out
