"""Energy of the clean evaluated images under each classifier (Table 2's ID set)."""
import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd
import torch

from fudbench.analysis.energy import energies
from fudbench.device import resolve_device
from fudbench.io import load_npz, write_parquet
from fudbench.jobs import setup_job
from fudbench.models.classifiers import load_classifier

setup_job(snakemake)
p = snakemake.params
device = resolve_device(p.job["device"])
images = torch.from_numpy(load_npz(snakemake.input.images)["images"]).float().div(255).to(device)
frames = [pd.DataFrame({"model": model, "image": range(len(images)),
                        "energy": energies(load_classifier(path, device), images)})
          for model, path in zip(p.models, snakemake.input.classifiers)]
write_parquet(snakemake.output[0], pd.concat(frames, ignore_index=True))
