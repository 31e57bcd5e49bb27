"""The classifiers' accuracy gate, sized per classifier (torch-free: the rules
and the job scripts read it).

`models.gates.min_test_accuracy` suits the synthetic benchmark's models (0.95);
an ImageNet model on a handful of your own photos may be right at 0.75 (one
miss in four). `models.classifiers.<name>.min_accuracy` sets one classifier's
gate instead."""
from __future__ import annotations

PER_CLASSIFIER = "min_accuracy"


def accuracy_gate(name: str, classifier: dict, gates: dict) -> tuple[float, str]:
    """(minimum top-1 accuracy of classifier `name`, the config key that set it)."""
    if classifier.get(PER_CLASSIFIER) is not None:
        return float(classifier[PER_CLASSIFIER]), f"models.classifiers.{name}.{PER_CLASSIFIER}"
    return float(gates["min_test_accuracy"]), "models.gates.min_test_accuracy"


def gate_line(name: str, what: str, acc: float, gate: float, key: str) -> str:
    """The [gate] log line; below the gate it says how to change the gate."""
    line = f"[gate] classifier {name}: {what} {acc:.4f} (gate >= {gate}, {key})"
    if acc >= gate:
        return line
    return (f"{line}  BELOW GATE: check the labels and weights, or size the gate for these data with "
            f"models.classifiers.{name}.{PER_CLASSIFIER} (this classifier) or models.gates.min_test_accuracy "
            f"(every classifier)")
