"""Job-level functions behind the workflow's scripts: one shard of explaining
or evaluating. Kept here (not in scripts/) so they are unit-tested and usable
from a researcher's own code."""

from __future__ import annotations

import logging
import time

import numpy as np
import torch

from fudbench.data.shards import load_eval_shard
from fudbench.core.io import load_npz
from fudbench.core.masks import DEGENERATE_KINDS, degenerate_maps
from fudbench.core.seeding import derive_seed

log = logging.getLogger(__name__)


def _logits(model, x, batch_size: int = 256) -> torch.Tensor:
    with torch.no_grad():
        return torch.cat([model(x[i : i + batch_size]) for i in range(0, len(x), batch_size)])


def nonfinite_logits(logits: torch.Tensor) -> list[int]:
    """Positions of the images whose logits are not all finite (no prediction: argmax(NaN) = 0)."""
    return torch.nonzero(~torch.isfinite(logits).all(1)).flatten().tolist()


def _targets(
    model, x, labels, target_mode: str, batch_size: int = 256, what: str = "the model", ids=None
) -> torch.Tensor:
    """The class each image is explained and evaluated for. A model whose logits are
    NaN or inf on an image is refused here (NonFiniteLogitsError naming it and the
    image ids), before any explainer runs: every map and score would be NaN, and the
    degenerate-map warnings would blame the explainer."""
    from fudbench.models.gate import NonFiniteLogitsError, nonfinite_message

    logits = _logits(model, x, batch_size)
    bad = nonfinite_logits(logits)
    if bad:
        ids = list(range(len(x))) if ids is None else [int(i) for i in ids]
        raise NonFiniteLogitsError(
            nonfinite_message(
                what,
                [ids[j] for j in bad],
                len(x),
                label="image ids",
                fix="check the model (it passed the accuracy gate on other images)",
            )
        )
    if target_mode == "label":
        return torch.as_tensor(labels, device=x.device)
    return logits.argmax(1)


def nonfinite_model_ids(model, x, kinds: list[str], ids) -> list[int]:
    """The ids of the images with a degenerate map (`kinds`, masks.degenerate_maps) on which
    the model's logits are NaN or inf: one forward pass, only when some map is degenerate."""
    if not any(kinds):
        return []
    bad = set(nonfinite_logits(_logits(model, x)))
    return [int(i) for j, i in enumerate(ids) if j in bad and kinds[j]]


def report_degenerate_maps(explainer: str, kinds: list[str], ids, model_nonfinite=()) -> dict[str, int]:
    """Log, per kind, how many of the explainer's maps are degenerate and for which
    image ids (evaluations rank their pixels in a seeded random order); return the counts.
    model_nonfinite: ids of the images whose logits the model gives as NaN or inf; their
    maps are put down to the model, not to the explainer."""
    blamed = {int(i) for i in model_nonfinite}
    counts = {kind: [int(i) for i, k in zip(ids, kinds) if k == kind] for kind in DEGENERATE_KINDS}
    for kind, images in counts.items():
        own = [i for i in images if i not in blamed]
        if own:
            log.warning(
                "%s: %d degenerate map(s) (%s) for image id(s) %s: ranked in a seeded random order",
                explainer,
                len(own),
                kind,
                own[:20],
            )
    if blamed:
        log.warning(
            "the model's logits are NaN or inf on image id(s) %s: their %s maps are not the explainer's "
            "fault; check the model",
            sorted(blamed)[:20],
            explainer,
        )
    return {kind: len(images) for kind, images in counts.items()}


