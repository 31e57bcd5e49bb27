"""Attributions of one explainer for one model on one shard."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
from fudbench.core.device import resolve_device
from fudbench.core.io import write_npz
from fudbench.workflow.jobs import setup_job
from fudbench.workflow.pipeline import explain_shard
from fudbench.explainers.seeds import explain_seed_key

log = setup_job(snakemake)
p, w = snakemake.params, snakemake.wildcards
result = explain_shard(
    model_path=snakemake.input.model,
    images_path=snakemake.input.images,
    shard=int(w.shard),
    shard_size=p.shard_size,
    explainer=w.explainer,
    settings=p.explainer,
    target_mode=p.target,
    seed_key=explain_seed_key(p.job["seed"], p.seed_group, w.explainer, p.explainer),
    device=resolve_device(p.job["device"]),
)
write_npz(snakemake.output[0], **result)
log.info("%d images, %.4f s/image", len(result["ids"]), float(result["seconds_per_image"]))
