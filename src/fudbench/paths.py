"""Paths in the config: absolute, starting with ~ or $VAR, or relative to the
repository. Torch-free, and imported by both the config checks and the asset
check (which imports the config module itself, so neither can host it)."""
from __future__ import annotations

import os
from pathlib import Path


def resolve_path(p, repo=None) -> Path | None:
    """~ and $VARS expanded; a relative path is relative to `repo` (the repository
    in the workflow; None: the working directory)."""
    if p is None:
        return None
    p = Path(os.path.expandvars(os.path.expanduser(str(p))))
    return p if p.is_absolute() or repo is None else Path(repo) / p
