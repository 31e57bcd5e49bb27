"""Verify the shipped score model against the current config, then use it."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import shutil

from fudbench.core.io import atomic_path, write_json
from fudbench.workflow.jobs import setup_job
from fudbench.models.shipped import verify_shipped_checkpoint

log = setup_job(snakemake)
manifest = verify_shipped_checkpoint(snakemake.input.shipped, snakemake.params.training_inputs)
log.info("shipped checkpoint %s verified (sha256 %s)", snakemake.input.shipped, manifest["sha256"])
if snakemake.params.other_data:
    log.info(
        "trained on other data on purpose (models.score_model.trained_on_other_data): its data settings, not the run's, were compared"
    )
with atomic_path(snakemake.output.model) as tmp:
    shutil.copyfile(snakemake.input.shipped, tmp)
write_json(snakemake.output.manifest, manifest)