def explain_shard(
    model_path,
    images_path,
    shard: int,
    shard_size: int,
    explainer: str,
    settings: dict,
    target_mode: str,
    seed_key: tuple,
    device,
) -> dict:
    from fudbench.explainers import build_explainer
    from fudbench.models.classifiers import load_classifier

    model = load_classifier(model_path, device)
    data = load_eval_shard(images_path, shard, shard_size)
    x = torch.from_numpy(data["images"]).to(device)
    target = _targets(model, x, data["labels"], target_mode, what=f"the classifier {model_path}", ids=data["ids"])
    method = build_explainer(explainer, settings)
    method.prepare(torch.from_numpy(load_npz(images_path)["images"]).float().div(255).to(device))
    seeds = [derive_seed(*seed_key, int(i)) for i in data["ids"]]
    t0 = time.perf_counter()
    kwargs = {"masks": torch.from_numpy(data["masks"])} if method.uses_masks else {}
    attribution = method.explain(model, x, target, seeds=seeds, **kwargs)
    seconds = (time.perf_counter() - t0) / len(x)
    a = attribution.detach().float().cpu().numpy()  # (a plug-in's map is detached already: explainers.plugin)
    report_degenerate_maps(explainer, degenerate_maps(a), data["ids"])
    return {
        "attributions": a.astype(np.float32),
        "targets": target.cpu().numpy(),
        "ids": data["ids"],
        "labels": data["labels"],
        "seconds_per_image": np.float64(seconds),
    }


class NonFiniteOutputsError(RuntimeError):
    """evaluation.strict_nonfinite: the model's outputs were NaN or inf on perturbed inputs."""


def nonfinite_output_problems(records, model: str, evaluator: str, explainer: str) -> list[str]:
    """One line per curve of an evaluate job's records whose model outputs were NaN or inf on some
    perturbed inputs (fudbench.analysis.curves.nonfinite_outputs), naming model, evaluator, curve,
    explainer, the images and how the tables show them."""
    from fudbench.analysis.curves import nonfinite_outputs

    bad = nonfinite_outputs(records)
    problems = []
    for curve, g in records.assign(_bad=bad).groupby("curve", sort=False):
        images = sorted(int(i) for i in g.loc[g["_bad"], "image"].unique())
        if images:
            problems.append(
                f"model {model}, evaluator {evaluator}, curve {curve}, explainer {explainer}: the model's outputs "
                f"are NaN or inf on the perturbed inputs of {len(images)} of {g['image'].nunique()} images "
                f"(ids {images[:20]}{' ...' if len(images) > 20 else ''}; finite on the clean images)"
            )
    return problems


def evaluate_maps(evaluator, model, x, y, attributions, ids, seed_key: tuple, labels=None, masks=None, explainer=None):
    """An evaluator run on in-memory maps, as the evaluate job and fudbench.evaluate
    both record it: the records get each image's label (if given) and what is
    degenerate about its map (masks.degenerate_maps), and the feature-based OOD
    columns (feature_ood.DETECTORS, NaN without a reference: attach_ood_reference).
    masks: the images' ground-truth object masks (N, H, W) in x's order, handed to
    an evaluator that reads them (Evaluator.needs_masks), as explain_shard hands
    them to an explainer that uses them. explainer: the maps' explainer
    (fudbench.explainers.again.ExplainAgain) for an evaluator that explains again
    (Evaluator.needs_explainer): it must reproduce the maps first (check_reproduces
    raises naming it). Returns (records, samples)."""
    from fudbench.analysis.feature_ood import with_detector_columns

    kwargs = {"masks": masks} if getattr(evaluator, "needs_masks", False) else {}
    if getattr(evaluator, "needs_explainer", False) and explainer is not None:
        explainer.check_reproduces(model, x, y, ids, attributions)
        kwargs["explainer"] = explainer
    records, samples = evaluator.run(model, x, y, attributions, ids, seed_key, **kwargs)
    with_detector_columns(records)  # NaN where the model had no OOD reference attached (or the protocol none)
    ids = [int(i) for i in ids]
    if labels is not None:
        records["label"] = records["image"].map(dict(zip(ids, [int(v) for v in labels])))
    records["degenerate_map"] = records["image"].map(dict(zip(ids, degenerate_maps(attributions.cpu()))))
    return records, samples


