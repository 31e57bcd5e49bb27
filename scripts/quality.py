"""Image quality of one evaluator x shard's intermediate samples (all models, the pooled explainers)."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import itertools

from fudbench.core.io import write_parquet
from fudbench.workflow.jobs import setup_job
from fudbench.workflow.pipeline import sample_quality

log = setup_job(snakemake)
p, w = snakemake.params, snakemake.wildcards
# The rule's expand() lists files in itertools.product order.
samples = dict(zip(itertools.product(p.models, p.explainers), snakemake.input.samples))
q = sample_quality(
    snakemake.input.images, samples, int(w.shard), p.shard_size, p.quality["metrics"], p.quality["images_per_shard"]
)
q.insert(1, "evaluator", w.evaluator)
write_parquet(snakemake.output[0], q)
log.info("%d samples measured", len(q))
