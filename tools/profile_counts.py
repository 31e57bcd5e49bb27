"""The counts of each profile that README.md and docs/*.md quote: jobs, explainers,
evaluator entries, models, images. Generated from the configs, not typed:

    ./fud python tools/profile_counts.py              # every config/*.yaml, without jobs
    ./fud python tools/profile_counts.py --jobs smoke photos   # with Snakemake's dry-run job count

tests/test_new_metric_reach.py holds README.md and docs/*.md to these numbers: a
count of jobs, explainers, evaluators, models or images next to a profile's name
(`config/photos.yaml`, "the default workflow", "the smoke workflow") must be
the profile's, unless the same table cell or sentence part dates it (a commit
or a date: a measurement of that run, kept as measured).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

KINDS = ("jobs", "explainers", "evaluators", "models", "images")


def config_counts(profile: str) -> dict:
    """explainers, evaluators (entries), models, images of config/<profile>.yaml (over the default)."""
    from fudbench.config.files import resolve_config

    files = [] if profile == "config" else [REPO / "config" / f"{profile}.yaml"]
    c = resolve_config(files)
    return {
        "explainers": len(c["explainers"]),
        "evaluators": len(c["evaluators"]),
        "models": len(c["models"]["classifiers"]),
        "images": int(c["data"]["n_eval"]),
    }


@lru_cache(maxsize=None)
def job_count(profile: str) -> int:
    """The jobs of a run of the profile from nothing: Snakemake's dry run in an empty directory."""
    config = REPO / "config" / f"{profile}.yaml"
    with tempfile.TemporaryDirectory() as work:
        cmd = [
            sys.executable,
            "-m",
            "fudbench.workflow.snakemake_main",
            "-s",
            str(REPO / "Snakefile"),
            "-n",
            "--configfile",
            str(config),
            "--directory",
            work,
        ]
        env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "FUD_NO_ESTIMATE": "1"}
        res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env, timeout=1200)
    out = res.stdout + res.stderr
    found = re.search(r"^total\s+(\d+)\s*$", out, re.M)
    if res.returncode or not found:
        raise RuntimeError(f"dry run of {config} failed:\n{out[-3000:]}")
    return int(found.group(1))


def profiles() -> list[str]:
    return sorted(p.stem for p in (REPO / "config").glob("*.yaml") if p.stem != "schema")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profiles", nargs="*", help="config/<name>.yaml stems (default: all)")
    parser.add_argument("--jobs", action="store_true", help="also count jobs (a Snakemake dry run each)")
    args = parser.parse_args(argv)
    print("| profile | " + " | ".join(k for k in KINDS if args.jobs or k != "jobs") + " |")
    for name in args.profiles or profiles():
        c = config_counts(name)
        if args.jobs:
            c["jobs"] = job_count(name)
        print(f"| config/{name}.yaml | " + " | ".join(str(c[k]) for k in KINDS if k in c) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
