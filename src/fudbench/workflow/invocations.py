"""Every invocation of a run, appended to results/<run>/invocations.jsonl (issue 44).

run_info.json is written once per run (its rule's output exists after the first
invocation), so a run continued over several invocations, commits or machines
names only the first. The Snakefile's onstart appends one line per real (not
dry) invocation: when, the repository's commit and whether its tree had
uncommitted changes, Snakemake's command line, and the machine. A
pre-registration is then checkable against every commit that computed a
record (studies/round4/README.md).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import subprocess
import sys
from pathlib import Path


def repository_state(repo) -> dict:
    """{commit, dirty: list of changed tracked paths (at most 50)} of the checkout at `repo`; {} without git."""

    def git(*args):
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=30)

    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return {}
        changed = git("status", "--porcelain", "--untracked-files=no").stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"commit": head.stdout.strip(), "dirty": [line[3:] for line in changed[:50]], "n_dirty": len(changed)}


def record_invocation(results_dir, repo, argv=None, machine: dict | None = None) -> dict:
    """Append this invocation to results_dir/invocations.jsonl (created if missing) and return it."""
    entry = {
        "time_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **repository_state(repo),
        "argv": list(sys.argv if argv is None else argv),
        "pid": os.getpid(),
        **({"machine": machine} if machine else {}),
    }
    path = Path(results_dir) / "invocations.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:  # one short line per write: appends do not interleave
        fh.write(json.dumps(entry, sort_keys=True) + "\n")
    return entry


def read_invocations(results_dir) -> list[dict]:
    path = Path(results_dir) / "invocations.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
