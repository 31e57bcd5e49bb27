"""Explain and evaluate from Python, on your own model and images, through the
same code as the workflow (docs/your_own.md).

    import fudbench
    maps = fudbench.explain(model, images, targets, "ig", n_steps=32)
    frame = fudbench.evaluate(model, images, targets, maps, metrics=["insdel", "fud"],
                              assets={"score_model": "results/synthetic/models/score_model.pt"})

`fudbench.load_example()` gives a model and images to try them on: the default run's shipped
classifier and evaluated images of the synthetic benchmark, with labels, masks and ids (offline).

`model` is any torch.nn.Module that takes images in [0, 1] and returns logits
(wrap a network that expects normalised inputs with
`fudbench.models.classifiers.Classifier(net, mean, std)`). Metrics are
evaluator names or config-style entries (`{"fud_renoise": {"method": "fud",
"known": "renoise"}}`), explainers built-in names or import paths: the
registries the workflow uses. With the same seed, model name and image ids,
`evaluate` returns the numbers the workflow writes (paired noise keyed by
seed, model, evaluator and image, never by the explainer).

Inputs are checked before any work, through the declarations the config is
validated from (each method's settings dataclass: its JSON schema and
`problems()`; fudbench.core.checks for tensors), and every error
(fudbench.core.checks.InputError, a ValueError) names the argument as this API
calls it: `images`, `targets`, `attributions`, `settings['n_steps']`,
`metrics['sensn']['n_subsets']`, `evaluation['ratios']`, `assets['score_model']`.
Conversions (not errors): numpy arrays and lists become tensors; images,
references and maps of another float dtype (float64, float16) become float32;
integer targets of any width become int64. Not converted: 8-bit images
(divide by 255 yourself: the scale is yours to say) and float targets.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import numbers
import re
from typing import Optional, Sequence, Union

from fudbench.core.checks import InputError

EVALUATION_DEFAULTS = {"ratios": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], "reduction": "abs_sum"}

# What each asset is, named in the error when a metric needs it and it is missing
# (the workflow makes them where rules/common.smk's asset_path says).
ASSET_FILES = {
    "score_model": "the score-model checkpoint: the workflow's results/<run>/models/score_model.pt (for the 32x32 "
    "synthetic benchmark, the shipped assets/score_model_synthetic.pt)",
    "reference_images": "an npz with an 'images' uint8 array (M, C, H, W) the fill draws from, e.g. the "
    "workflow's training split results/<run>/data/train.npz",
    "surrogate": "F-Fidelity's fine-tuned surrogate classifier checkpoint (rule train_surrogate: "
    "results/<run>/models/<model>_surrogate.pt)",
    "srg_reference": "R-OMS records of this model and these images (rule srg_reference)",
    "ood_reference": "the model's feature-OOD reference (rule ood_reference: results/<run>/ood_reference/<model>.npz)",
}

# Messages written for config keys ("config key 'evaluators.sensn.n_subsets': ...") are
# produced with this marker as the key's prefix and rewritten into the API's terms.
_MARK = "\x1f"


def _api_terms(message: str, render) -> str:
    """Rewrite "config key '<...MARK>.a.b'" into render(['a', 'b'])."""

    def sub(match):
        return render([p for p in match.group(1).split(".") if p])

    return re.sub(rf"config key '[^'{_MARK}]*{_MARK}([^']*)'", sub, message)


def _subscripts(parts) -> str:
    return "".join(f"[{p}]" if p.isdigit() else f"[{p!r}]" for p in parts)


def _raise(where: str, problems: list) -> None:
    if len(problems) == 1:
        raise InputError(f"{where}: {problems[0]}")
    if problems:
        raise InputError(f"{where}: {len(problems)} problems:\n  " + "\n  ".join(problems))


def _settings_problems(schema: dict, values: dict, render, extra_check=None) -> list:
    """Problems of a settings dict under a settings dataclass's JSON schema and, if the
    schema passes, its cross-field checks (extra_check(key) -> config-style messages)."""
    from fudbench.config.validate import _describe, non_finite_numbers
    from fudbench.core.settings import schema_validator

    problems = non_finite_numbers(values, (_MARK,))
    if not problems:
        problems = [
            _describe(e, prefix=(_MARK,))
            for e in sorted(schema_validator(schema).iter_errors(values), key=lambda e: list(map(str, e.path)))
        ]
    if not problems and extra_check is not None:
        problems = extra_check(_MARK)
    return [_api_terms(p, render) for p in problems]


# --- tensors ---------------------------------------------------------------------------------------------------


def _to_tensor(value, name: str, where: str):
    import numpy as np
    import torch

    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (np.ndarray, list, tuple)) or np.isscalar(value):
        try:
            return torch.as_tensor(np.asarray(value))
        except (TypeError, ValueError) as exc:
            raise InputError(f"{where}: {name} could not be turned into a tensor ({exc})") from None
    raise InputError(f"{where}: {name} must be a torch.Tensor or numpy array, got {type(value).__name__}")


def _as_float(value, name: str, where: str):
    """A tensor of float32 from a tensor / array of any float dtype; other dtypes are left for the checks."""
    import torch

    t = _to_tensor(value, name, where)
    return t.float() if t.is_floating_point() and t.dtype != torch.float32 else t


def _as_images(images, name: str, where: str, device=None):
    from fudbench.core.checks import check_images

    x = _as_float(images, name, where)
    check_images(x, where, name=name)
    return x if device is None else x.to(device)


def _as_targets(targets, n: int, where: str, device):
    import torch

    from fudbench.core.checks import check_targets

    y = _to_tensor(targets, "targets", where)
    check_targets(y, n, where, name="targets")
    return y.to(device=device, dtype=torch.int64)


def _check_target_range(model, x, y, where: str) -> int:
    """The model's number of classes from one forward of one image; every target must be below it."""
    import torch

    try:
        with torch.no_grad():
            logits = model(x[:1])
    except Exception as exc:
        raise InputError(
            f"{where}: model failed on one image of images (shape {tuple(x[:1].shape)}, "
            f"{x.dtype}, {x.device}): {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(logits, torch.Tensor) or logits.dim() != 2 or logits.shape[0] != 1:
        shape = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise InputError(f"{where}: model must return logits of shape (N, classes); for one image it returned {shape}")
    n_classes = logits.shape[1]
    bad = ((y < 0) | (y >= n_classes)).nonzero().flatten().tolist()
    if bad:
        raise InputError(
            f"{where}: targets must be class indices in [0, {n_classes}) (the model returns "
            f"{n_classes} logits); got {[int(y[i]) for i in bad[:10]]} at position(s) {bad[:10]}"
        )
    return n_classes


def _check_per_image(values, n: int, name: str, where: str, distinct: bool = False) -> list:
    if values is None:
        return None
    values = list(values)
    if len(values) != n:
        raise InputError(f"{where}: {name} must give one per image ({n}), got {len(values)}")
    try:
        ints = [int(v) for v in values]
    except (TypeError, ValueError):
        raise InputError(f"{where}: {name} must be integers, got {values[:5]}") from None
    if any(i != v for i, v in zip(ints, values)):
        raise InputError(f"{where}: {name} must be integers, got {values[:5]}")
    if any(i < 0 for i in ints):  # seed material, as the workflow's (>= 0) are
        raise InputError(f"{where}: {name} must be >= 0, got {[i for i in ints if i < 0][:5]}")
    if distinct and len(set(ints)) != n:
        dup = sorted({i for i in ints if ints.count(i) > 1})
        raise InputError(
            f"{where}: {name} must be distinct (records and per-image scores are keyed by them); repeated: {dup[:10]}"
        )
    return ints


def _progress_problems(progress) -> list:
    if not isinstance(progress, bool):
        return [f"progress must be True (show progress bars) or False (silent), got {progress!r}"]
    return []


# --- explain ---------------------------------------------------------------------------------------------------


def _explainer_problems(method, settings: dict) -> list:
    """The explain settings checked as a config entry of `method` would be, in the API's terms."""
    from fudbench.config.validate import _explainer_settings_problems, _mask_method
    from fudbench.explainers import EXPLAINERS
    from fudbench.explainers.settings import SETTINGS
    from fudbench.core.plugins import PluginError, is_import_path, load_object
    from fudbench.core.settings import settings_schema

    def render(parts):
        return "settings" + _subscripts(parts)

    if not isinstance(method, str):
        return [
            f"method must be a registered explainer name or an import path 'pkg.mod:Name' / 'file.py:Name', "
            f"got {type(method).__name__}"
        ]
    if is_import_path(method):
        from fudbench.explainers.plugin import interface_problems

        try:
            obj = load_object(method)
        except PluginError as exc:
            return [f"method {method!r}: {exc}"]
        return [
            re.sub(rf"config key 'explainers\.{_MARK}'", f"method {method!r}", p)
            for p in interface_problems(_MARK, obj, settings)
        ]
    if method not in EXPLAINERS:
        return [
            f"method: unknown explainer {method!r}; registered: {', '.join(sorted(EXPLAINERS))} (or an import "
            f"path 'package.module:Name' / 'path/to/file.py:Name')"
        ]
    problems = _settings_problems(
        settings_schema(SETTINGS[method]),
        settings,
        render,
        lambda key: _explainer_settings_problems(method, method, settings, (key,)),
    )
    masked = None if problems else _mask_method(method, settings)
    if masked:
        runs = f"method {method!r}" + ("" if masked == method else f" wraps {masked!r}, which")
        return [
            f"{runs} reads the synthetic benchmark's ground-truth object masks; fudbench.explain takes no "
            f"masks: run it in the workflow (data.source: synthetic)"
        ]
    return problems


def explain(
    model,
    images,
    targets,
    method: str,
    *,
    seeds: Optional[Sequence[int]] = None,
    references=None,
    progress: bool = False,
    seed: int = 0,
    model_name: str = "model",
    image_ids=None,
    **settings,
):
    """Attribution maps (float32, the images' shape) of `method` (a registered name,
    e.g. "ig", or an import path "pkg.mod:MyMethod" / "file.py:fn") with its settings.
    references: images the method may draw baselines from (Expected Gradients),
    default the images themselves. seeds: one per image; default: as the workflow's explain job
    seeds them, from `seed`, `model_name`, the method and `image_ids` (default 0, 1, ...), so that
    fudbench.evaluate(..., explainer=method) with the same seed, model_name and image_ids rebuilds
    the same maps (its metrics that explain again check that it does).
    progress: show progress bars of the work (default silent; fudbench.core.bars).
    Degenerate maps (constant, all-zero, non-finite) are counted in the log.

    Checked before any work, each error naming the argument (InputError):
    images (N, C, H, W) in [0, 1] and finite; targets one integer class per image,
    each below the model's number of logits (one forward of one image); seeds one
    integer per image; the settings as the config checks an entry of this method
    (e.g. `settings['n_steps']: 0 is less than the minimum of 1`). numpy arrays
    and float64 images are converted (float32), not refused; 8-bit images are
    refused (pass images.float() / 255)."""
    from fudbench.explainers import build_explainer
    from fudbench.core.bars import shown
    from fudbench.core.masks import degenerate_maps
    from fudbench.workflow.pipeline import nonfinite_model_ids, report_degenerate_maps

    where = "fudbench.explain"
    _raise(where, _progress_problems(progress) + _explainer_problems(method, settings))
    x = _as_images(images, "images", where)
    y = _as_targets(targets, len(x), where, x.device)
    if seeds is None:  # the explain job's per-image seeds (explainers.again.explain_again draws the same)
        from fudbench.core.seeding import derive_seed
        from fudbench.explainers.seeds import explain_seed_key

        ids = list(range(len(x))) if image_ids is None else _check_per_image(image_ids, len(x), "image_ids", where)
        key = explain_seed_key(seed, model_name, method, {"method": method, **settings})
        seeds = [derive_seed(*key, i) for i in ids]
    else:
        seeds = _check_per_image(seeds, len(x), "seeds", where)
    refs = x if references is None else _as_images(references, "references", where, x.device)
    model.eval()  # explanations of the deployed model: no dropout, batch-norm in inference mode
    _check_target_range(model, x, y, where)

    with shown(progress):  # a plug-in's own bars too
        explainer = build_explainer(method, {"method": method, **settings})
        explainer.prepare(refs)
        maps = explainer.explain(model, x, y, seeds=seeds)
    kinds = degenerate_maps(maps.detach().cpu())  # a model with NaN logits is named, not the method
    report_degenerate_maps(method, kinds, range(len(x)), nonfinite_model_ids(model, x, kinds, range(len(x))))
    return maps


# --- evaluate --------------------------------------------------------------------------------------------------


def _metric_entries(metrics) -> dict:
    """["insdel", {"fud_sym": {"method": "fud", "symmetric": True}}, ...] -> {name: settings}."""
    entries = {}
    for m in [metrics] if isinstance(metrics, (str, dict)) else metrics:
        if isinstance(m, str):
            entries[m] = {}
        elif isinstance(m, dict):
            entries.update({k: ({} if v is None else v) for k, v in m.items()})
        else:
            raise InputError(
                f"fudbench.evaluate: metrics must hold evaluator names or {{name: settings}} dicts, got {m!r}"
            )
    return entries


def _metric_problems(entries: dict) -> tuple[list, dict]:
    """Each entry checked as the config checks an `evaluators:` entry; returns
    (problems, {name: (spec, resolved settings)} of the entries that passed)."""
    from fudbench.evaluators import method_of, spec
    from fudbench.evaluators.imputing import imputer_options_schema
    from fudbench.core.plugins import PluginError

    problems, ok = [], {}
    if not entries:
        return ["metrics names no evaluator; e.g. metrics=['insdel']"], ok
    for name, settings in entries.items():

        def render(parts, name=name):
            return "metrics" + _subscripts([name, *parts])

        if not isinstance(settings, dict):
            problems.append(f"{render([])}: the settings must be a dict, got {type(settings).__name__}")
            continue
        method = method_of(name, settings)
        try:
            s = spec(method)
        except (KeyError, PluginError) as exc:
            problems.append(f"{render(['method'] if 'method' in settings else [])}: {exc.args[0]}")
            continue
        schema = {**s.schema(), "$defs": {"imputer_options": imputer_options_schema()}}
        found = _settings_problems(schema, settings, render, lambda key, s=s, settings=settings: s.check(settings, key))
        problems += found
        if not found:
            ok[name] = (s, s.resolve(settings))
    return problems, ok


def _evaluation_problems(evaluation: dict, specs: dict) -> tuple[list, dict]:
    """evaluation: only `ratios` and `reduction`; ratios finite, in (0, 1), distinct, and at least
    two where a metric scores an area under its curve over them. Returns (problems, evaluation)."""
    import numpy as np

    from fudbench.evaluators import entry_curves
    from fudbench.core.masks import REDUCTIONS

    if not isinstance(evaluation, dict):
        return [f"evaluation must be a dict with ratios and reduction, got {type(evaluation).__name__}"], {}
    unknown = sorted(set(evaluation) - set(EVALUATION_DEFAULTS))
    if unknown:
        return [f"evaluation: unknown key(s) {unknown}; allowed: {', '.join(EVALUATION_DEFAULTS)}"], {}
    evaluation = {**EVALUATION_DEFAULTS, **evaluation}
    problems, ratios = [], evaluation["ratios"]
    if isinstance(ratios, (np.ndarray, list, tuple)):
        ratios = [r.item() if isinstance(r, np.generic) else r for r in np.asarray(ratios, dtype=object).ravel()]
    if not isinstance(ratios, list) or not ratios:
        problems.append(f"evaluation['ratios'] must be a non-empty list of kept fractions in (0, 1), got {ratios!r}")
    elif not all(isinstance(r, (int, float)) and not isinstance(r, bool) for r in ratios):
        problems.append(f"evaluation['ratios'] must hold numbers, got {ratios}")
    else:
        bad = [r for r in ratios if not math.isfinite(r)]
        if bad:
            problems.append(
                f"evaluation['ratios']: {ratios} holds non-finite value(s) {bad}; kept fractions are numbers in (0, 1)"
            )
        elif any(not 0 < r < 1 for r in ratios):
            problems.append(
                f"evaluation['ratios']: {ratios} holds {[r for r in ratios if not 0 < r < 1]}, outside "
                f"(0, 1): each is the kept fraction rho of an image (0 and 1 are the empty and full "
                f"images, which no protocol fills)"
            )
        elif len(set(ratios)) != len(ratios):
            problems.append(f"evaluation['ratios']: {ratios} repeats a value; give each kept fraction once")
        elif len(ratios) < 2:
            needs = sorted(
                {
                    f"metrics[{name!r}] (curve {c.name})"
                    for name, (_, _, raw) in specs.items()
                    for c in entry_curves(name, raw)
                    if c.auc_over_ratios
                }
            )
            if needs:
                problems.append(
                    f"evaluation['ratios']: {ratios} is one kept fraction, but {', '.join(needs)} "
                    f"score{'s' if len(needs) == 1 else ''} the area under a curve over the ratios, "
                    f"which needs at least two distinct ratios"
                )
        evaluation["ratios"] = [float(r) for r in ratios]
    if evaluation["reduction"] not in REDUCTIONS:
        problems.append(
            f"evaluation['reduction']: {evaluation['reduction']!r} is not allowed; allowed values: "
            f"{', '.join(map(repr, REDUCTIONS))}"
        )
    return problems, evaluation


def _asset_problems(assets: dict, specs: dict) -> list:
    """Every asset a metric needs is given and exists; unknown keys (a typo) are named."""
    from pathlib import Path

    problems = []
    needed = {}
    for name, (s, resolved, _) in specs.items():
        for key in sorted(s.assets(resolved) - set(s.optional_assets)):
            needed.setdefault(key, []).append(name)
    known = set(ASSET_FILES) | {k for s, resolved, _ in specs.values() for k in s.assets(resolved)}
    unknown = sorted(set(assets) - known)
    if unknown:
        problems.append(f"assets: unknown key(s) {unknown}; known: {', '.join(sorted(known))}")
    for key, users in sorted(needed.items()):
        if not assets.get(key):
            what = ASSET_FILES.get(key, "a file the metric's spec declares")
            problems.append(
                f"{', '.join(f'metrics[{u!r}]' for u in users)} need{'s' if len(users) == 1 else ''} "
                f"assets[{key!r}], which is not given: {what}"
            )
    for key, path in sorted(assets.items()):
        if key in known and path is not None and not isinstance(path, (str, Path)):
            problems.append(f"assets[{key!r}] must be a file path, got {type(path).__name__}")
        elif key in known and path and not Path(path).exists():
            problems.append(f"assets[{key!r}]: {path} does not exist ({ASSET_FILES.get(key, 'a file')})")
    return problems


def _score_model_problems(path, shape) -> list:
    """The score model's own image size against the images: a model trained by this
    workflow (the synthetic benchmark's) fills only images of its own size and
    domain; a pretrained model (guided-diffusion) is bridged to its size (images
    up to its size, square: fudbench.imputers.resolution), never down."""
    from fudbench.models.checkpoints import load_checkpoint

    try:
        ckpt = load_checkpoint(path, kind="score_model")
    except (FileNotFoundError, RuntimeError) as exc:
        return [f"assets['score_model']: {exc}"]
    size, (h, w) = int(ckpt["image_size"]), shape[-2:]
    if (h, w) == (size, size):
        return []
    if "cfg" in ckpt:  # trained by train_score_model, on the synthetic benchmark (config: synthetic data only)
        return [
            f"assets['score_model'] ({path}) is a score model trained by this workflow on the synthetic "
            f"benchmark's {size}x{size} images, but images are {h}x{w}: its fills would come from another "
            f"domain and resolution. Use a score model of the images' domain (for photos: guided-diffusion's "
            f"256 px ImageNet model, docs/paper_profile.md), or images of the benchmark ({size}x{size})"
        ]
    if h != w:
        return [
            f"assets['score_model'] ({path}) generates {size}x{size} images and images are {h}x{w}: bridging "
            f"the resolution needs square images"
        ]
    if h > size:
        return [
            f"assets['score_model'] ({path}) generates {size}x{size} images, smaller than images ({h}x{w}): "
            f"its fills would be made at a lower resolution and upsampled; use a score model of at least the "
            f"images' size"
        ]
    return []


def _masks_problems(specs: dict, masks) -> list:
    """A metric that reads ground-truth masks (its spec's needs_masks) needs masks=."""
    users = [name for name, (s, resolved, _) in specs.items() if s.masks_needed(resolved)]
    if users and masks is None:
        return [
            f"{', '.join(f'metrics[{u!r}]' for u in users)} read{'s' if len(users) == 1 else ''} the images' "
            f"ground-truth object masks, and masks is not given: pass masks= (one H x W mask per image, "
            f"non-zero = the object), in the images' order (N, H, W) or as {{image_id: mask}}"
        ]
    return []


def _as_masks(masks, x, ids: list, where: str):
    """masks= as the evaluators take them: (N, H, W) float 0/1 in the images' order. A dict is looked
    up by image id (image_ids, default 0 .. N-1), never by position."""
    import torch

    from fudbench.core.checks import check_masks

    if isinstance(masks, dict):
        keys = {int(k) for k in masks}
        missing, extra = [i for i in ids if i not in keys], sorted(keys - set(ids))
        if missing or extra:
            raise InputError(
                f"{where}: masks given as {{image_id: mask}} must have one mask per image id "
                f"(image_ids {ids[:10]}{' ...' if len(ids) > 10 else ''}): "
                + "; ".join(
                    p
                    for p in (f"missing {missing[:10]}" if missing else "", f"unknown {extra[:10]}" if extra else "")
                    if p
                )
            )
        by_id = {int(k): v for k, v in masks.items()}
        try:
            masks = torch.stack([_to_tensor(by_id[i], f"masks[{i}]", where) for i in ids])
        except RuntimeError as exc:
            raise InputError(f"{where}: masks[...] must all be H x W ({exc})") from None
    else:
        masks = _to_tensor(masks, "masks", where)
    return check_masks(masks, x, where, name="masks")


def _explainer_of(explainer, specs: dict, seed: int, model_name: str, ids, x, masks, where: str):
    """(ExplainAgain or None, the records' explainer name) of evaluate's `explainer` argument: the
    explainer is built only when a metric explains again (EvaluatorSpec.needs_explainer)."""
    from fudbench.explainers import EXPLAINERS
    from fudbench.explainers.again import explain_again
    from fudbench.explainers.base import Explainer
    from fudbench.explainers.seeds import explain_seed_key

    if isinstance(explainer, Explainer):
        name, settings = getattr(explainer, "name", "explainer"), None
    elif isinstance(explainer, dict) and len(explainer) == 1:
        name, settings = next(iter(explainer.items()))
    elif isinstance(explainer, str):
        name, settings = explainer, {}
    else:
        _raise(where, [f"explainer must be a name, {{name: settings}} or an Explainer, got {explainer!r}"])
    needing = [n for n, (s, resolved, _) in specs.items() if s.explainer_needed(resolved)]
    if not needing:
        return None, name
    key = explain_seed_key(seed, model_name, name, settings)
    if isinstance(explainer, Explainer):
        return explain_again(
            name, None, key, ids, masks=masks, where=" (argument explainer)", explainer=explainer
        ), name
    method = (settings or {}).get("method", name)
    if method not in EXPLAINERS and ":" not in str(method):
        _raise(
            where,
            [
                f"metrics {needing} explain again and explainer={explainer!r} names no registered "
                f"explainer ({', '.join(EXPLAINERS)}): pass a registered name, {{name: settings}} or an Explainer"
            ],
        )
    return explain_again(name, settings, key, ids, references=x, masks=masks, where=" (argument explainer)"), name


def evaluate(
    model,
    images,
    targets,
    attributions,
    metrics: Union[str, Sequence, dict] = ("insdel",),
    *,
    evaluation: Optional[dict] = None,
    assets: Optional[dict] = None,
    image_ids=None,
    seed: int = 0,
    model_name: str = "model",
    explainer: str = "explainer",
    device=None,
    masks=None,
    progress: bool = False,
):
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
    the paired noise as in the workflow (pass the workflow's to reproduce its numbers;
    model_name: the model's seed group, fudbench.core.seeding.seed_groups; an aliased
    metric entry draws its method's noise). masks: the images' ground-truth
    object masks, for the metrics that read them (a localisation metric such as
    `rma`; its spec's needs_masks): one H x W mask per image, non-zero = the
    object, either in the images' order ((N, H, W) or (N, 1, H, W)) or as a dict
    {image_id: mask} looked up by image_ids (ids are not positions); ignored by
    the other metrics. explainer: the name the records give the maps' explainer; for a
    metric that explains again (robustness, randomisation: its spec's needs_explainer)
    also the explainer itself: a registered method's name (`"ig"`, default settings),
    {entry: settings} as in a config's `explainers`, or an Explainer instance. It is
    seeded per image as the workflow's explain job seeds it (seed, model_name, image id)
    and must reproduce `attributions` (within explainers.again.REPRODUCE_RTOL) or the
    call fails naming it.
    progress: show the protocols' progress bars (default silent; the workflow's
    jobs always write theirs).

    Checked before any work, each error naming the argument (InputError, a
    ValueError): every metric's settings as the config checks an evaluator entry
    (`metrics['sensn']['n_subsets']: -1 is less than the minimum of 2`);
    evaluation['ratios'] finite, in (0, 1), distinct, and at least two where a
    metric's score is an area under the curve over them (fud, road, distill,
    gevaert); every asset a metric needs given and present (`metrics['fud']
    need(s) assets['score_model']: ...`), and the score model's image size and
    domain against the images (the synthetic benchmark's 32 px model on 224 px
    images is refused, naming both sizes); images, targets (below the model's
    number of logits, from one forward of one image), attributions (the images'
    N and H x W) and image_ids (one distinct integer per image). numpy arrays and
    float64 images / maps are converted (float32), not refused; 8-bit images are
    refused (pass images.float() / 255).
    """
    import pandas as pd
    import torch

    from fudbench.analysis.curves import derived_scores, per_image_scores
    from fudbench.core.bars import shown
    from fudbench.core.checks import check_attribution
    from fudbench.evaluators import build_evaluator, use_plugins
    from fudbench.workflow.pipeline import (
        attach_ood_reference,
        evaluate_maps,
        evaluator_noise,
        name_records,
        nonfinite_output_problems,
        paired_seed_key,
    )

    where = "fudbench.evaluate"
    # settings, ratios and assets first: cheap, and reported together
    entries = _metric_entries(metrics)
    problems, specs = _metric_problems(entries)
    use_plugins({name: entries[name] for name in specs})  # plug-in metrics' curves are scored like built-ins'
    specs = {name: (s, resolved, entries[name]) for name, (s, resolved) in specs.items()}
    more, evaluation = _evaluation_problems({} if evaluation is None else evaluation, specs)
    problems += more
    if assets is not None and not isinstance(assets, dict):
        problems.append(f"assets must be a dict {{key: file path}}, got {type(assets).__name__}")
        assets = {}
    assets = dict(assets or {})
    problems += _asset_problems(assets, specs)
    problems += _masks_problems(specs, masks)
    problems += _progress_problems(progress)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        problems.append(f"seed must be an integer, got {seed!r}")
    elif seed < 0:  # the config's seed is >= 0 (schema); a negative one fails inside numpy's generator
        problems.append(f"seed must be >= 0 (as the config's `seed`), got {seed}")
    _raise(where, problems)
    seed = int(seed)

    # the tensors
    x = _as_images(images, "images", where)
    device = torch.device(device) if device is not None else x.device
    x = x.to(device)
    y = _as_targets(targets, len(x), where, device)
    a = _as_float(attributions, "attributions", where)
    check_attribution(a, x, where, what="attributions")
    a = a.detach().to(device)
    ids = (
        list(range(len(x)))
        if image_ids is None
        else _check_per_image(image_ids, len(x), "image_ids", where, distinct=True)
    )
    if masks is not None:
        masks = _as_masks(masks, x, ids, where)
    if assets.get("score_model") and any("score_model" in s.assets(r) for s, r, _ in specs.values()):
        _raise(where, _score_model_problems(assets["score_model"], tuple(x.shape)))
    model.eval()
    _check_target_range(model, x, y, where)

    again, explainer = _explainer_of(explainer, specs, seed, model_name, ids, x, masks, where)
    reference = assets.pop("ood_reference", None)
    tap = attach_ood_reference(model, reference, model_name) if reference is not None else None
    frames = []
    try:
        with shown(progress):
            for name, settings in entries.items():
                evaluator = build_evaluator(name, settings, evaluation, assets, device)
                key = paired_seed_key(seed, model_name, evaluator_noise(name, settings))  # as the workflow's
                records, _ = evaluate_maps(evaluator, model, x, y, a, ids, key, masks=masks, explainer=again)
                frames.append(name_records(records, model_name, explainer, name))
                for line in nonfinite_output_problems(records, model_name, name, explainer):  # as the evaluate job
                    logging.getLogger(__name__).warning("%s; their scores are NaN", line)
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


# --- the example -----------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Example:
    """The default run's model and evaluated images, ready for explain / evaluate:

        ex = fudbench.load_example()
        maps = fudbench.explain(ex.model, ex.images, ex.targets, "ig")
        fudbench.evaluate(ex.model, ex.images, ex.targets, maps, metrics=["insdel", "rma"], masks=ex.masks,
                          image_ids=ex.ids, seed=ex.seed, model_name=ex.model_name)

    With ids, seed and model_name as here, evaluate gives the default run's numbers for these images."""

    model: object  # fudbench.models.classifiers.Classifier: takes images in [0, 1], returns logits; eval mode
    images: object  # (N, 3, H, W) float32 in [0, 1]
    labels: object  # (N,) int64 class indices (class_names)
    targets: object  # (N,) int64: the class the default run explains (config `target`: predicted or label)
    masks: object  # (N, H, W) float32, 1 = the object (for localisation metrics and the oracle map)
    ids: list  # the default run's image ids (its seeds and paired noise are keyed by them)
    class_names: list
    model_name: str  # the default run's model name (its seed group)
    seed: int  # the default run's seed
    assets: dict  # the shipped files the metrics that need one read: score_model (fud), surrogate (ffid)


def load_example(model: str = "cnn", n: Optional[int] = None, device=None) -> Example:
    """The default run's shipped classifier (`model`: a classifier entry of config/config.yaml with
    source: shipped, "cnn" or "vit"; its sha256 and training settings verified) and the synthetic
    benchmark's evaluated images: the first `n` test images (default data.n_eval), generated here
    as the workflow's make_dataset job does (no download, no run needed), with their labels, object
    masks and ids. device: where the model and tensors go (default cpu)."""
    import torch

    from fudbench.config.files import REPO, resolve_config
    from fudbench.core.fingerprint import classifier_training_inputs
    from fudbench.data.synthetic import SyntheticSpec, generate_split
    from fudbench.models.classifiers import load_classifier
    from fudbench.models.shipped import verify_shipped_checkpoint
    from fudbench.workflow.pipeline import _targets

    where = "fudbench.load_example"
    config = resolve_config([])
    classifiers = config["models"]["classifiers"]
    shipped = [m for m, c in classifiers.items() if c.get("source") == "shipped"]
    if model not in shipped:
        raise InputError(
            f"{where}: model must be one of the default run's shipped classifiers {shipped}, got {model!r}"
        )
    data = config["data"]
    n_test, offset = data["synthetic"]["n_test"], data.get("eval_offset", 0)
    n = data["n_eval"] if n is None else n
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or not 1 <= n <= n_test - offset:
        raise InputError(
            f"{where}: n must be an integer in [1, {n_test - offset}] (the benchmark's test images), got {n!r}"
        )
    device = torch.device("cpu" if device is None else device)

    path = REPO / classifiers[model]["shipped"]
    verify_shipped_checkpoint(path, classifier_training_inputs(config, model), f"the shipped classifier {model}")
    net = load_classifier(path, device)
    spec = SyntheticSpec.from_config(data["synthetic"])
    images, labels, masks = (a[offset : offset + n] for a in generate_split(spec, n_test, config["seed"], "test"))
    x = (torch.from_numpy(images).float() / 255).to(device)  # as load_eval_shard reads the eval npz
    y = torch.from_numpy(labels).to(device)
    assets = {"score_model": config["models"]["score_model"].get("shipped")}
    assets["surrogate"] = classifiers[model].get("shipped_surrogate")
    return Example(
        model=net,
        images=x,
        labels=y,
        targets=_targets(net, x, y, config["target"], what=f"the shipped classifier {model}"),
        masks=torch.from_numpy(masks).float().to(device),
        ids=list(range(n)),  # the workflow's ids: positions among the evaluated images
        class_names=list(spec.class_names),
        model_name=model,
        seed=int(config["seed"]),
        assets={k: str(REPO / v) for k, v in assets.items() if v},
    )
