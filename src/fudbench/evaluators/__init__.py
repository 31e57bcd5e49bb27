"""Evaluators: one module per evaluator, each exporting a torch-free SPEC
(fudbench.evaluators.base.EvaluatorSpec) and a `build` that imports torch.

    spec_of(name, settings)                       -> EvaluatorSpec
    build_evaluator(name, settings, evaluation, assets, device) -> Evaluator
    configured_curves(evaluators config)           -> {curve: CurveSpec}
    curve_catalogue()                             -> every curve the analysis knows

A config entry is named after its method or carries `method: <name>`
(e.g. `road_telea: {method: road, imputer: telea}`), as explainers do.
Adding an evaluator: a module here with SPEC and build, one line in
EVALUATORS, a config block (docs/architecture.md, "How to add a metric").

Grouped by what they measure (EvaluatorSpec.category): faithfulness/, localisation/, robustness/,
randomisation/, complexity/; quantus.py reaches Quantus' metrics of these kinds. Floor 4: imports the floors below.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from fudbench.evaluators.base import ALIAS_SEPARATOR, CurveSpec, EvaluatorSpec
from fudbench.core.plugins import PluginError, is_import_path, load_object

# name -> module holding its SPEC; order = the order of Table 7's columns and of the catalogue
EVALUATORS = {
    "fud": "fudbench.evaluators.faithfulness.fud",
    "insdel": "fudbench.evaluators.faithfulness.insdel",
    "sensn": "fudbench.evaluators.faithfulness.sensn",
    "infid": "fudbench.evaluators.faithfulness.infid",
    "srg": "fudbench.evaluators.faithfulness.srg",
    "idsds": "fudbench.evaluators.faithfulness.idsds",
    "road": "fudbench.evaluators.faithfulness.road",
    "distill": "fudbench.evaluators.faithfulness.distill",
    "gevaert": "fudbench.evaluators.faithfulness.gevaert",
    "ffid": "fudbench.evaluators.faithfulness.ffid",
    "irof": "fudbench.evaluators.faithfulness.irof",
    "rma": "fudbench.evaluators.localisation.rma",
    "max_sensitivity": "fudbench.evaluators.robustness.max_sensitivity",
    "avg_sensitivity": "fudbench.evaluators.robustness.avg_sensitivity",
    "local_lipschitz": "fudbench.evaluators.robustness.local_lipschitz",
    "mprt": "fudbench.evaluators.randomisation.model_parameter",
    "random_logit": "fudbench.evaluators.randomisation.random_logit",
    "sparseness": "fudbench.evaluators.complexity.sparseness",
    "complexity": "fudbench.evaluators.complexity.entropy",
    "quantus": "fudbench.evaluators.quantus",
}


# Plug-in evaluators (import paths of EvaluatorSpecs) a config or a call names, with the folder their relative
# file paths start from: the curve catalogue and the derived scores include them once registered
# (use_plugins: scripts/_fudbench_path.py registers the job's config, the Snakefile its own, fudbench.evaluate
# its metrics), so the analysis scores their curves as it scores the registered evaluators'.
PLUGINS: dict[str, Optional[Path]] = {}


def method_of(name: str, settings: Optional[dict]) -> str:
    """The registered evaluator behind a config entry."""
    return (settings or {}).get("method", name)


def use_plugins(evaluators: Optional[dict], base: Optional[Path] = None) -> list[str]:
    """Register the plug-in evaluators among a config's (or a call's) entries;
    returns their import paths. The analysis' curve tables are refreshed if
    they were built already."""
    import sys

    found = [m for name, settings in (evaluators or {}).items() if is_import_path(m := method_of(name, settings))]
    new = [m for m in found if m not in PLUGINS]
    for method in new:
        PLUGINS[method] = base
    curves = sys.modules.get("fudbench.analysis.curves")
    if new and curves is not None:
        curves.refresh()
    return found


def known_methods() -> list[str]:
    """The registered evaluators, then the plug-ins registered by use_plugins."""
    return [*EVALUATORS, *PLUGINS]


def spec(method: str, base: Optional[Path] = None) -> EvaluatorSpec:
    """The spec of a registered evaluator, or of a plug-in given by import path
    ("mypkg.mymetric:SPEC", "file.py:SPEC"; fudbench.core.plugins). `base` anchors a
    relative file path (default: where use_plugins registered it)."""
    if is_import_path(method):
        found = load_object(method, base if base is not None else PLUGINS.get(method))
        if not isinstance(found, EvaluatorSpec):
            raise PluginError(
                f"{method!r} names {found!r}, not an EvaluatorSpec "
                f"(fudbench.evaluators.base; docs/architecture.md, 'How to add a metric')"
            )
        return found
    if method not in EVALUATORS:
        raise KeyError(
            f"unknown evaluator {method!r}; registered: {', '.join(EVALUATORS)} (or an import path "
            f"'package.module:SPEC')"
        )
    return load_object(f"{EVALUATORS[method]}:SPEC")


def spec_of(name: str, settings: Optional[dict]) -> EvaluatorSpec:
    return spec(method_of(name, settings))


def entries_of(evaluators: dict, method: str) -> list[str]:
    """The config entries that run `method` (itself and its aliases)."""
    return [name for name, s in evaluators.items() if method_of(name, s) == method]


def entry_curves(name: str, settings: Optional[dict]) -> list[CurveSpec]:
    """The curves a config entry writes (renamed <curve>@<entry> when it aliases its method)."""
    s = spec_of(name, settings)
    resolved = s.resolve(settings)
    curves = s.curves(resolved) + s.derived_curves(resolved)
    method = method_of(name, settings)
    return curves if name == method else [c.aliased(name) for c in curves]


def configured_curves(evaluators: dict) -> dict[str, CurveSpec]:
    """{curve: CurveSpec} of every curve (and derived score) a config's evaluators write."""
    return {c.name: c for name, settings in evaluators.items() for c in entry_curves(name, settings)}


