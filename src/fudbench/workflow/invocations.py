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
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from fudbench.core.paths import PACKAGE, PackagePathError, resolve_path

FULL_HASH_MB = 256  # a file the config names above this size is digested by size and mtime (a 2 GB checkpoint)


def _git(repo, *args, text=True):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=text, timeout=60)


def repository_state(repo) -> dict:
    """{commit, dirty: changed tracked and untracked (not ignored) paths (at most 50), n_dirty,
    n_untracked} of the checkout at `repo`; {} without git."""
    try:
        head = _git(repo, "rev-parse", "HEAD")
        if head.returncode != 0:
            return {}
        changed = _git(repo, "status", "--porcelain", "--untracked-files=all").stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return {}
    untracked = [line for line in changed if line.startswith("??")]
    return {
        "commit": head.stdout.strip(),
        "dirty": [line[3:] for line in changed[:50]],
        "n_dirty": len(changed),
        "n_untracked": len(untracked),
    }


def file_digest(path) -> str:
    """SHA-256 of a file's bytes; above FULL_HASH_MB, of its size and mtime (named as such)."""
    st = os.stat(path)
    if st.st_size > FULL_HASH_MB * 2**20:
        return f"size-mtime:{st.st_size}:{st.st_mtime_ns}"
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def named_files(config, repo) -> list[str]:
    """The existing files that string values of `config` name (a plug-in's `path.py:Name` by its path,
    `pkg:NAME/...` inside an installed package: fudbench.core.paths), relative to `repo` (or the working
    directory) where not absolute; each once, sorted."""
    found = set()

    def visit(value):
        if isinstance(value, dict):
            for v in value.values():
                visit(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                visit(v)
        elif isinstance(value, str) and ("/" in value or "." in value) and len(value) < 1024:
            # a plug-in's "path.py:Name" by its path (not "pkg:NAME/...", an installed package's file)
            path = value.rsplit(":", 1)[0] if value.count(":") == 1 and not value.startswith(PACKAGE) else value
            for base in (repo, None):  # the repository's, else the working directory's
                try:
                    candidate = resolve_path(path, base)
                except (PackagePathError, ValueError, OSError):
                    break
                if candidate.is_file():
                    found.add(str(candidate.resolve()))
                    break

    visit(config)
    return sorted(found)


def worktree_digest(repo, state: dict) -> str | None:
    """SHA-256 of the uncommitted changes (`git diff HEAD`) and of the untracked files' paths and bytes;
    None for a clean tree."""
    if not state.get("n_dirty"):
        return None
    h = hashlib.sha256(_git(repo, "diff", "HEAD", "--binary", text=False).stdout)
    untracked = _git(repo, "ls-files", "--others", "--exclude-standard", "-z").stdout.split("\0")
    for rel in sorted(p for p in untracked if p):
        path = Path(repo) / rel
        h.update(rel.encode() + b"\0" + (file_digest(path).encode() if path.is_file() else b"-"))
    return h.hexdigest()


def input_digests(config, repo, state: dict | None = None) -> dict:
    """{config, files: {path: digest}, worktree} (module docstring): what decides the results beside the commit."""
    text = json.dumps(config, sort_keys=True, default=str, separators=(",", ":"))
    out = {
        "config": hashlib.sha256(text.encode()).hexdigest(),
        "files": {
            (os.path.relpath(f, repo) if not os.path.relpath(f, repo).startswith("..") else f): file_digest(f)
            for f in named_files(config, repo)
        },
    }
    tree = worktree_digest(repo, repository_state(repo) if state is None else state)
    if tree:
        out["worktree"] = tree
    return out


def record_invocation(results_dir, repo, argv=None, machine: dict | None = None, config=None) -> dict:
    """Append this invocation to results_dir/invocations.jsonl (created if missing) and return it; with
    the run's merged `config`, its input_digests."""
    state = repository_state(repo)
    entry = {
        "time_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **state,
        "argv": list(sys.argv if argv is None else argv),
        "pid": os.getpid(),
        **({"machine": machine} if machine else {}),
        **({"digests": input_digests(config, repo, state)} if config is not None else {}),
    }
    path = Path(results_dir) / "invocations.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:  # one line per write: appends do not interleave
        fh.write(json.dumps(entry, sort_keys=True) + "\n")
    return entry


def read_invocations(results_dir) -> list[dict]:
    path = Path(results_dir) / "invocations.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
