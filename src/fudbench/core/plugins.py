"""Plug-ins: a researcher's own explainer, imputer, evaluator or model, named by
an import path where a built-in name would go.

    "mypkg.attributions:MyMethod"      a module importable in the environment
    "plugins/my_method.py:my_method"   a Python file (~ and $VAR expanded;
                                       relative paths: to the repository in
                                       the workflow, to the working directory
                                       from Python; fudbench.core.paths)

The registries (fudbench.core.registry.resolve and the evaluator registry) look a
built-in name up in their table and an import path up here, the same way for
every kind. Errors name the path and what is wrong with it.

A plug-in file can import helper modules next to it (`from my_helpers import
SCALE`), as a script run with `python file.py` can; a module of the environment
with the same name wins (a helper never shadows an installed module). The
helpers load under a name derived from their folder's absolute path
(`fud_plugin_dir_<hash>.my_helpers`), not under their own: Python keeps one
module per name, so two plug-in folders that each have a `helpers.py` used to
share the one loaded first (the second plug-in's maps came from the first one's
helper, and editing its own helper reran nothing). Each plug-in file and its
helpers get an `__import__` that maps the folder's module names to these
(`_FolderImport`), at load time and for imports inside functions alike; the
folder is not put on sys.path. Imports by a computed name
(`importlib.import_module("my_helpers")`) bypass it and do not find the helper.

Provenance: `plugin_sources` lists every module file a plug-in loads from
outside the environment (site-packages, the standard library) and this
package: its own file, its package's `__init__` files, and its local imports,
followed transitively. It reads the files' imports (`ast`) and looks the
modules up without importing them, so the Snakefile can make them inputs of
the plug-in's jobs at parse time: editing a helper module reruns exactly the
jobs that use the plug-in. Imports it cannot see: `importlib.import_module`
/ `__import__` with a computed name, and files read by other means (data,
configs); make those inputs yourself or keep them in the imported modules.

Errors raised inside a plug-in's code are re-raised by `blame` as
`PluginCallError`, naming the config entry and the plug-in's import path and
file, with the original exception chained.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional

from fudbench.core.paths import resolve_path

_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # src/fudbench


class PluginError(ValueError):
    """An import path that does not name a usable object."""


def is_import_path(name) -> bool:
    return isinstance(name, str) and ":" in name


def _split(path: str) -> tuple[str, str]:
    target, _, attr = path.rpartition(":")
    if not target or not attr or not attr.replace("_", "a").isalnum():
        raise PluginError(f"{path!r} is not an import path: write 'package.module:Name' or 'path/to/file.py:Name'")
    return target, attr


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:12]


FOLDER_PREFIX = "fud_plugin_dir_"
_FOLDERS: dict[str, "_FolderImport"] = {}  # package name -> the __import__ of that plug-in folder's modules


class _FolderImport:
    """`__import__` for a plug-in file and its helper modules: a top-level module name
    that is a module of the plug-in's folder (NAME.py or NAME/__init__.py) and not one of
    the environment's loads as `<package>.NAME`, the package being the folder's
    (its __path__ is the folder); anything else is the ordinary import."""

    def __init__(self, folder: str, package: str):
        self.folder, self.package, self._local = folder, package, {}
        self.shadowed: dict[str, str] = {}  # helper name -> the environment's module that wins over it

    def is_local(self, top: str) -> bool:
        found = self._local.get(top)
        if found is None:
            here = os.path.isfile(os.path.join(self.folder, f"{top}.py")) or os.path.isfile(
                os.path.join(self.folder, top, "__init__.py")
            )
            other = _environment_module(top) if here else None
            found = here and other is None
            if here and other is not None:
                self.shadowed[top] = other
            self._local[top] = found
        return found

    def __call__(self, name, globals=None, locals=None, fromlist=(), level=0):
        import builtins

        top = name.partition(".")[0]
        if level != 0 or not top or not self.is_local(top):
            return builtins.__import__(name, globals, locals, fromlist, level)
        module = importlib.import_module(f"{self.package}.{name}")
        if not fromlist:
            return sys.modules[f"{self.package}.{top}"]
        for item in fromlist:  # `from helpers import submodule`
            if item != "*" and not hasattr(module, item) and hasattr(module, "__path__"):
                with contextlib.suppress(ImportError):
                    importlib.import_module(f"{module.__name__}.{item}")
        return module

    def builtins(self) -> dict:
        import builtins

        return {**builtins.__dict__, "__import__": self}


def _environment_spec(name: str):
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return True  # something of that name is there, if odd: the environment's


# the checkout (src/fudbench in it): its folders are not the environment (_is_incidental); None when the
# package is installed elsewhere (site-packages: its parents are the environment's)
_REPO = _PACKAGE_DIR.parents[1] if (_PACKAGE_DIR.parents[1] / "Snakefile").is_file() else None
_LIBRARY = _PACKAGE_DIR.parent  # src/: the library's own package is


def _is_incidental(spec) -> bool:
    """A module of the name that is on sys.path only by accident, so a plug-in's helper wins over it:
    a namespace package (a bare folder without __init__.py, which Python makes a package of only
    when no module of the name exists: the repository's config/, tools/, report/, bench/, tests/,
    examples/ when its root is the working directory), or a file of the repository outside src/
    (scripts/*.py, which Snakemake puts on the path of script jobs only: it would be the helper at
    parse time and a job script in the job). Not a module of the environment."""
    if spec is None or spec is True:
        return False
    if getattr(spec, "submodule_search_locations", None) is not None and getattr(spec, "origin", None) in (
        None,
        "namespace",
    ):
        return True
    origin = getattr(spec, "origin", None)
    if _REPO is None or not origin or not os.path.isabs(origin):
        return False
    real = os.path.realpath(origin)
    return real.startswith(str(_REPO) + os.sep) and not real.startswith(str(_LIBRARY) + os.sep)


def _environment_module(name: str) -> Optional[str]:
    """Where the environment's module `name` comes from (a plug-in's helper of that name loses to
    it), or None if it has none. An incidental module (_is_incidental) does not count: `from
    config import SCALE` in a plug-in with a config.py beside it failed with "cannot import name
    'SCALE' from 'config' (unknown location)" because the repository's config/ folder won (issue 45)."""
    loaded = sys.modules.get(name)
    if loaded is not None:
        spec = getattr(loaded, "__spec__", None)
        if _is_incidental(spec):
            return None
        return getattr(loaded, "__file__", None) or f"module {name!r} (already imported)"
    spec = _environment_spec(name)
    if spec is None or _is_incidental(spec):
        return None
    return getattr(spec, "origin", None) or f"module {name!r}"


class _FolderLoader(importlib.machinery.SourceFileLoader):
    """Loads a helper module of a plug-in folder with the folder's __import__."""

    def exec_module(self, module):
        module.__dict__["__builtins__"] = _FOLDERS[module.__name__.split(".")[0]].builtins()
        super().exec_module(module)


class _FolderFinder:
    """Finds `fud_plugin_dir_<hash>.NAME` (and deeper) in the folder behind the package."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        if not fullname.startswith(FOLDER_PREFIX) or "." not in fullname or path is None:
            return None
        if fullname.split(".")[0] not in _FOLDERS:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return spec
        return importlib.util.spec_from_file_location(
            fullname,
            spec.origin,
            loader=_FolderLoader(fullname, spec.origin),
            submodule_search_locations=spec.submodule_search_locations,
        )


def _folder_import(folder: Path) -> _FolderImport:
    """The __import__ of a plug-in folder, its package registered (once per process)."""
    import types

    package = f"{FOLDER_PREFIX}{_digest(str(folder))}"
    if package not in _FOLDERS:
        if _FolderFinder not in sys.meta_path:
            sys.meta_path.insert(0, _FolderFinder)
        module = types.ModuleType(package, f"helper modules of the plug-ins in {folder}")
        module.__path__ = [str(folder)]
        module.__spec__ = importlib.machinery.ModuleSpec(package, None, is_package=True)
        module.__spec__.submodule_search_locations = [str(folder)]
        sys.modules[package] = module
        _FOLDERS[package] = _FolderImport(str(folder), package)
    return _FOLDERS[package]


def _load_file(file: Path, path: str):
    if not file.is_file():
        raise PluginError(f"{path!r}: {file} does not exist")
    # One module per file path, so two plug-in files with the same name do not collide.
    name = f"fud_plugin_{_digest(str(file.resolve()))}_{file.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    # helper modules next to the file: the folder's own, under collision-free names (module docstring)
    module.__dict__["__builtins__"] = _folder_import(file.resolve().parent).builtins()
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise PluginError(
            f"{path!r}: importing {file} failed ({type(exc).__name__}: {exc})"
            + _shadow_hint(exc, file.resolve().parent)
        ) from exc
    return module


def _shadow_hint(exc: Exception, folder: Path) -> str:
    """If the failed import is of a helper module of the plug-in's folder that a module of the
    environment of the same name wins over (`_FolderImport.shadowed`), what clashes and the fix."""
    if not isinstance(exc, (ImportError, AttributeError)):
        return ""
    shadowed = _folder_import(folder).shadowed
    names = [n for n in shadowed if n in str(exc) or getattr(exc, "name", None) == n]
    if not names:
        return ""

    def helper(n):
        return folder / f"{n}.py" if (folder / f"{n}.py").is_file() else folder / n

    return "; " + "; ".join(
        f"the plug-in's folder has a helper module '{n}' ({helper(n)}), but the environment "
        f"has a module '{n}' ({shadowed[n]}), which wins (a plug-in's helper never shadows a module of the "
        f"environment): rename the helper (e.g. {n}_{folder.name.replace(' ', '_').replace('-', '_')}.py) and "
        f"the imports of it"
        for n in names
    )


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
            raise PluginError(
                f"{path!r}: module {target!r} cannot be imported ({exc}); install it in the "
                f"environment or give the file: 'path/to/file.py:{attr}'"
            ) from exc
        except Exception as exc:  # the module itself raised while being imported
            raise PluginError(f"{path!r}: importing module {target!r} failed ({type(exc).__name__}: {exc})") from exc
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


# ------------------------------------------------------------------ provenance

_PACKAGE = Path(__file__).resolve().parents[1]  # src/fudbench: the library's own code is not a plug-in's


@lru_cache(maxsize=1)
def _environment_roots() -> tuple[str, ...]:
    """Folders whose modules belong to the environment, not to a plug-in: the
    standard library and site-packages (of the venv and of its base Python)."""
    import site
    import sysconfig

    roots = set()
    for scheme_vars in (None, {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}):
        paths = sysconfig.get_paths(vars=scheme_vars) if scheme_vars else sysconfig.get_paths()
        roots.update(paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(k))
    with contextlib.suppress(AttributeError):
        roots.update(site.getsitepackages())
    with contextlib.suppress(AttributeError):
        roots.add(site.getusersitepackages())
    return tuple(sorted({os.path.realpath(r) for r in roots if r}))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def is_local_source(path: Optional[str]) -> bool:
    """A Python source file of the researcher's: not the standard library, not
    site-packages, not this package (src/fudbench)."""
    if not path or not path.endswith(".py"):
        return False
    real = os.path.realpath(path)
    return not _inside(real, str(_PACKAGE)) and not any(_inside(real, r) for r in _environment_roots())


@lru_cache(maxsize=4096)
def _imports_of(path: str, mtime_ns: int, size: int) -> tuple:
    """(level, module, names) of every import statement in a file, anywhere in it
    (functions and try blocks included: over-approximating only adds inputs)."""
    try:
        tree = ast.parse(Path(path).read_bytes(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return ()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(0, alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or "", tuple(a.name for a in node.names if a.name != "*")))
    return tuple(found)


def _file_imports(path: str) -> tuple:
    st = os.stat(path)
    return _imports_of(path, st.st_mtime_ns, st.st_size)


def _spec_chain(name: str, extra_paths: Iterable[str] = ()) -> list:
    """The specs of `name` and its parent packages, top first, found without
    importing anything (modules already imported give their own spec); stops where
    a part is not a module (an attribute) or cannot be found."""
    chain, spec = [], None
    parts = name.split(".")
    for i, part in enumerate(parts):
        full = ".".join(parts[: i + 1])
        loaded = sys.modules.get(full)
        found = getattr(loaded, "__spec__", None) if loaded is not None else None
        if i == 0 and extra_paths and _is_incidental(found):
            found = None  # an imported bare folder of the name: the helper's own lookup below decides
        if found is None:
            try:
                if i == 0:
                    found = (
                        importlib.util.find_spec(full)
                        if full not in sys.modules or _is_incidental(getattr(loaded, "__spec__", None))
                        else None
                    )
                    # a bare folder of the name (a namespace package) loses to a plug-in's helper, as at
                    # import time (_environment_module)
                    if (found is None or _is_incidental(found)) and extra_paths:
                        found = importlib.machinery.PathFinder.find_spec(full, list(extra_paths)) or found
                elif spec.submodule_search_locations is not None:
                    found = importlib.machinery.PathFinder.find_spec(full, list(spec.submodule_search_locations))
            except (ImportError, ValueError, AttributeError):
                found = None
        if found is None:
            break
        chain.append(found)
        spec = found
        if spec.submodule_search_locations is None:  # a module: later parts are its attributes
            break
    return chain


def _is_package(spec) -> bool:
    return spec.submodule_search_locations is not None


def _imported_modules(imports: tuple, package: Optional[str], extra_paths) -> list:
    """Specs of the modules an import list loads (parents and `from X import submodule` included)."""
    specs = []
    for level, module, names in imports:
        if level:
            if not package:  # a relative import in a file loaded by path: it cannot run, nothing to follow
                continue
            base = package.split(".")
            if level - 1 >= len(base):
                continue
            base = base[: len(base) - (level - 1)]
            module = ".".join(base + ([module] if module else []))
        if not module:
            continue
        chain = _spec_chain(module, extra_paths)
        specs += chain
        if chain and chain[-1].name == module and _is_package(chain[-1]):
            for name in names:  # `from pkg import mod` loads pkg.mod when mod is a submodule
                sub = _spec_chain(f"{module}.{name}", extra_paths)
                if len(sub) > len(chain):
                    specs.append(sub[-1])
    return specs


_SOURCES: dict = {}  # (import path, base) -> (sources, {file: (mtime_ns, size)}): re-checked by stat


def plugin_sources(path: str, base: Optional[Path] = None) -> list[str]:
    """Every module file the plug-in at `path` loads that is the researcher's (not
    site-packages, not the standard library, not src/fudbench): its own file (always,
    also when installed in site-packages), the `__init__` files of its package, and
    its imports, followed transitively through local modules. Static (`ast`): nothing
    is imported. Cached per process, re-checked by the files' mtimes and sizes."""
    key = (path, str(base))
    cached = _SOURCES.get(key)
    if cached is not None and all(_stat(f) == st for f, st in cached[1].items()):
        return list(cached[0])
    sources = _discover(path, base)
    _SOURCES[key] = (sources, {f: _stat(f) for f in sources})
    return list(sources)


def _stat(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _discover(path: str, base: Optional[Path]) -> list[str]:
    target, _ = _split(path)
    extra: list[str] = []
    queue: list[tuple[str, Optional[str]]] = []  # (file, the package its relative imports start from)
    sources: list[str] = []
    if target.endswith(".py"):
        root = resolve_path(target, base)
        if not root.is_file():
            return []
        extra = [str(root.resolve().parent)]  # its helpers, where the environment has no module of the name
        sources.append(str(root))
        queue.append((str(root), None))
    else:
        chain = _spec_chain(target)
        if not chain or chain[-1].name != target:
            return []
        for spec in chain:
            origin = spec.origin if spec.has_location else None
            if origin and origin.endswith(".py") and (spec is chain[-1] or is_local_source(origin)):
                sources.append(origin)
                queue.append((origin, spec.name if _is_package(spec) else spec.parent))
    seen = set(sources)
    while queue:
        file, package = queue.pop()
        for spec in _imported_modules(_file_imports(file), package, extra):
            origin = spec.origin if spec.has_location else None
            if origin in seen or not is_local_source(origin):
                continue
            seen.add(origin)
            sources.append(origin)
            queue.append((origin, spec.name if _is_package(spec) else spec.parent))
    return sources


def sources_digest(files: Iterable[str]) -> dict[str, str]:
    """{file: sha256 of its content} (a missing file: None), e.g. for a job's work-cache key."""
    out = {}
    for f in sorted(set(files)):
        try:
            out[f] = hashlib.sha256(Path(f).read_bytes()).hexdigest()
        except OSError:
            out[f] = None
    return out


def import_paths_of(settings: Optional[dict]) -> list[str]:
    """The plug-in import paths a config entry names: its `method` and its
    imputers' (`imputer_options.<name>.method`, and `imputer` / `imputers` /
    `fills` given as import paths)."""
    settings = settings or {}
    found = [settings.get("method")]
    found += [(o or {}).get("method") for o in (settings.get("imputer_options") or {}).values()]
    for key in ("imputer", "imputers", "fills"):
        value = settings.get(key)
        found += value if isinstance(value, (list, tuple)) else [value]
    return list(dict.fromkeys(p for p in found if is_import_path(p)))


def entry_sources(settings: Optional[dict], base: Optional[Path] = None) -> list[str]:
    """The source files of every plug-in a config entry names (inputs of its jobs)."""
    return list(dict.fromkeys(f for p in import_paths_of(settings) for f in plugin_sources(p, base)))


# ------------------------------------------------------------------ errors inside plug-ins


class PluginCallError(RuntimeError):
    """An exception raised inside a plug-in's code, re-raised naming the config
    entry and the plug-in (the original is chained: `raise ... from exc`)."""


def describe(path: str, base: Optional[Path] = None) -> str:
    """The plug-in as errors name it: its import path, and its file for a module path."""
    try:
        target, _ = _split(path)
    except PluginError:
        return repr(path)
    if target.endswith(".py"):
        return f"plug-in {absolute(path, base)}"
    chain = _spec_chain(target)
    origin = chain[-1].origin if chain and chain[-1].name == target and chain[-1].has_location else None
    return f"plug-in {path} ({origin})" if origin else f"plug-in {path}"


@contextlib.contextmanager
def blame(who: str, plugin: str, action: str):
    """Re-raise an exception from inside a plug-in as PluginCallError naming `who`
    (e.g. "explainer 'mine' (config key 'explainers.mine')"), the plug-in (describe)
    and what it was doing. Passed unchanged: out-of-memory errors (callers halve the
    batch on them), fudbench.core.checks' InputError (about the caller's inputs) and
    errors already named by an inner blame."""
    try:
        yield
    except PluginCallError:
        raise
    except Exception as exc:
        from fudbench.core.checks import InputError

        if isinstance(exc, InputError) or _is_out_of_memory(exc):  # the caller's inputs; OOM back-off
            raise
        raise PluginCallError(
            f"{who}: {plugin} raised {type(exc).__name__} in {action}: {exc} (the chained "
            f"traceback above shows where in the plug-in)"
        ) from exc


def _is_out_of_memory(exc: BaseException) -> bool:
    if "torch" not in sys.modules:
        return False
    from fudbench.core.batching import is_out_of_memory

    return is_out_of_memory(exc)
