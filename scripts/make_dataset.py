"""Generate the synthetic benchmark (splits, evaluated subset, class names)."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
from fudbench.data.synthetic import make_benchmark
from fudbench.core.io import write_json, write_npz
from fudbench.workflow.jobs import setup_job

log = setup_job(snakemake)
p = snakemake.params
bench = make_benchmark(p.synthetic, p.n_eval, p.seed, p.eval_offset)
for split, arrays in bench["splits"].items():
    write_npz(snakemake.output[split], **arrays)
    log.info("%s: %d images", split, len(arrays["labels"]))
write_json(snakemake.output.classes, bench["class_names"])
