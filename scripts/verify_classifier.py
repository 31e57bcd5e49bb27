"""Verify a shipped classifier (sha256, training settings, test accuracy), then use it."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import shutil

from fudbench.data.splits import load_split
from fudbench.core.io import atomic_path, write_json
from fudbench.workflow.jobs import setup_job
from fudbench.models.classifiers import load_classifier
from fudbench.models.gate import NonFiniteLogitsError, accuracy_gate
from fudbench.models.shipped import accuracy_matches, verify_shipped_checkpoint
from fudbench.models.training import accuracy

log = setup_job(snakemake)
p, w = snakemake.params, snakemake.wildcards
fix = f"set models.classifiers.{w.model}.source: train to train it in the workflow"
manifest = verify_shipped_checkpoint(
    snakemake.input.shipped, p.training_inputs, f"the shipped classifier {w.model}", fix
)
device = "cpu"  # 400 images through a small network: no GPU needed, and a CPU node may run this job
test_x, test_y, _ = load_split(snakemake.input.test)
model = load_classifier(snakemake.input.shipped, device)
try:
    test_acc = accuracy(
        model,
        test_x.to(device),
        test_y.to(device),
        name=f"the shipped classifier {w.model!r} ({snakemake.input.shipped})",
        fix=fix,
    )
except NonFiniteLogitsError as exc:
    raise SystemExit(f"[gate] {exc}") from exc
shipped_acc = manifest["metrics"]["test_accuracy"]
if not accuracy_matches(test_acc, shipped_acc, len(test_y)):
    raise SystemExit(
        f"the shipped classifier {w.model} has test accuracy {test_acc:.4f} here, its manifest says "
        f"{shipped_acc:.4f}: the test split differs from the one it was trained with; {fix}"
    )
gate, gate_key = accuracy_gate(w.model, {"min_accuracy": p.min_accuracy}, p.gates)
print(
    f"[gate] classifier {w.model} (shipped, sha256 {manifest['sha256'][:12]}): test accuracy {test_acc:.4f} "
    f"(gate >= {gate}, {gate_key}; shipped {shipped_acc:.4f})",
    flush=True,
)
with atomic_path(snakemake.output.model) as tmp:
    shutil.copyfile(snakemake.input.shipped, tmp)
write_json(
    snakemake.output.metrics,
    {
        **manifest["metrics"],
        "source": "shipped",
        "sha256": manifest["sha256"],
        "verified_test_accuracy": test_acc,
        "passes_gate": test_acc >= gate,
    },
)
