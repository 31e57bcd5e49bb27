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
    method.prepare(torch.from_numpy(load_npz(images_path)["images"]).float().div(255).to(device))
    seeds = [derive_seed(*seed_key, int(i)) for i in data["ids"]]
    t0 = time.perf_counter()
    kwargs = {"masks": torch.from_numpy(data["masks"])} if getattr(method, "uses_masks", False) else {}
    attribution = method.explain(model, x, target, seeds=seeds, **kwargs)
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


def srg_reference_shard(model_path, images_path, shard: int, shard_size: int, settings: dict, target_mode: str,
                        assets: dict, seed: int, device):
    """SRG's R-OMS curves (random superpixel orderings, so no explainer) of one
    model x shard, for every configured imputer: records as the srg evaluator
    writes them, before the label column."""
    from fudbench.evaluation import Evaluator
    from fudbench.evaluation_baselines import srg_curves
    from fudbench.models.classifiers import load_classifier

    model = load_classifier(model_path, device)
    data = load_eval_shard(images_path, shard, shard_size)
    x = torch.from_numpy(data["images"]).to(device)
    y = _targets(model, x, data["labels"], target_mode)
    # R-OMS seeds use only the first element of the key (the run's seed), as in evaluate jobs
    ev = Evaluator("srg_reference", srg_curves(settings, assets, device, kinds=("roms",)))
    records, _ = ev.run(model, x, y, None, data["ids"], (seed, "srg_reference"))
    return records


def sample_quality(images_path, samples: dict, shard: int, shard_size: int, metrics, images_per_shard=None):
    """Image quality (piq) of the kept intermediate samples vs their originals.

    samples: {(model, explainer): path of an evaluate job's samples npz}. Only
    the first `images_per_shard` images of the shard are measured (a CPU-budget
    knob; None = all). Returns one row per (model, explainer, curve, image, step).
    """
    import pandas as pd

    from fudbench.analysis.quality import quality_metrics

    data = load_eval_shard(images_path, shard, shard_size)
    n = len(data["ids"]) if images_per_shard is None else min(images_per_shard, len(data["ids"]))
    originals = torch.from_numpy(data["images"][:n])
    frames = []
    for (model, explainer), path in samples.items():
        for curve, arr in load_npz(path).items():
            if curve == "ids" or curve.startswith("removed_"):
                continue
            steps = arr.shape[1]
            s = torch.from_numpy(arr[:n].astype(np.float32)).reshape(n * steps, *arr.shape[2:])
            q = quality_metrics(s, originals.repeat_interleave(steps, dim=0), metrics=metrics)
            frames.append(pd.DataFrame({"model": model, "explainer": explainer, "curve": curve,
                                        "image": np.repeat(data["ids"][:n], steps),
                                        "step": np.tile(np.arange(steps), n), **q}))
    if not frames:  # evaluators that keep no intermediate samples (e.g. srg)
        return pd.DataFrame(columns=["model", "explainer", "curve", "image", "step", *metrics])
    return pd.concat(frames, ignore_index=True)


def build_gallery(images_path, attributions: dict, samples: dict, n_images: int) -> dict:
    """The first n_images of shard 0, flattened into one npz-ready dict.

    attributions: {(model, explainer): path}; samples: {(model, explainer, evaluator): path}.
    Keys: 'images', 'masks', 'ids', then '<model>__<explainer>__attributions' and
    '<model>__<explainer>__<curve>' (samples, N x steps x C x H x W) with
    '<model>__<explainer>__<curve>__removed' (the removed fraction of each step).
    """
    first = load_npz(next(iter(samples.values())))
    ids = first["ids"][:n_images]
    data = load_npz(images_path)
    out = {"ids": ids, "images": data["images"][ids], "masks": data["masks"][ids]}
    for (model, explainer), path in attributions.items():
        out[f"{model}__{explainer}__attributions"] = load_npz(path)["attributions"][:len(ids)]
    for (model, explainer, _), path in samples.items():
        for key, arr in load_npz(path).items():
            if key.startswith("removed_"):
                out[f"{model}__{explainer}__{key[len('removed_'):]}__removed"] = arr
            elif key != "ids":
                out[f"{model}__{explainer}__{key}"] = arr[:len(ids)]
    return out
