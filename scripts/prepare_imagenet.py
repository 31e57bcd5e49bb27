"""Sample and preprocess the ImageNet validation images (paper profile)."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)

from fudbench.data.imagenet import build_eval_set, write_eval_set
from fudbench.workflow.jobs import setup_job

log = setup_job(snakemake)
p = snakemake.params
sample = build_eval_set(p.imagenet, p.n_eval)
write_eval_set(
    sample, snakemake.output, {"n_eval": p.n_eval, "resize": p.imagenet["resize"], "crop": p.imagenet["crop"]}
)
