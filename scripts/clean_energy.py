"""OOD scores of the clean evaluated images under each classifier (Table 2's ID
set): Energy, and the feature-based Mahalanobis and k-NN distances against the
classifier's reference (rule ood_reference); and the same scores of the sanity
copies, the clean images with 10% of their pixels zeroed (Table 2's sanity row)."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd
import torch

from fudbench.models.energy import energies_and_features
from fudbench.analysis.feature_ood import FeatureDetector, nan_scores, zero_pixels
from fudbench.core.device import resolve_device
from fudbench.core.io import load_npz, write_parquet
from fudbench.workflow.jobs import setup_job
from fudbench.models.classifiers import load_classifier

log = setup_job(snakemake)
p = snakemake.params
device = resolve_device(p.job["device"])
raw = load_npz(snakemake.input.images)["images"]
ids = list(range(len(raw)))  # image id = position in the eval set
sane, _ = zero_pixels(raw, ids, p.job["seed"])
images = torch.from_numpy(raw).float().div(255).to(device)
sanity_images = torch.from_numpy(sane).float().div(255).to(device)


def scores(model, name, detector, x):
    energy, features = energies_and_features(model, x, name=name)
    ood = detector.score(features) if features is not None else nan_scores(len(x))
    return {"energy": energy, **ood}


frames = []
for model, path, reference in zip(p.models, snakemake.input.classifiers, snakemake.input.references):
    classifier, detector = load_classifier(path, device), FeatureDetector.load(reference)
    clean, sanity = scores(classifier, model, detector, images), scores(classifier, model, detector, sanity_images)
    frames.append(
        pd.DataFrame({"model": model, "image": ids, **clean, **{f"sanity_{k}": v for k, v in sanity.items()}})
    )
    log.info(
        "%s: mean clean energy %.3f, 10%%-zeroed %.3f; Mahalanobis %.3f vs %.3f",
        model,
        clean["energy"].mean(),
        sanity["energy"].mean(),
        clean["mahalanobis"].mean(),
        sanity["mahalanobis"].mean(),
    )
write_parquet(snakemake.output[0], pd.concat(frames, ignore_index=True))
