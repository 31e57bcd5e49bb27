"""The classifiers' accuracy gate, sized per classifier (torch-free: the rules
and the job scripts read it).

`models.gates.min_test_accuracy` suits the synthetic benchmark's models (0.95);
an ImageNet model on a handful of your own photos may be right at 0.75 (one
miss in four). `models.classifiers.<name>.min_accuracy` sets one classifier's
gate instead.

The gate also refuses a classifier whose logits are NaN or inf on any gated
image (NonFiniteLogitsError, naming the classifier and where it came from): the
argmax of NaN logits is class 0, so such a model would pass as the share of
class-0 labels, and every score downstream would be NaN."""

from __future__ import annotations

PER_CLASSIFIER = "min_accuracy"
MAX_IDS = 10  # image positions quoted in one message


class NonFiniteLogitsError(ValueError):
    """A classifier returned NaN or inf logits; the message names the classifier and the fix."""


def nonfinite_message(what: str, bad: list[int], n: int, fix: str = "", label: str = "positions") -> str:
    """The error for classifier `what` (its name and source) whose logits are not finite
    on the images `bad` (their positions among the `n`, or the ids that `label` names)."""
    shown = ", ".join(map(str, bad[:MAX_IDS])) + (" ..." if len(bad) > MAX_IDS else "")
    return (
        f"{what} returns NaN or inf logits on {len(bad)} of {n} images ({label} {shown}): its accuracy "
        f"would count argmax(NaN) = class 0 as a prediction and every attribution and score would be NaN; "
        f"{fix or 'check the network and its weights'}"
    )


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
    return (
        f"{line}  BELOW GATE: check the labels and weights, or size the gate for these data with "
        f"models.classifiers.{name}.{PER_CLASSIFIER} (this classifier) or models.gates.min_test_accuracy "
        f"(every classifier)"
    )