def name_records(records, model: str, explainer: str, evaluator: str):
    """The columns that say whose records they are, first (in place)."""
    for position, (column, value) in enumerate((("model", model), ("explainer", explainer), ("evaluator", evaluator))):
        records.insert(position, column, value)
    return records


def attach_ood_reference(model, reference_path, name: str = "model"):
    """Hook the model so that every forward's logits carry its penultimate features
    and the detector fitted in `reference_path` (rule ood_reference): the records
    of the protocols then get the mahalanobis and knn columns (protocols.base).
    The hooks do not change the logits. Returns the FeatureTap, or None when the
    reference is unavailable or the model has no nn.Linear (logged; columns NaN)."""
    from fudbench.analysis.feature_ood import FeatureDetector
    from fudbench.models.features import FeatureTap

    detector = FeatureDetector.load(reference_path)
    if not detector.available:
        return None
    try:
        return FeatureTap(model, name, detector)
    except ValueError as exc:
        log.warning("%s; the mahalanobis and knn columns are NaN", exc)
        return None


class ShardEvaluation:
    """One evaluator on one model x shard, built once (model, images, score
    model ...) and run for any number of explainers' attributions.
    ood_reference: the model's feature-OOD reference (rule ood_reference), or None."""

    def __init__(
        self,
        model_path,
        images_path,
        shard: int,
        shard_size: int,
        evaluator: str,
        settings: dict,
        evaluation: dict,
        assets: dict,
        device,
        ood_reference=None,
        explainers=None,
    ):
        from fudbench.evaluators import build_evaluator
        from fudbench.models.classifiers import load_classifier

        # {explainer entry: (settings, explain seed key)} for an evaluator that explains again
        self.explainers = explainers or {}
        self.images_path = images_path
        self.shard = shard
        self.model = load_classifier(model_path, device)
        if ood_reference is not None:
            attach_ood_reference(self.model, ood_reference, str(model_path))
        self.data = load_eval_shard(images_path, shard, shard_size)
        self.x = torch.from_numpy(self.data["images"]).to(device)
        self.device = device
        self.evaluator = build_evaluator(evaluator, settings, evaluation, assets, device)
        # the shard's ground-truth masks, in the images' order, for an evaluator that reads them
        self.masks = None
        if getattr(self.evaluator, "needs_masks", False):
            if not self.data["has_masks"]:
                raise ValueError(
                    f"evaluator {evaluator!r} reads ground-truth object masks, and {images_path} has "
                    f"none (has_masks false: ImageNet, or a folder without data.folder.masks); give "
                    f"masks (docs/your_own.md) or drop the entry"
                )
            self.masks = torch.from_numpy(self.data["masks"]).to(device)

    def explainer(self, name: str):
        """The explainer entry `name` built as its explain job built it (explainers.again.explain_again),
        for an evaluator that explains again; None for the others."""
        from fudbench.explainers.again import explain_again

        if not getattr(self.evaluator, "needs_explainer", False):
            return None
        if name not in self.explainers:
            raise ValueError(
                f"evaluator {self.evaluator.alias or self.evaluator.name!r} explains again and the job was "
                f"not given explainer {name!r}'s entry (rules/evaluate.smk params.explainer_entries)"
            )
        settings, seed_key = self.explainers[name]
        references = torch.from_numpy(load_npz(self.images_path)["images"]).float().div(255).to(self.device)
        return explain_again(
            name,
            settings,
            seed_key,
            self.data["ids"],
            references=references,
            masks=self.data["masks"] if self.data["has_masks"] else None,
            where=f" (config key 'explainers.{name}')",
        )

    def run(self, attributions_path, seed_key: tuple, explainer: str | None = None):
        """Returns (records DataFrame, {curve: samples (N, steps, C, H, W) float16}).
        explainer: the entry that made the maps (an evaluator that explains again rebuilds it)."""
        attr = load_npz(attributions_path, made_by="explain")
        ids = self.data["ids"]
        if not np.array_equal(attr["ids"], ids):
            raise RuntimeError(
                f"{attributions_path} holds images {attr['ids'].tolist()}, expected shard "
                f"{self.shard} = {ids.tolist()}; delete it so the explain job reruns"
            )
        y = torch.from_numpy(attr["targets"]).to(self.device)
        a = torch.from_numpy(attr["attributions"]).to(self.device)
        again = self.explainer(explainer) if explainer is not None else None
        records, samples = evaluate_maps(
            self.evaluator,
            self.model,
            self.x,
            y,
            a,
            ids,
            seed_key,
            labels=self.data["labels"],
            masks=self.masks,
            explainer=again,
        )
        samples["ids"] = ids
        return records, samples


