"""Concatenate every evaluate job's records; compute per-image scores and tau."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd

from fudbench.analysis.curves import derived_scores, per_image_scores
from fudbench.core.io import read_every, read_parquet, write_parquet
from fudbench.workflow.jobs import setup_job

log = setup_job(snakemake)
# every corrupt records file is deleted and noted in this run (fudbench.core.damage), not one per run
records = pd.concat(read_every(snakemake.input, lambda p: read_parquet(p, made_by="evaluate")), ignore_index=True)
per_image = per_image_scores(records)
# scores combining several curves of an image (MRG/LRG/SRG, ROAD accuracy)
per_image = pd.concat([per_image, derived_scores(records, per_image)], ignore_index=True)
write_parquet(snakemake.output.records, records)
write_parquet(snakemake.output.per_image, per_image)
log.info("%d records from %d files -> %d per-image rows", len(records), len(snakemake.input), len(per_image))
