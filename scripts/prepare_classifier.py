"""A pretrained classifier (torchvision's, or your own from a factory): verify
and load its weights, record its accuracy on the evaluated images, write it in
the workflow's checkpoint format."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)

import torch

from fudbench.data.splits import load_split
from fudbench.core.device import resolve_device
from fudbench.core.io import write_json
from fudbench.workflow.jobs import setup_job
from fudbench.models.classifiers import output_classes, pretrained_classifier, save_classifier
from fudbench.models.gate import NonFiniteLogitsError, accuracy_gate, gate_line
from fudbench.models.torchvision_models import is_torchvision, weights_path
from fudbench.models.training import accuracy
from fudbench.core.plugins import plugin_sources, sources_digest

log = setup_job(snakemake)
p, w = snakemake.params, snakemake.wildcards
device = resolve_device(p.job["device"])
images, labels, _ = load_split(snakemake.input.images)
model, digest = pretrained_classifier(p.classifier, w.model, images.shape[-1])
n_classes = output_classes(model, images, labels, w.model)  # the model's, not the data's, class count
if is_torchvision(p.classifier["arch"]):
    source = {"weights": p.classifier["weights"], "weights_file": str(weights_path(p.classifier))}
else:
    # the factory's source files by content: the checkpoint changes when they do, so no work cache
    # (keyed by the checkpoint's content) reuses results of the old code
    source = {
        "factory": p.classifier["factory"],
        "weights_file": p.classifier.get("weights"),
        "factory_sources": sources_digest(plugin_sources(p.classifier["factory"])),
    }
log.info("%s: %s (sha256 %s), %d classes", w.model, source, digest, n_classes)
origin = ", ".join(f"{k} {source[k]}" for k in ("factory", "weights", "weights_file") if source.get(k))
try:
    with torch.no_grad():
        acc = accuracy(
            model.to(device),
            images.to(device),
            labels.to(device),
            batch_size=128,
            name=f"classifier {w.model!r} ({origin})",
            fix=f"check the network and the weights of models.classifiers.{w.model} on [0, 1] images "
            f"(a factory's forward, its mean/std, a weights file that does not fit it)",
        )
except NonFiniteLogitsError as exc:
    raise SystemExit(f"[gate] {exc}") from exc
gate, gate_key = accuracy_gate(w.model, p.classifier, p.gates)
metrics = {
    "model": w.model,
    "arch": p.classifier["arch"],
    **source,
    "sha256": digest,
    "test_accuracy": acc,
    "accuracy_on": f"the {len(labels)} evaluated images",
    "gate_min_test_accuracy": gate,
    "gate_key": gate_key,
    "passes_gate": acc >= gate,
    "parameters": sum(t.numel() for t in model.parameters()),
}
msg = gate_line(w.model, f"top-1 accuracy on the {len(labels)} evaluated images", acc, gate, gate_key)
print(msg, flush=True)
if acc < gate and p.gates["strict"]:
    raise SystemExit(
        msg + ": below the gate and models.gates.strict is true; check the labels (data.imagenet."
        "labels / synsets, data.folder.labels) and the weights"
    )
save_classifier(snakemake.output.model, model.cpu(), p.classifier, n_classes, images.shape[-1], metrics)
write_json(snakemake.output.metrics, metrics)
