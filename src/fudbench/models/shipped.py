"""Checkpoints shipped with the repository, verified before use.

A shipped checkpoint `X.pt` comes with `X.json` (written by the training rule):
its sha256 and the fingerprint of the settings it was trained with.
"""
from __future__ import annotations

import json
from pathlib import Path

from fudbench.fingerprint import file_sha256, fingerprint


def verify_shipped_checkpoint(path, training_inputs: dict) -> dict:
    path = Path(path)
    sidecar = path.with_suffix(".json")
    if not path.is_file() or not sidecar.is_file():
        raise FileNotFoundError(
            f"shipped checkpoint {path} or its manifest {sidecar} is missing; set "
            f"models.score_model.source: train to train the score model in the workflow"
        )
    manifest = json.loads(sidecar.read_text())
    digest = file_sha256(path)
    if digest != manifest["sha256"]:
        raise RuntimeError(
            f"checksum mismatch for {path}: sha256 {digest}, manifest {sidecar} says "
            f"{manifest['sha256']}; the file is corrupt or was replaced: restore it from git "
            f"(git checkout -- {path}) or set models.score_model.source: train"
        )
    expected = fingerprint(training_inputs)
    if manifest["training_fingerprint"] != expected:
        shipped = manifest.get("training_inputs", {})
        changed = _diff_keys(shipped, training_inputs)
        raise RuntimeError(
            f"the shipped score model {path} was trained with other settings than this config "
            f"(differences at: {', '.join(changed) or 'unknown'}); set models.score_model.source: "
            f"train to retrain it for these settings, or restore the settings it was trained with"
        )
    return manifest


def _diff_keys(a, b, prefix="") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += _diff_keys(a.get(k), b.get(k), f"{prefix}{k}.")
        return out
    return [] if a == b else [prefix.rstrip(".")]
