"""Sample and preprocess the ImageNet validation images (paper profile)."""
import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd

from fudbench.data.imagenet import build_eval_set, eval_arrays
from fudbench.io import write_csv, write_json, write_npz
from fudbench.jobs import setup_job

N_EXAMPLES = 16  # images in the dataset-examples figure

log = setup_job(snakemake)
p, out = snakemake.params, snakemake.output
sample = build_eval_set(p.imagenet, p.n_eval)
write_npz(out.eval, **eval_arrays(sample))
write_csv(out.manifest, pd.DataFrame(sample["manifest"]), index=False)
write_json(out.classes, sample["class_names"])
write_npz(out.examples, images=sample["images"][:N_EXAMPLES], labels=sample["labels"][:N_EXAMPLES])
write_json(out.summary, {**sample["stats"], "n_eval": p.n_eval, "resize": p.imagenet["resize"],
                         "crop": p.imagenet["crop"]})
