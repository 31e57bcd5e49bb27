"""Ship the classifiers (and F-Fidelity's surrogates) a finished run trained,
so that a default run on any machine starts from the same weights.

    ./fud python tools/ship_models.py results/synthetic [--configfile config/config.yaml]
    ./fud python tools/ship_models.py results/round4 --configfile studies/planted_cue/cue.yaml studies/round4/round4.yaml --score-model

For every classifier of the config with a `shipped` path (and `shipped_surrogate`),
copies results/<run>/models/<model>.pt (<model>_surrogate.pt) there and writes
the manifest beside it: sha256, the fingerprint of the settings it was trained
with (fudbench.core.fingerprint), its metrics, and where it was made. The run must
have trained them (source: train), with the same settings. --score-model ships
the run's score model instead, to models.score_model.shipped. Several
--configfile files are merged as `./fud run` merges them (overlays of
config/config.yaml).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from fudbench.config.validate import validate_config  # noqa: E402
from fudbench.evaluators import entries_of, spec_of  # noqa: E402
from fudbench.core.fingerprint import (
    classifier_training_inputs,
    score_model_training_inputs,  # noqa: E402
    surrogate_training_inputs,
)
from fudbench.core.hardware import cpu_info  # noqa: E402
from fudbench.models.shipped import write_manifest  # noqa: E402
from fudbench.core.paths import resolve_path  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    from fudbench.config.cli import script_config, user_file

    ap.add_argument("results", type=user_file, help="a finished run's results directory")
    ap.add_argument(
        "--configfile",
        nargs="+",
        default=None,
        help="the run's config files, merged in order as ./fud run merges them (default: config/config.yaml)",
    )
    ap.add_argument("--score-model", action="store_true", help="ship the run's score model, not its classifiers")
    args = ap.parse_args(argv)
    config = script_config(args.configfile)[0]
    # validated as if trained here: the files to be shipped are what this writes
    for c in config["models"]["classifiers"].values():
        c["source"] = "train"
    config["models"]["score_model"]["source"] = "train"
    validate_config(config, REPO / "config/schema.yaml")
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    made = {"commit": commit, "cpu": cpu_info()["model"], "cpu_flags": " ".join(cpu_info()["flags"])}
    ffid = entries_of(config["evaluators"], "ffid")
    ffid_settings = (
        spec_of(ffid[0], config["evaluators"][ffid[0]]).resolve(config["evaluators"][ffid[0]]) if ffid else None
    )
    models = args.results / "models"
    if args.score_model:
        target = config["models"]["score_model"].get("shipped")
        if not target:
            raise SystemExit("models.score_model.shipped is not set in the config: name where to ship it")
        _ship(
            models / "score_model.pt",
            models / "score_model.json",
            resolve_path(target, REPO),
            score_model_training_inputs(config),
            made,
        )
        return
    for name, c in config["models"]["classifiers"].items():
        jobs = []
        if c.get("shipped"):
            jobs.append(
                (
                    models / f"{name}.pt",
                    models / f"{name}_metrics.json",
                    c["shipped"],
                    classifier_training_inputs(config, name),
                )
            )
        if c.get("shipped_surrogate") and ffid_settings:
            jobs.append(
                (
                    models / f"{name}_surrogate.pt",
                    models / f"{name}_surrogate_metrics.json",
                    c["shipped_surrogate"],
                    surrogate_training_inputs(config, name, ffid_settings),
                )
            )
        for source, metrics, target, inputs in jobs:
            _ship(source, metrics, resolve_path(target, REPO), inputs, made)


def _ship(source: Path, metrics: Path | None, target: Path, inputs: dict, made: dict) -> None:
    if not source.is_file():
        raise SystemExit(f"{source} is missing: run the workflow with source: train first")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    extra = {}
    if metrics is not None and metrics.is_file():
        found = json.loads(metrics.read_text())
        extra["metrics"] = found.get("metrics", found) if isinstance(found, dict) else found
    manifest = write_manifest(target, inputs, made=made, **extra)
    print(f"shipped {source} -> {target} (sha256 {manifest['sha256'][:12]}, {target.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