def evaluate_shard(
    model_path,
    images_path,
    attributions_path,
    shard: int,
    shard_size: int,
    evaluator: str,
    settings: dict,
    evaluation: dict,
    assets: dict,
    seed_key: tuple,
    device,
    ood_reference=None,
):
    """One evaluator on one model x explainer x shard.
    Returns (records DataFrame, {curve: samples (N, steps, C, H, W) float16})."""
    job = ShardEvaluation(
        model_path, images_path, shard, shard_size, evaluator, settings, evaluation, assets, device, ood_reference
    )
    return job.run(attributions_path, seed_key)


def map_digest(attributions_path) -> str:
    """sha256 of an attributions file's maps, targets and image ids (not its
    wall time): two explainers with the same digest are evaluated alike."""
    import hashlib

    attr = load_npz(attributions_path, made_by="explain")
    h = hashlib.sha256()
    for key in ("attributions", "targets", "ids"):
        a = np.ascontiguousarray(attr[key])
        h.update(f"{key}{a.dtype}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def paired_seed_key(seed: int, seed_group: str, noise: str) -> tuple:
    """The seed key of an evaluation: per-sample seeds add the image id, the
    ratio or fraction and the draw, but never the explainer (paired noise).
    seed_group: the model's (seeding.seed_groups; a model without a twin is
    its own), so training seeds of one model are evaluated under the same
    noise; noise: evaluator_noise(entry, settings), so a variant entry draws
    the noise of its method's paper entry."""
    return (seed, "evaluate", seed_group, noise)


def evaluator_noise(entry: str, settings: dict | None) -> str:
    """The name an evaluator entry's noise is keyed by: its registered method
    (`fud_renoise: {method: fud, ...}` draws what `fud` draws for the same
    image, ratio and draw), or the entry's own name for a plug-in, whose
    import path may be spelled several ways. An entry with `noise_draw: k`
    (k > 0; fud) draws an independent k-th noise instead: `fud#draw1`."""
    from fudbench.evaluators import EVALUATORS, method_of

    method = method_of(entry, settings)
    draw = int((settings or {}).get("noise_draw") or 0)
    noise = method if method in EVALUATORS else entry
    return f"{noise}#draw{draw}" if draw else noise


def explains_again(evaluator: str, settings: dict | None) -> bool:
    """Whether a config entry's evaluator calls the explainer again (EvaluatorSpec.needs_explainer)."""
    from fudbench.evaluators import spec_of

    s = spec_of(evaluator, settings)
    return s.explainer_needed(s.resolve(settings))


def evaluate_explainers(
    model: str,
    evaluator: str,
    explainers: dict,
    *,
    model_path,
    images_path,
    shard: int,
    shard_size: int,
    settings: dict,
    evaluation: dict,
    assets: dict,
    seed: int,
    device,
    kept_images=None,
    cache=None,
    ood_reference=None,
    seed_group: str | None = None,
    explainer_entries: dict | None = None,
) -> dict:
    """The evaluate job: one evaluator on one model x shard for every explainer.

    explainers: {name: (attributions path, records output path, samples output path)}.
    ood_reference: the model's feature-OOD reference (rule ood_reference): the
    records get its mahalanobis and knn scores (NaN without one).
    Each explainer's records and samples are written as soon as they are done
    (a killed job keeps them in the cache). With a WorkCache, an explainer
    whose inputs and settings are unchanged is copied from it instead of
    recomputed; the evaluator itself (score model etc.) is only built if some
    explainer needs computing.
    Paired noise (common random numbers): the seed key names the run's seed,
    the model's seed group (default: the model) and the evaluator's method
    (paired_seed_key), never the explainer, so every explainer of an image is
    evaluated under the same noise, fills and subsets (two names for the same
    map give identical records), numbers do not depend on how explainers are
    grouped into jobs, and protocols may share the work that does not depend
    on the attribution (Sensitivity-N).
    explainer_entries: {explainer: its config entry's settings}, for an evaluator that
    explains again (EvaluatorSpec.needs_explainer): each explainer is rebuilt with its
    explain job's seeds (explainers.seeds.explain_seed_key) and must reproduce its
    stored maps; its settings, seed key and plug-in sources key its cache entry, and
    the "same map" shortcut does not apply (two entries with one map explain apart).
    Returns {"computed": [names], "cached": [names]}.
    """
    from fudbench.core.io import read_parquet, write_npz, write_parquet
    from fudbench.core.hardware import settings_precision
    from fudbench.core.plugins import entry_sources
    from fudbench.explainers.seeds import explain_seed_key
    from fudbench.workflow.work_cache import work_key

    job, done, same_map, nonfinite = None, {"computed": [], "cached": []}, {}, []
    # not a setting of the evaluator: it decides whether non-finite outputs fail the job, not any number
    strict = bool(evaluation.get("strict_nonfinite", False))
    evaluation = {k: v for k, v in evaluation.items() if k != "strict_nonfinite"}
    files = {"model": model_path, "images": images_path, **assets}
    # plug-in imputers' source files (their helpers included): an edit reruns the job and must not hit the cache
    files.update({f"plugin:{f}": f for f in entry_sources(settings)})
    if ood_reference is not None:
        files["ood_reference"] = ood_reference
    seed_key = paired_seed_key(seed, seed_group or model, evaluator_noise(evaluator, settings))
    again = explains_again(evaluator, settings)
    rebuilt = {}
    for explainer, (attributions, records_out, samples_out) in explainers.items():
        outputs = {".parquet": records_out, ".npz": samples_out}
        explained, explainer_files = {}, {}
        if again:
            if explainer not in (explainer_entries or {}):
                raise ValueError(
                    f"evaluator {evaluator!r} explains again and was not given explainer {explainer!r}'s "
                    f"config entry (explainer_entries)"
                )
            entry = explainer_entries[explainer] or {}
            rebuilt[explainer] = (entry, explain_seed_key(seed, seed_group or model, explainer, entry))
            # what the explainer's output depends on: method and settings, seeds, plug-in sources
            explained = {"explainer": {"entry": explainer, "settings": entry, "seed_key": rebuilt[explainer][1]}}
            explainer_files = {f"explainer_plugin:{f}": f for f in entry_sources(entry)}
        key = work_key(
            {
                "evaluator": evaluator,
                "settings": settings,
                "evaluation": evaluation,
                "seed_key": seed_key,
                "shard": shard,
                "shard_size": shard_size,
                "kept_images": kept_images,
                "device": str(device),
                # auto precision resolves per machine: a bf16 result is not reused on an fp32 machine
                "precision": settings_precision(settings, device),
                **explained,
            },
            {**files, **explainer_files, "attributions": attributions},
        )
        hit = cache.get(explainer, key, outputs) if cache is not None else None
        if hit is not None and cache.restore(hit, outputs):  # False: a bad entry, dropped (logged): recompute
            done["cached"].append(explainer)
            log.info("%s: unchanged inputs and settings, copied from the work cache", explainer)
            nonfinite += nonfinite_output_problems(read_parquet(records_out), model, evaluator, explainer)
            continue
        t0 = time.perf_counter()
        digest = map_digest(attributions)
        if (
            digest in same_map and not again
        ):  # bit-identical map (e.g. degrade at p = 0): paired noise makes its records equal
            twin, records, samples = same_map[digest]
            records = records.copy()
            log.info("%s: the same map as %s; its records copied (paired noise)", explainer, twin)
        else:
            if job is None:
                job = ShardEvaluation(
                    model_path,
                    images_path,
                    shard,
                    shard_size,
                    evaluator,
                    settings,
                    evaluation,
                    assets,
                    device,
                    ood_reference,
                    explainers=rebuilt,
                )
            job.explainers.update(rebuilt)
            records, samples = job.run(attributions, seed_key, explainer if again else None)
            same_map[digest] = (explainer, records.copy(), samples)
        name_records(records, model, explainer, evaluator)
        nonfinite += nonfinite_output_problems(records, model, evaluator, explainer)
        write_parquet(records_out, records)
        # keep the intermediate images of the first images only (quality and gallery read no more)
        write_npz(
            samples_out,
            **{
                k: a if k.startswith("removed_") or kept_images is None else a[:kept_images] for k, a in samples.items()
            },
        )
        if cache is not None:
            cache.put(explainer, key, outputs)
        done["computed"].append(explainer)
        log.info(
            "%s: %d records in %.1f s (%.4f s per sample on average)",
            explainer,
            len(records),
            time.perf_counter() - t0,
            records["seconds"].mean(),
        )
    for line in nonfinite:
        log.warning(
            "%s; their scores are left out of the means and marked in the tables ('n/a: N of M non-finite')", line
        )
    if nonfinite and strict:
        raise NonFiniteOutputsError(
            "evaluation.strict_nonfinite is true and the model's outputs are non-finite:\n  "
            + "\n  ".join(nonfinite)
            + "\nfix the model (e.g. an epsilon where it divides by a per-image statistic), or set "
            "evaluation.strict_nonfinite: false to run on with those scores marked n/a"
        )
    return done


def srg_reference_shard(
    model_path,
    images_path,
    shard: int,
    shard_size: int,
    settings: dict,
    target_mode: str,
    assets: dict,
    seed: int,
    device,
):
    """SRG's R-OMS curves (random superpixel orderings, so no explainer) of one
    model x shard, for every configured imputer: records as the srg evaluator
    writes them, before the label column."""
    from fudbench.evaluators import spec
    from fudbench.evaluators.base import Evaluator
    from fudbench.evaluators.faithfulness.srg import srg_curves
    from fudbench.models.classifiers import load_classifier

    model = load_classifier(model_path, device)
    data = load_eval_shard(images_path, shard, shard_size)
    x = torch.from_numpy(data["images"]).to(device)
    y = _targets(model, x, data["labels"], target_mode, what=f"the classifier {model_path}", ids=data["ids"])
    # R-OMS seeds use only the first element of the key (the run's seed), as in evaluate jobs
    ev = Evaluator("srg_reference", srg_curves(spec("srg").resolve(settings), assets, device, kinds=("roms",)))
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
        for curve, arr in load_npz(path, made_by="evaluate").items():
            if curve == "ids" or curve.startswith("removed_"):
                continue
            steps = arr.shape[1]
            # an image with fewer steps than the widest leaves NaN samples past its last one
            image, step = np.nonzero(np.isfinite(arr[:n].reshape(n, steps, -1)).all(axis=2))
            s = torch.from_numpy(arr[:n][image, step].astype(np.float32))
            q = quality_metrics(s, originals[torch.from_numpy(image)], metrics=metrics)
            frames.append(
                pd.DataFrame(
                    {
                        "model": model,
                        "explainer": explainer,
                        "curve": curve,
                        "image": data["ids"][:n][image],
                        "step": step,
                        **q,
                    }
                )
            )
    if not frames:  # evaluators that keep no intermediate samples (e.g. srg)
        return pd.DataFrame(columns=["model", "explainer", "curve", "image", "step", *metrics])
    return pd.concat(frames, ignore_index=True)
