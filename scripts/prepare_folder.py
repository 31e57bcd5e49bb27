"""Read and preprocess your own images (data.source: folder), as the ImageNet path does."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)

from fudbench.data.folder import build_eval_set
from fudbench.data.imagenet import write_eval_set
from fudbench.workflow.jobs import setup_job

setup_job(snakemake)
p = snakemake.params
sample = build_eval_set(p.folder, p.n_eval)
write_eval_set(sample, snakemake.output, {"n_eval": p.n_eval, "resize": p.folder["resize"], "crop": p.folder["crop"]})
