"""Name -> "module:attribute" registries, resolved lazily so that the
Snakefile can validate names at parse time without importing torch. A name
that is an import path ("pkg.mod:Name", "file.py:Name") is a plug-in and is
loaded from there instead (fudbench.core.plugins): built-in names and plug-ins are
looked up the same way for explainers, imputers and evaluators."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from fudbench.core.plugins import is_import_path, load_object


def resolve(registry: dict[str, str], name: str, kind: str, base: Optional[Path] = None):
    if is_import_path(name):
        return load_object(name, base)
    if name not in registry:
        raise KeyError(
            f"unknown {kind} {name!r}; registered: {', '.join(sorted(registry))} (or an import path "
            f"'package.module:Name' / 'path/to/file.py:Name')"
        )
    return load_object(registry[name])
