"""SRG's R-OMS curves of one model x shard, computed once for all explainers."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
from fudbench.core.device import resolve_device
from fudbench.core.io import write_parquet
from fudbench.workflow.jobs import setup_job
from fudbench.workflow.pipeline import srg_reference_shard

log = setup_job(snakemake)
p, w = snakemake.params, snakemake.wildcards
records = srg_reference_shard(
    model_path=snakemake.input.model,
    images_path=snakemake.input.images,
    shard=int(w.shard),
    shard_size=p.shard_size,
    settings=p.evaluator,
    target_mode=p.target,
    assets={k: v for k, v in snakemake.input.items() if k not in ("model", "images") and not k.startswith("plugin")},
    seed=p.job["seed"],
    device=resolve_device(p.job["device"]),
)
write_parquet(snakemake.output[0], records)
log.info("%d R-OMS records (%s)", len(records), ", ".join(sorted(records["curve"].unique())))
