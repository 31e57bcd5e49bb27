"""Checkpoints shipped with the repository, verified before use.

A shipped checkpoint `X.pt` comes with `X.json` (written by the training rule
for the score model, by tools/ship_models.py for the classifiers and
F-Fidelity's surrogates): its sha256, the fingerprint of the settings it was
trained with and, for classifiers, the test accuracy it had. Weights trained
on one CPU differ from those trained on another in the last bits, and the
numbers downstream move with them; shipping them makes a default run start
from the same weights on every machine. Torch-free: the Snakefile checks
the manifests at parse time (`shipped_problems`).
"""

from __future__ import annotations

import json
from pathlib import Path

from fudbench.core.fingerprint import file_sha256, fingerprint


def manifest_path(path) -> Path:
    return Path(path).with_suffix(".json")


def shipped_problems(path, training_inputs: dict, what: str, fix: str) -> list[str]:
    """Parse-time check of a shipped checkpoint's presence and fingerprint (the
    sha256 is checked by the verify job, which reads the weights anyway)."""
    path = Path(path)
    sidecar = manifest_path(path)
    if not path.is_file() or not sidecar.is_file():
        return [
            f"{what}: shipped checkpoint {path} or its manifest {sidecar} is missing; restore it from git "
            f"(git checkout -- {path.parent}) or {fix}"
        ]
    manifest = json.loads(sidecar.read_text())
    if manifest.get("training_fingerprint") != fingerprint(training_inputs):
        changed = _diff_keys(manifest.get("training_inputs", {}), training_inputs)
        return [
            f"{what}: the shipped checkpoint {path} was trained with other settings than this config "
            f"(differences at: {', '.join(changed) or 'unknown'}); {fix}, or restore the settings it was "
            f"trained with"
        ]
    return []


def verify_shipped_checkpoint(
    path,
    training_inputs: dict,
    what: str = "the shipped score model",
    fix: str = "set models.score_model.source: train to train it in the workflow",
) -> dict:
    """The manifest of a shipped checkpoint whose sha256 and training
    fingerprint match; a FileNotFoundError / RuntimeError naming the fix otherwise."""
    path = Path(path)
    sidecar = manifest_path(path)
    if not path.is_file() or not sidecar.is_file():
        raise FileNotFoundError(f"shipped checkpoint {path} or its manifest {sidecar} is missing; {fix}")
    manifest = json.loads(sidecar.read_text())
    digest = file_sha256(path)
    if digest != manifest["sha256"]:
        raise RuntimeError(
            f"checksum mismatch for {path}: sha256 {digest}, manifest {sidecar} says "
            f"{manifest['sha256']}; the file is corrupt or was replaced: restore it from git "
            f"(git checkout -- {path}) or {fix}"
        )
    problems = shipped_problems(path, training_inputs, what, fix)
    if problems:
        raise RuntimeError(problems[0])
    return manifest


def write_manifest(checkpoint, training_inputs: dict, **extra) -> dict:
    """The manifest of a checkpoint about to be shipped (beside it, .json)."""
    from fudbench.core.io import write_json

    manifest = {
        "sha256": file_sha256(checkpoint),
        "training_fingerprint": fingerprint(training_inputs),
        "training_inputs": training_inputs,
        **extra,
    }
    write_json(manifest_path(checkpoint), manifest)
    return manifest


def accuracy_matches(measured: float, shipped: float, n_test: int, tolerance_images: int = 1) -> bool:
    """Whether a verified classifier's test accuracy is the shipped one: the
    same weights on another CPU may flip an image whose top two logits tie to
    the last bits, so `tolerance_images` images may differ."""
    return abs(measured - shipped) <= tolerance_images / n_test + 1e-12


def _diff_keys(a, b, prefix="") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += _diff_keys(a.get(k), b.get(k), f"{prefix}{k}.")
        return out
    return [] if a == b else [prefix.rstrip(".")]
