"""Fingerprints of the config values a trained artefact depends on.

A shipped checkpoint records the fingerprint of the training config it was
made with; the workflow recomputes it from the current config and refuses a
checkpoint that does not match, so a config edit can never silently reuse
weights trained for something else.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def score_model_training_inputs(config: dict) -> dict:
    """Everything the score model's weights depend on. Where the config declares a shipped checkpoint
    trained on other data on purpose (`trained_on_other_data`: a fill that has never seen the run's
    images), the data settings compared are the checkpoint's own, from its manifest."""
    cfg = config["models"]["score_model"]
    score = {k: v for k, v in cfg.items() if k not in ("source", "shipped", "trained_on_other_data")}
    data = config["data"]["synthetic"]
    if cfg.get("trained_on_other_data"):
        from fudbench.core.paths import resolve_path

        # the manifest beside the checkpoint (fudbench.models.shipped writes it; a missing one is named there)
        sidecar = resolve_path(cfg["shipped"], Path(__file__).resolve().parents[3]).with_suffix(".json")
        if sidecar.is_file():
            data = json.loads(sidecar.read_text()).get("training_inputs", {}).get("data", data)
    return {"seed": config["seed"], "data": data, "score_model": score}


# where the weights come from and the accuracy they must reach, not what they are
SHIPPING_KEYS = ("source", "shipped", "shipped_surrogate", "min_accuracy")


def classifier_training_inputs(config: dict, model: str) -> dict:
    """Everything a trained classifier's weights depend on: its seeds derive
    from the run's seed and the model's name (scripts/train_classifier.py)."""
    cfg = {k: v for k, v in config["models"]["classifiers"][model].items() if k not in SHIPPING_KEYS}
    return {"seed": config["seed"], "model": model, "data": config["data"]["synthetic"], "classifier": cfg}


def surrogate_training_inputs(config: dict, model: str, ffid: dict) -> dict:
    """F-Fidelity's surrogate: its classifier's inputs plus the fine-tuning
    settings (`ffid`: beta and finetune of the first ffid entry)."""
    return {"classifier": classifier_training_inputs(config, model), "ffid": {k: ffid[k] for k in ("beta", "finetune")}}


def fingerprint(obj) -> str:
    return hashlib.sha256(_canonical(obj).encode()).hexdigest()


def file_sha256(path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()
