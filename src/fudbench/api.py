"""Explain and evaluate from Python, on your own model and images, through the
same code as the workflow (docs/your_own.md).

    import fudbench
    maps = fudbench.explain(model, images, targets, "ig", n_steps=32)
    frame = fudbench.evaluate(model, images, targets, maps, metrics=["insdel", "fud"],
                              assets={"score_model": "results/synthetic/models/score_model.pt"})

`model` is any torch.nn.Module that takes images in [0, 1] and returns logits
(wrap a network that expects normalised inputs with
`fudbench.models.classifiers.Classifier(net, mean, std)`). Metrics are
evaluator names or config-style entries (`{"fud_renoise": {"method": "fud",
"known": "renoise"}}`), explainers built-in names or import paths: the
registries the workflow uses. With the same seed, model name and image ids,
`evaluate` returns the numbers the workflow writes (paired noise keyed by
seed, model, evaluator and image, never by the explainer).
"""
from __future__ import annotations

from typing import Optional, Sequence, Union

EVALUATION_DEFAULTS = {"ratios": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], "reduction": "abs_sum"}


def explain(model, images, targets, method: str, *, seeds: Optional[Sequence[int]] = None, references=None,
            **settings):
    """Attribution maps (same shape as images) of `method` (a registered name, e.g.
    "ig", or an import path "pkg.mod:MyMethod" / "file.py:fn") with its settings.
    references: images the method may draw baselines from (Expected Gradients),
    default the images themselves. seeds: one per image (default 0, 1, ...).
    Degenerate maps (constant, all-zero, non-finite) are counted in the log."""
    from fudbench.explainers import build_explainer
    from fudbench.masks import degenerate_maps
    from fudbench.pipeline import report_degenerate_maps

    explainer = build_explainer(method, {"method": method, **settings})
    explainer.prepare(images if references is None else references)
    seeds = list(range(len(images))) if seeds is None else list(seeds)
    model.eval()  # explanations of the deployed model: no dropout, batch-norm in inference mode
    maps = explainer.explain(model, images, targets, seeds=seeds)
    report_degenerate_maps(method, degenerate_maps(maps.detach().cpu()), range(len(images)))
    return maps


def _metric_entries(metrics) -> dict:
    """["insdel", {"fud_sym": {"method": "fud", "symmetric": True}}, ...] -> {name: settings}."""
    entries = {}
    for m in [metrics] if isinstance(metrics, (str, dict)) else metrics:
        entries.update({m: {}} if isinstance(m, str) else m)
    return entries


def evaluate(model, images, targets, attributions, metrics: Union[str, Sequence, dict] = ("insdel",), *,
             evaluation: Optional[dict] = None, assets: Optional[dict] = None, image_ids=None, seed: int = 0,
             model_name: str = "model", explainer: str = "explainer", device=None):
    """Evaluate attribution maps with the named metrics (evaluators).

    Returns a tidy DataFrame: one row per metric curve x image x step, with the
    workflow's record columns (curve, image, step, kept, removed, target,
    confidence, prediction, energy, l2, seconds, degenerate_map ...) and the
    curve's per-image `score` on each of its rows; scores derived from several
    curves (e.g. SRG's relevance gains, FUD symmetric) come as rows with
    step -1 and only `score` set.
    evaluation: kept fractions `ratios` and attribution `reduction` (defaults:
    the paper's 0.1 ... 0.9, abs_sum). assets: files some metrics read
    (`score_model` for fud and diffusion_plain fills, `surrogate` for ffid,
    `reference_images` for train-set fills; `ood_reference` for the feature-based
    OOD columns mahalanobis and knn, NaN without it: the workflow's
    results/<run>/ood_reference/<model>.npz). image_ids / seed / model_name key
    the paired noise as in the workflow (pass the workflow's to reproduce its numbers).
    """
    import pandas as pd
    import torch

    from fudbench.analysis.curves import derived_scores, per_image_scores
    from fudbench.evaluators import build_evaluator
    from fudbench.pipeline import attach_ood_reference, evaluate_maps, name_records, paired_seed_key

    model.eval()
    assets = dict(assets or {})
    reference = assets.pop("ood_reference", None)
    tap = attach_ood_reference(model, reference, model_name) if reference is not None else None
    device = torch.device(device) if device is not None else images.device
    images, attributions = images.to(device), torch.as_tensor(attributions).to(device)
    targets = torch.as_tensor(targets).to(device)
    ids = list(range(len(images))) if image_ids is None else [int(i) for i in image_ids]
    evaluation = {**EVALUATION_DEFAULTS, **(evaluation or {})}
    frames = []
    try:
        for name, settings in _metric_entries(metrics).items():
            evaluator = build_evaluator(name, settings, evaluation, assets, device)
            records, _ = evaluate_maps(evaluator, model, images, targets, attributions.detach(), ids,
                                       paired_seed_key(seed, model_name, name))
            frames.append(name_records(records, model_name, explainer, name))
    finally:
        if tap is not None:
            tap.close()  # the caller's model is left without our hooks
    records = pd.concat(frames, ignore_index=True)
    per_image = per_image_scores(records)
    derived = derived_scores(records, per_image)
    keys = ["model", "explainer", "curve", "image"]
    tidy = records.merge(per_image[[*keys, *[c for c in ("score", "tau") if c in per_image]]], on=keys, how="left")
    if len(derived):
        tidy = pd.concat([tidy, derived.assign(step=-1)], ignore_index=True)
    return tidy.astype({"score": float})
