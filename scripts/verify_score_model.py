"""Verify the shipped score model against the current config, then use it."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import shutil

from fudbench.core.io import atomic_path, write_json
from fudbench.workflow.jobs import setup_job
from fudbench.models.shipped import verify_shipped_checkpoint

log = setup_job(snakemake)
manifest = verify_shipped_checkpoint(snakemake.input.shipped, snakemake.params.training_inputs)
log.info("shipped checkpoint %s verified (sha256 %s)", snakemake.input.shipped, manifest["sha256"])
with atomic_path(snakemake.output.model) as tmp:
    shutil.copyfile(snakemake.input.shipped, tmp)
write_json(snakemake.output.manifest, manifest)