def curve_catalogue() -> dict[str, CurveSpec]:
    """Every curve the analysis knows by name without a config: each evaluator's
    curves under its default settings and its catalogue variants (e.g. SRG with
    every registered imputer). Aliased curves (<curve>@<entry>) are found by
    find_curve."""
    out = {}
    for method in known_methods():
        s = spec(method)
        for variant in s.catalogue_variants():
            resolved = s.resolve(variant)
            for c in s.curves(resolved) + s.derived_curves(resolved):
                out.setdefault(c.name, c)
    return out


def find_curve(name: str, catalogue: Optional[dict] = None) -> Optional[CurveSpec]:
    """The CurveSpec of a records curve, aliased ones included; None if unknown."""
    catalogue = curve_catalogue() if catalogue is None else catalogue
    if name in catalogue:
        return catalogue[name]
    base, sep, entry = name.partition(ALIAS_SEPARATOR)
    return catalogue[base].aliased(entry) if sep and base in catalogue else None


def build_evaluator(name: str, settings: Optional[dict], evaluation: dict, assets: Optional[dict], device):
    """The runnable Evaluator of a config entry (settings over the spec's defaults)."""
    from fudbench.core.plugins import blame, describe

    s = spec_of(name, settings)
    problems = s.check(settings or {}, f"evaluators.{name}")
    if problems:
        raise ValueError("; ".join(problems))
    method = method_of(name, settings)
    if is_import_path(method):  # a plug-in's build and run: errors inside name the entry and the plug-in
        who, plugin = (
            f"evaluator {name!r}" + ("" if name == method else f" (config key 'evaluators.{name}')"),
            describe(method),
        )
        with blame(who, plugin, f"building it ({s.build})"):
            evaluator = load_object(s.build)(s.resolve(settings), evaluation, assets or {}, device)
        run = evaluator.run

        def named_run(*args, **kwargs):
            with blame(who, plugin, "run"):
                return run(*args, **kwargs)

        evaluator.run = named_run
    else:
        evaluator = load_object(s.build)(s.resolve(settings), evaluation, assets or {}, device)
    if name != method:
        evaluator.alias = name
    if s.masks_needed(s.resolve(settings)):
        evaluator.reads_masks = True
    if s.explainer_needed(s.resolve(settings)):
        evaluator.reads_explainer = True
    options = (settings or {}).get("imputer_options") or {}
    for _, imputer in getattr(evaluator, "curves", None) or []:
        entry = getattr(imputer, "plugin_entry", None)  # a plug-in imputer (imputers.factory)
        if entry is not None:
            key = f"evaluators.{name}.imputer_options.{entry}" if entry in options else f"evaluators.{name}"
            imputer.plugin_who = f"imputer {entry!r} (config key '{key}')"
    return evaluator
