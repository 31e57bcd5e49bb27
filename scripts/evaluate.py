"""One evaluator on one model x shard, for every explainer: per-image records
and samples per explainer (unchanged explainers come from the work cache)."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
from fudbench.core.device import resolve_device
from fudbench.workflow.jobs import setup_job
from fudbench.workflow.pipeline import evaluate_explainers
from fudbench.workflow.work_cache import WorkCache

log = setup_job(snakemake)
p, w = snakemake.params, snakemake.wildcards
done = evaluate_explainers(
    w.model,
    w.evaluator,
    {
        e: (a, r, s)
        for e, a, r, s in zip(
            p.explainers, snakemake.input.attributions, snakemake.output.records, snakemake.output.samples
        )
    },
    model_path=snakemake.input.model,
    images_path=snakemake.input.images,
    shard=int(w.shard),
    shard_size=p.shard_size,
    settings=p.evaluator,
    evaluation=p.evaluation,
    assets={
        k: v
        for k, v in snakemake.input.items()
        if k not in ("model", "images", "attributions", "ood_reference") and not k.startswith("plugin")
    },
    seed=p.job["seed"],
    device=resolve_device(p.job["device"]),
    kept_images=p.kept_images,
    cache=WorkCache(p.cache),
    ood_reference=getattr(snakemake.input, "ood_reference", None),
    seed_group=p.seed_group,
    explainer_entries=p.explainer_entries,
)
log.info("%d explainer(s) computed, %d copied from the work cache", len(done["computed"]), len(done["cached"]))
