"""Plug-ins: a researcher's own explainer, imputer, evaluator or model, named by
an import path where a built-in name would go.

    "mypkg.attributions:MyMethod"      a module importable in the environment
    "plugins/my_method.py:my_method"   a Python file (~ and $VAR expanded;
                                       relative paths: to the repository in
                                       the workflow, to the working directory
                                       from Python; fudbench.paths)

The registries (fudbench.registry.resolve and the evaluator registry) look a
built-in name up in their table and an import path up here, the same way for
every kind. Errors name the path and what is wrong with it.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Optional

from fudbench.paths import resolve_path


class PluginError(ValueError):
    """An import path that does not name a usable object."""


def is_import_path(name) -> bool:
    return isinstance(name, str) and ":" in name


def _split(path: str) -> tuple[str, str]:
    target, _, attr = path.rpartition(":")
    if not target or not attr or not attr.replace("_", "a").isalnum():
        raise PluginError(f"{path!r} is not an import path: write 'package.module:Name' or 'path/to/file.py:Name'")
    return target, attr


def _load_file(file: Path, path: str):
    if not file.is_file():
        raise PluginError(f"{path!r}: {file} does not exist")
    # One module per file path, so two plug-in files with the same name do not collide.
    name = f"fud_plugin_{hashlib.sha1(str(file.resolve()).encode()).hexdigest()[:12]}_{file.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise PluginError(f"{path!r}: importing {file} failed ({type(exc).__name__}: {exc})") from exc
    return module


def absolute(path: str, base: Optional[Path] = None) -> str:
    """The import path with a plug-in file's path made absolute (as jobs, which run
    in another directory, must get it); module paths are returned unchanged."""
    target, attr = _split(path)
    return f"{resolve_path(target, base)}:{attr}" if target.endswith(".py") else path


def load_object(path: str, base: Optional[Path] = None):
    """The object an import path names; `base` anchors relative file paths."""
    target, attr = _split(path)
    if target.endswith(".py"):
        module = _load_file(resolve_path(target, base), path)
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise PluginError(f"{path!r}: module {target!r} cannot be imported ({exc}); install it in the "
                              f"environment or give the file: 'path/to/file.py:{attr}'") from exc
    if not hasattr(module, attr):
        raise PluginError(f"{path!r}: {target} has no attribute {attr!r}")
    return getattr(module, attr)


def plugin_file(path: str, base: Optional[Path] = None) -> Optional[str]:
    """The source file behind an import path (an input of the jobs that use it,
    so that editing it reruns them), or None for built-in or compiled modules."""
    target, _ = _split(path)
    if target.endswith(".py"):
        return str(resolve_path(target, base))
    spec = importlib.util.find_spec(target.split(".")[0]) and importlib.util.find_spec(target)
    origin = getattr(spec, "origin", None)
    return origin if origin and origin.endswith(".py") else None
