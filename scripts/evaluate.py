"""One evaluator on one model x explainer x shard: per-image records and samples."""
import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
from fudbench.device import resolve_device
from fudbench.io import write_npz, write_parquet
from fudbench.jobs import setup_job
from fudbench.pipeline import evaluate_shard

log = setup_job(snakemake)
p, w = snakemake.params, snakemake.wildcards
records, samples = evaluate_shard(
    model_path=snakemake.input.model, images_path=snakemake.input.images,
    attributions_path=snakemake.input.attributions, shard=int(w.shard), shard_size=p.shard_size,
    evaluator=w.evaluator, settings=p.evaluator, evaluation=p.evaluation,
    assets={k: snakemake.input.get(k) for k in ("score_model", "reference_images", "surrogate", "srg_reference")},
    seed_key=(p.job["seed"], "evaluate", w.model, w.explainer, w.evaluator),
    device=resolve_device(p.job["device"]),
)
records.insert(0, "model", w.model)
records.insert(1, "explainer", w.explainer)
records.insert(2, "evaluator", w.evaluator)
write_parquet(snakemake.output.records, records)
# keep the intermediate images of the first images only (quality and gallery read no more)
k = p.kept_images
write_npz(snakemake.output.samples, **{key: a if key.startswith("removed_") or k is None else a[:k]
                                       for key, a in samples.items()})
log.info("%d records, %.4f s per sample on average", len(records), records["seconds"].mean())
