"""Your own classifier (`models.classifiers.<name>.arch: import`, docs/your_own.md):
a factory named by import path ("mypkg.models:build" or "path/to/file.py:build",
fudbench.core.plugins) that returns a torch.nn.Module taking NORMALISED images
(N, 3, H, W) and returning logits. The workflow wraps it as Classifier(net,
mean, std), so everything else sees [0, 1] images, and loads `weights` (a
state_dict file, optional) into it strictly.

The checkpoint stores the entry (factory, kwargs, weights as absolute paths),
so every later job calls the factory again to rebuild the architecture and
loads the stored state dict into it.

Torch-free at import: the config checks run at parse time. They do import the
researcher's module, to name a bad import path before any job.
"""

from __future__ import annotations

from fudbench.core.paths import PackagePathError, resolve_path

IMPORT_ARCH = "import"
# Keys only an `arch: import` entry uses (`weights` is shared with torchvision_*).
IMPORT_KEYS = ("factory", "kwargs", "mean", "std", "image_size")
# Keys an `arch: import` entry uses; any other is a mistake (e.g. a trained arch's `width`).
ALLOWED_KEYS = ("arch", "weights", "min_accuracy", *IMPORT_KEYS)


def is_imported(arch: str) -> bool:
    return arch == IMPORT_ARCH


def load_factory(path: str, base=None):
    """The factory a config names; raises PluginError saying what is wrong with the path."""
    from fudbench.core.plugins import PluginError, load_object

    factory = load_object(path, base)
    if not callable(factory):
        raise PluginError(
            f"{path!r} is not callable (it is {factory!r}): name a function or class that returns a torch.nn.Module"
        )
    return factory


def _factory_problem(key: str, path: str, base) -> str | None:
    from fudbench.core.plugins import PluginError

    try:
        load_factory(path, base)
    except PluginError as exc:
        return f"config key '{key}.factory': {exc}"
    except Exception as exc:  # the module itself raised on import
        return f"config key '{key}.factory': importing {path!r} failed ({type(exc).__name__}: {exc})"
    return None


def imported_classifier_problems(
    name: str, cfg: dict, image_size: tuple[int, str] | None = None, base=None
) -> list[str]:
    """Parse-time checks of an `arch: import` entry: its keys, the factory (imported,
    callable), the weights file, the input size against `image_size` (the images'
    side and the config key that sets it). `base` anchors relative paths (the
    repository)."""
    key = f"models.classifiers.{name}"
    problems = [
        f"config key '{key}.{k}': not used by arch: import (allowed: {', '.join(ALLOWED_KEYS)})"
        for k in cfg
        if k not in ALLOWED_KEYS
    ]
    factory = _factory_problem(key, cfg["factory"], base)
    problems += [factory] if factory else []
    try:
        weights = resolve_path(cfg.get("weights"), base)
    except PackagePathError as exc:
        return [*problems, f"config key '{key}.weights': {exc}"]
    if weights is not None and not weights.is_file():
        problems.append(
            f"config key '{key}.weights': {weights} does not exist; give a state_dict file of the "
            f"factory's network (torch.save(net.state_dict(), path)) or null"
        )
    size = cfg.get("image_size")
    if size is not None and image_size is not None and size != image_size[0]:
        problems.append(
            f"config key '{key}.image_size': {size}, but the images are {image_size[0]}x{image_size[0]} "
            f"({image_size[1]}); the network must take the images' size"
        )
    return problems


def misplaced_import_keys(name: str, cfg: dict) -> list[str]:
    """Keys of `arch: import` in another arch's entry, which would be ignored."""
    return [
        f"config key 'models.classifiers.{name}.{k}': only used by arch: import, not {cfg['arch']}"
        for k in IMPORT_KEYS
        if k in cfg
    ]


def resolved_entry(cfg: dict, repo) -> dict:
    """The entry as jobs get it: a factory file and the weights file as absolute paths."""
    from fudbench.core.plugins import absolute

    out = {**cfg, "factory": absolute(cfg["factory"], repo)}
    if cfg.get("weights"):
        out["weights"] = str(resolve_path(cfg["weights"], repo))
    return out


def factory_sources(cfg: dict, repo=None) -> list[str]:
    """Every source file of an entry's factory, its helper modules and package
    included (fudbench.core.plugins.plugin_sources); [] for another arch."""
    from fudbench.core.plugins import plugin_sources

    return plugin_sources(cfg["factory"], repo) if is_imported(cfg["arch"]) else []


def build_net(cfg: dict, name: str | None = None):
    """The factory's network, called with the entry's kwargs (random or the factory's own weights).
    An exception inside the factory is re-raised naming the entry and the factory (PluginCallError)."""
    from torch import nn

    from fudbench.core.plugins import blame, describe

    factory = load_factory(cfg["factory"])
    who = f"classifier {name!r} (config key 'models.classifiers.{name}.factory')" if name else "classifier factory"
    with blame(who, describe(cfg["factory"]), f"building the network with kwargs {cfg.get('kwargs', {})}"):
        net = factory(**cfg.get("kwargs", {}))
    if not isinstance(net, nn.Module):
        raise TypeError(
            f"the classifier factory {cfg['factory']} returned a {type(net).__name__}, not a torch.nn.Module"
        )
    return net


def load_weights(net, cfg: dict, name: str) -> str | None:
    """Load the entry's `weights` state_dict file into `net` strictly; returns its sha256 (None: no file)."""
    import torch

    from fudbench.core.fingerprint import file_sha256

    path = cfg.get("weights")
    if not path:
        return None
    key = f"models.classifiers.{name}.weights"
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise RuntimeError(
            f"{path} ({key}) could not be read as a state_dict ({type(exc).__name__}: {exc}); "
            f"save it with torch.save(net.state_dict(), path)"
        ) from exc
    try:
        net.load_state_dict(state, strict=True)
    except (RuntimeError, TypeError, AttributeError) as exc:
        raise RuntimeError(f"{path} ({key}) does not fit the network {cfg['factory']} builds: {exc}") from exc
    return file_sha256(path)
