"""Image quality of one evaluator x shard's intermediate samples (all models and explainers)."""
import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)

import pandas as pd

from fudbench.io import write_parquet
from fudbench.jobs import setup_job
from fudbench.pipeline import sample_quality

log = setup_job(snakemake)
p, w = snakemake.params, snakemake.wildcards
paths = iter(snakemake.input.samples)  # the rule's expand() order: models x explainers
frames = []
for model in p.models:
    q = sample_quality(snakemake.input.images, {e: next(paths) for e in p.explainers}, int(w.shard),
                       p.shard_size, p.quality["metrics"], p.quality["images_per_shard"])
    q.insert(0, "model", model)
    frames.append(q)
q = pd.concat(frames, ignore_index=True)
q.insert(1, "evaluator", w.evaluator)
write_parquet(snakemake.output[0], q)
log.info("%d samples measured", len(q))
