"""A researcher's own attribution method as an explainer (docs/your_own.md).

The config entry's `method` is an import path to either
- a class with the Explainer interface (subclass fudbench.explainers.base.Explainer:
  `explain(model, x, target, seeds=None) -> attribution`, optional `prepare`),
  built with the entry's other settings as keyword arguments; or
- a function `fn(model, x, target, seeds=None, **settings) -> attribution`,
  called with the entry's settings.
Either way the inputs and the returned map are checked like the built-in
methods' (fudbench.core.checks, through the Explainer base), and it runs behind
PluginExplainer, the same in the workflow and in fudbench.explain:
- an exception raised inside it is re-raised as fudbench.core.plugins.PluginCallError
  naming the config entry and the plug-in's import path and file;
- a map that still requires grad (e.g. `return g * x` with x.requires_grad_())
  is detached when the plug-in returns it, with one warning saying how to avoid
  it (it would keep the autograd graph alive and cannot become a numpy array).
"""

from __future__ import annotations

import inspect
import logging

from fudbench.explainers.base import Explainer

log = logging.getLogger(__name__)


class FunctionExplainer(Explainer):
    """A plain function with the explain signature, as an Explainer."""

    def __init__(self, fn, settings: dict):
        self.fn, self.settings = fn, dict(settings)
        self.name = getattr(fn, "__name__", "function")

    def explain(self, model, x, target, seeds=None):
        return self.fn(model, x, target, seeds=seeds, **self.settings)


def interface_problems(name: str, obj, settings: dict) -> list[str]:
    """Why `obj` cannot serve as the explainer of entry `name` with these settings ([] if it can)."""
    key = f"config key 'explainers.{name}'"
    if inspect.isclass(obj):
        if not issubclass(obj, Explainer):
            return [
                f"{key}: {obj.__module__}.{obj.__qualname__} is not an Explainer: subclass "
                f"fudbench.explainers.base.Explainer and define explain(model, x, target, seeds=None)"
            ]
        target = obj
    elif callable(obj):
        target = obj
        try:
            inspect.signature(obj).bind(None, None, None, seeds=None, **settings)
        except TypeError as exc:
            return [
                f"{key}: {getattr(obj, '__qualname__', obj)} cannot be called as fn(model, x, target, "
                f"seeds=None, **settings) with settings {sorted(settings)}: {exc}"
            ]
        return []
    else:
        return [f"{key}: {obj!r} is neither an Explainer class nor a function"]
    try:
        inspect.signature(target).bind(**settings)
    except TypeError as exc:
        return [f"{key}: {target.__qualname__}({', '.join(sorted(settings))}) does not match its constructor: {exc}"]
    return []


class PluginExplainer(Explainer):
    """A plug-in explainer (an Explainer instance or a function) as the workflow and
    fudbench.explain run it: errors inside it name the entry and the plug-in, its
    map is detached if it still requires grad, and the inputs and the returned map
    are checked (Explainer base) under the entry's name."""

    def __init__(self, name: str, path: str, obj, settings: dict, base=None):
        from fudbench.core.plugins import blame, describe

        self.name, self.path = name, path
        # in fudbench.explain the entry is the import path itself (named by describe): no config key
        self.who = "explainer" if name == path else f"explainer {name!r} (config key 'explainers.{name}')"
        self.plugin = describe(path, base)
        self._warned = False
        if inspect.isclass(obj):
            with blame(self.who, self.plugin, f"building {obj.__qualname__}(**{settings})"):
                self.inner = obj(**settings)
            explain = type(self.inner).explain
            # the plug-in's own method, not the Explainer base's checked wrapper (the checks run here, once)
            raw = explain.__wrapped__ if getattr(explain, "fudbench_checked", False) else explain
            self._call = lambda *args, **kwargs: raw(self.inner, *args, **kwargs)
            self.uses_masks = bool(getattr(self.inner, "uses_masks", False))
        else:
            self.inner = FunctionExplainer(obj, settings)
            self._call = lambda model, x, target, seeds=None, **kwargs: obj(
                model, x, target, seeds=seeds, **settings, **kwargs
            )

    def check_where(self) -> str:
        return f"{self.who}, {self.plugin}: explain"

    def prepare(self, references) -> None:
        from fudbench.core.plugins import blame

        with blame(self.who, self.plugin, "prepare"):
            self.inner.prepare(references)

    def explain(self, model, x, target, seeds=None, **kwargs):
        import torch

        from fudbench.core.plugins import blame

        with blame(self.who, self.plugin, "explain"):
            attribution = self._call(model, x, target, seeds=seeds, **kwargs)
        if isinstance(attribution, torch.Tensor) and attribution.requires_grad:
            if not self._warned:
                log.warning(
                    "%s, %s: the returned map requires grad (it is still attached to the autograd graph, "
                    "e.g. `return g * x` with x.requires_grad_()); detached it. Return a detached map "
                    "(`(g * x).detach()`, or g * x.detach()) to silence this and free the graph sooner",
                    self.who,
                    self.plugin,
                )
                self._warned = True
            attribution = attribution.detach()
        return attribution


def plugin_explainer(name: str, obj, settings: dict, path: str | None = None, base=None) -> Explainer:
    """The explainer of config entry `name` whose method `path` names `obj`."""
    problems = interface_problems(name, obj, settings)
    if problems:
        raise ValueError("; ".join(problems))
    if path is None:
        path = f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', obj)}"
    return PluginExplainer(name, path, obj, settings, base)
