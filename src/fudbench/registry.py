"""Name -> "module:attribute" registries, resolved lazily so that the
Snakefile can validate names at parse time without importing torch."""
from __future__ import annotations

import importlib


def resolve(registry: dict[str, str], name: str, kind: str):
    if name not in registry:
        raise KeyError(f"unknown {kind} {name!r}; registered: {', '.join(sorted(registry))}")
    module, attr = registry[name].split(":")
    return getattr(importlib.import_module(module), attr)
