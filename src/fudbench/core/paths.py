"""Paths in the config: absolute, starting with ~ or $VAR, relative to the
repository, or inside an installed package (`pkg:NAME/rest`). Torch-free, and
imported by both the config checks and the asset check (which imports the
config module itself, so neither can host it)."""

from __future__ import annotations

import os
from importlib.util import find_spec
from pathlib import Path

PACKAGE = "pkg:"  # pkg:skimage/data/chelsea.png = that file of the installed scikit-image


class PackagePathError(ValueError):
    """A `pkg:` path names a package that is not installed."""


def package_path(p: str) -> Path:
    """`pkg:NAME/rest` -> <the folder of installed package NAME>/rest, found with
    importlib's finders without importing it (files a package from the lock ships,
    e.g. scikit-image's sample photos or a model's weights: no download)."""
    name, _, rest = p[len(PACKAGE) :].partition("/")
    spec = find_spec(name) if name and "." not in name else None
    folders = list(spec.submodule_search_locations or []) if spec else []
    if not folders:
        raise PackagePathError(
            f"{p!r}: {name!r} is not an installed package (pkg:NAME/path names a file inside "
            f"a package of the environment; install it, e.g. add it to requirements.in)"
        )
    return Path(folders[0]) / rest


def resolve_path(p, repo=None) -> Path | None:
    """~ and $VARS expanded; `pkg:NAME/...` inside the installed package NAME; a
    relative path is relative to `repo` (the repository in the workflow; None: the
    working directory)."""
    if p is None:
        return None
    if str(p).startswith(PACKAGE):
        return package_path(str(p))
    p = Path(os.path.expandvars(os.path.expanduser(str(p))))
    return p if p.is_absolute() or repo is None else Path(repo) / p
