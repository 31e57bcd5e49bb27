"""Keep a few images' intermediate samples (shard 0) for qualitative figures."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import itertools

from fudbench.core.io import write_npz
from fudbench.workflow.jobs import setup_job
from fudbench.report.gallery import build_gallery

setup_job(snakemake)
p, inp = snakemake.params, snakemake.input
# The rule's expand() lists files in itertools.product order.
attributions = dict(zip(itertools.product(p.models, p.explainers), inp.attributions))
samples = dict(zip(itertools.product(p.models, p.explainers, p.evaluators), inp.samples))
write_npz(snakemake.output[0], **build_gallery(inp.images, attributions, samples, p.n_images))
