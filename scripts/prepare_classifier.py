"""A pretrained torchvision classifier: verify its weights, record its accuracy
on the evaluated images, write it in the workflow's checkpoint format."""
import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import json

import torch

from fudbench.data.splits import load_split
from fudbench.device import resolve_device
from fudbench.io import write_json
from fudbench.jobs import setup_job
from fudbench.models.classifiers import save_classifier
from fudbench.models.classifiers import pretrained_classifier
from fudbench.models.torchvision_models import weights_path
from fudbench.models.training import accuracy

log = setup_job(snakemake)
p, w = snakemake.params, snakemake.wildcards
device = resolve_device(p.job["device"])
images, labels, _ = load_split(snakemake.input.images)
n_classes = len(json.load(open(snakemake.input.classes)))
model, digest = pretrained_classifier(p.classifier, w.model, images.shape[-1])
log.info("%s: %s verified (sha256 %s)", w.model, weights_path(p.classifier), digest)
with torch.no_grad():
    acc = accuracy(model.to(device), images.to(device), labels.to(device), batch_size=128)
gate = p.gates["min_test_accuracy"]
metrics = {"model": w.model, "arch": p.classifier["arch"], "weights": p.classifier["weights"],
           "weights_file": str(weights_path(p.classifier)), "sha256": digest,
           "test_accuracy": acc, "accuracy_on": f"the {len(labels)} evaluated images",
           "gate_min_test_accuracy": gate, "passes_gate": acc >= gate,
           "parameters": sum(t.numel() for t in model.parameters())}
msg = f"[gate] classifier {w.model}: top-1 accuracy {acc:.4f} on the evaluated images (gate >= {gate})"
print(msg + ("" if acc >= gate else "  BELOW GATE"), flush=True)
if acc < gate and p.gates["strict"]:
    raise SystemExit(msg + ": below the gate and models.gates.strict is true; check the ImageNet labels "
                     "(data.imagenet.labels / synsets) and the weights")
save_classifier(snakemake.output.model, model.cpu(), p.classifier, n_classes, images.shape[-1], metrics)
write_json(snakemake.output.metrics, metrics)
