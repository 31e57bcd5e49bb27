"""Train one classifier and record its test accuracy against the gate."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import json

from fudbench.data.splits import load_split
from fudbench.core.device import resolve_device
from fudbench.models.classifiers import build_classifier, save_classifier
from fudbench.models.gate import NonFiniteLogitsError, accuracy_gate, gate_line
from fudbench.models.training import accuracy, train_classifier
from fudbench.core.io import write_json
from fudbench.workflow.jobs import setup_job
from fudbench.core.seeding import derive_seed, seed_everything

log = setup_job(snakemake)
p, w = snakemake.params, snakemake.wildcards
device = resolve_device(p.job["device"])
train_x, train_y, _ = load_split(snakemake.input.train)
val_x, val_y, _ = load_split(snakemake.input.val)
test_x, test_y, _ = load_split(snakemake.input.test)
n_classes = len(json.load(open(snakemake.input.classes)))
mean = train_x.mean(dim=(0, 2, 3)).tolist()
std = train_x.std(dim=(0, 2, 3)).tolist()

# Seed before building: the initial weights come from torch's global RNG,
# whose default seed differs between processes.
seed_everything(derive_seed(p.job["seed"], "init", w.model))
model = build_classifier(p.classifier, n_classes, train_x.shape[-1], mean, std)
info = train_classifier(
    model, train_x, train_y, val_x, val_y, p.classifier["train"], derive_seed(p.job["seed"], "train", w.model), device
)
try:
    test_acc = accuracy(
        model,
        test_x.to(device),
        test_y.to(device),
        name=f"the trained classifier {w.model!r}",
        fix=f"its training diverged: lower models.classifiers.{w.model}.train.lr",
    )
except NonFiniteLogitsError as exc:
    raise SystemExit(f"[gate] {exc}") from exc
gate, gate_key = accuracy_gate(w.model, p.classifier, p.gates)
metrics = {
    "model": w.model,
    "arch": p.classifier["arch"],
    "test_accuracy": test_acc,
    "gate_min_test_accuracy": gate,
    "gate_key": gate_key,
    "passes_gate": test_acc >= gate,
    "parameters": sum(t.numel() for t in model.parameters()),
    **info,
}
msg = gate_line(w.model, "test accuracy", test_acc, gate, gate_key)
print(msg, flush=True)
if test_acc < gate and p.gates["strict"]:
    raise SystemExit(
        msg + ": below the gate and models.gates.strict is true; train longer "
        "(models.classifiers.<name>.train.epochs) or relax the gate"
    )
save_classifier(snakemake.output.model, model.cpu(), p.classifier, n_classes, train_x.shape[-1], metrics)
write_json(snakemake.output.metrics, metrics)
