"""A researcher's own attribution method as an explainer (docs/your_own.md).

The config entry's `method` is an import path to either
- a class with the Explainer interface (subclass fudbench.explainers.base.Explainer:
  `explain(model, x, target, seeds=None) -> attribution`, optional `prepare`),
  built with the entry's other settings as keyword arguments; or
- a function `fn(model, x, target, seeds=None, **settings) -> attribution`,
  called with the entry's settings.
Either way the inputs and the returned map are checked like the built-in
methods' (fudbench.checks, through the Explainer base).
"""
from __future__ import annotations

import inspect

from fudbench.explainers.base import Explainer


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
            return [f"{key}: {obj.__module__}.{obj.__qualname__} is not an Explainer: subclass "
                    f"fudbench.explainers.base.Explainer and define explain(model, x, target, seeds=None)"]
        target = obj
    elif callable(obj):
        target = obj
        try:
            inspect.signature(obj).bind(None, None, None, seeds=None, **settings)
        except TypeError as exc:
            return [f"{key}: {getattr(obj, '__qualname__', obj)} cannot be called as fn(model, x, target, "
                    f"seeds=None, **settings) with settings {sorted(settings)}: {exc}"]
        return []
    else:
        return [f"{key}: {obj!r} is neither an Explainer class nor a function"]
    try:
        inspect.signature(target).bind(**settings)
    except TypeError as exc:
        return [f"{key}: {target.__qualname__}({', '.join(sorted(settings))}) does not match its constructor: {exc}"]
    return []


def plugin_explainer(name: str, obj, settings: dict) -> Explainer:
    problems = interface_problems(name, obj, settings)
    if problems:
        raise ValueError("; ".join(problems))
    return obj(**settings) if inspect.isclass(obj) else FunctionExplainer(obj, settings)
