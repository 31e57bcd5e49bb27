"""Fingerprints of the config values a trained artefact depends on.

A shipped checkpoint records the fingerprint of the training config it was
made with; the workflow recomputes it from the current config and refuses a
checkpoint that does not match, so a config edit can never silently reuse
weights trained for something else.
"""
from __future__ import annotations

import hashlib
import json


def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def score_model_training_inputs(config: dict) -> dict:
    """Everything the score model's weights depend on."""
    score = {k: v for k, v in config["models"]["score_model"].items() if k not in ("source", "shipped")}
    return {"seed": config["seed"], "data": config["data"]["synthetic"], "score_model": score}


def fingerprint(obj) -> str:
    return hashlib.sha256(_canonical(obj).encode()).hexdigest()


def file_sha256(path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()
