"""The feature-OOD reference of one classifier (Mahalanobis and k-NN, Table 2):
penultimate features of a seeded subset of reference images, class means,
tied precision with a small ridge, the normalised feature bank
(fudbench.analysis.feature_ood). Written as unavailable, with the reason, where
the data source has no reference images or the classifier no nn.Linear: the
detectors then score NaN and the tables leave them out."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import torch

from fudbench.analysis.feature_ood import fit_reference, reference_images, save_reference, unavailable_reference
from fudbench.core.device import resolve_device
from fudbench.workflow.jobs import setup_job
from fudbench.models.classifiers import load_classifier
from fudbench.models.features import last_linear, penultimate_features

log = setup_job(snakemake)
p, model_name = snakemake.params, snakemake.wildcards.model
ref = p.reference
device = resolve_device(p.job["device"])
model = load_classifier(snakemake.input.model, device)
images, layer = None, ""
try:
    layer = last_linear(model, model_name)[0] or "(the model itself)"
except ValueError as exc:
    reason = str(exc)
else:
    spec = {
        **ref["images"],
        **{k: getattr(snakemake.input, k) for k in ("train", "manifest") if hasattr(snakemake.input, k)},
    }
    images, labels, reason = reference_images(spec, p.job["seed"], ref["n_images"])
    log.info("%s: features of %s, input of layer %s", model_name, reason, layer)
if images is not None:
    _, features = penultimate_features(model, torch.from_numpy(images), batch_size=ref["batch_size"], name=model_name)
    reference = fit_reference(features, labels, ridge=ref["ridge"], knn_k=ref["knn_k"])
    log.info(
        "%s: %d images, %d classes, %d features, ridge %.3g (absolute %.3g)",
        model_name,
        len(features),
        len(reference["classes"]),
        features.shape[1],
        ref["ridge"],
        float(reference["ridge_absolute"]),
    )
else:
    reference = unavailable_reference(reason)
    log.warning("%s: no OOD reference (%s): its mahalanobis and knn scores are NaN", model_name, reason)
save_reference(snakemake.output[0], reference, layer=layer)
