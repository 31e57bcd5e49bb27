"""Imputers of the evaluators that name them in config (their settings subclass
SingleFillSettings or FillSettings): resolving names and aliases, the assets they
read, whether they fill deterministically, and building them.

`imputer_options` maps an imputer name to its options. An entry may alias a
registered imputer under a new name, e.g. Gevaert's fills
`noise: {method: gaussian, std: 1.0, model_space: true}`; the name is what
the curves are called after (gevaert_del__noise).
"""

from __future__ import annotations

from typing import ClassVar, Optional

from fudbench.core.settings import Settings

IMPUTER_OPTIONS_SCHEMA = {"$ref": "#/$defs/imputer_options"}  # generated: imputer_options_schema()


def options_of(settings: dict, name: str) -> dict:
    """The options of imputer `name` in an evaluator's settings (method included)."""
    return dict((settings.get("imputer_options") or {}).get(name) or {})


def method_of(settings: dict, name: str) -> str:
    """The registered imputer behind a name (itself unless aliased)."""
    return options_of(settings, name).get("method", name)


def deterministic_fill(settings: dict, name: str, defaults: Optional[dict] = None) -> bool:
    """Whether fill `name` (an imputer, or an alias of one in imputer_options over the
    evaluator's `defaults`) draws no noise (fudbench.imputers.registry.DETERMINISTIC):
    the curves' `ranking_only`, decided here for every evaluator. A plug-in: False."""
    from fudbench.imputers.registry import DETERMINISTIC, canonical

    options = merged_options(defaults or {}, settings.get("imputer_options"))
    return canonical((options.get(name) or {}).get("method", name)) in DETERMINISTIC


def merged_options(defaults: dict, configured: Optional[dict]) -> dict:
    """Per-imputer options: an evaluator's defaults, each imputer's updated by the config's."""
    out = {name: dict(opts) for name, opts in (defaults or {}).items()}
    for name, opts in (configured or {}).items():
        out[name] = {**out.get(name, {}), **(opts or {})}
    return out


def imputer_options_schema() -> dict:
    """The JSON schema of an evaluator's imputer_options, generated from the imputers'
    declarations (fudbench.imputers.settings): a registered name takes its own options;
    a new name is an alias and needs `method:` (its options are checked by imputer_problems)."""
    from fudbench.imputers.registry import IMPUTERS
    from fudbench.imputers.settings import IMPUTER_SETTINGS
    from fudbench.core.settings import settings_schema

    method = {
        "description": "a registered imputer, or an import path to your own Imputer subclass "
        "('pkg.mod:MyFill', 'file.py:MyFill')",
        "anyOf": [{"enum": list(IMPUTERS)}, {"type": "string", "pattern": ":"}],
    }
    return {
        "type": "object",
        "description": "per-imputer options; a new name with `method:` aliases an imputer",
        "properties": {name: settings_schema(IMPUTER_SETTINGS[name]) for name in IMPUTERS},
        "additionalProperties": {"type": "object", "required": ["method"], "properties": {"method": method}},
    }


def imputer_problems(names, imputer_options: dict, key: str, defaults: Optional[dict] = None) -> list[str]:
    """Problems: names neither registered, aliased (`method:`) in imputer_options nor
    import paths; an alias's options that its registered method does not take."""
    from fudbench.imputers.registry import IMPUTERS
    from fudbench.imputers.settings import IMPUTER_SETTINGS
    from fudbench.core.plugins import is_import_path
    from fudbench.core.settings import integral_float_message, schema_validator, settings_schema

    options = merged_options(defaults or {}, imputer_options)
    unknown = [n for n in names if n not in IMPUTERS and "method" not in options.get(n, {}) and not is_import_path(n)]
    problems = (
        [
            f"config key '{key}': unknown imputer(s) {unknown}; registered: {', '.join(IMPUTERS)} (or define "
            f"an alias in imputer_options, e.g. {unknown[0]}: {{method: gaussian, std: 0.5}})"
        ]
        if unknown
        else []
    )
    options_key = key.rpartition(".")[0] + ".imputer_options"
    for name, opts in options.items():
        method = opts.get("method")
        if name in IMPUTERS or method not in IMPUTER_SETTINGS:
            continue  # registered names: the schema checks them; plug-ins: checked when built
        schema = settings_schema(IMPUTER_SETTINGS[method], extra={"method": {}})
        for error in schema_validator(schema).iter_errors(opts):
            where = ".".join([options_key, name, *map(str, error.absolute_path)])
            problems.append(
                f"config key '{where}': {integral_float_message(error) or error.message} (options of {method})"
            )
    return problems


def needs_references(settings: dict, name: str) -> bool:
    """train_set always reads the reference images; mean without an explicit mean
    takes their channel mean."""
    method = method_of(settings, name)
    return method == "train_set" or (method == "mean" and options_of(settings, name).get("mean") is None)


def imputer_assets(settings: dict, names) -> set[str]:
    """Asset keys the named imputers read, known at parse time."""
    needed = set()
    for name in names:
        if method_of(settings, name) == "diffusion_plain":
            needed.add("score_model")
        if needs_references(settings, name):
            needed.add("reference_images")
    return needed


def build_imputers(settings: dict, names, assets: Optional[dict], device) -> list:
    """The named imputers, the reference images loaded once if one of them reads them
    (the mean falls back to the classifier's normalisation mean without reference images)."""
    from fudbench.imputers.factory import build_imputer, load_references

    refs = None
    for name in names:
        if method_of(settings, name) == "train_set" or (
            needs_references(settings, name) and (assets or {}).get("reference_images")
        ):
            refs = load_references(assets, name)
            break
    out = []
    for name in names:
        options = options_of(settings, name)
        method = options.pop("method", name)
        imputer = build_imputer(method, options, refs, assets, device, entry=name)
        out.append(imputer)
    return out


class FillSettings(Settings):
    """Base of the settings of evaluators with one curve per fill (`fills`:
    imputer names or aliases) whose own defaults for the fills' options
    (DEFAULT_OPTIONS) a config's imputer_options update per imputer."""

    DEFAULT_OPTIONS: ClassVar[dict] = {}

    def problems(self, key: str) -> list[str]:
        return imputer_problems(self.fills, self.imputer_options, f"{key}.fills", self.DEFAULT_OPTIONS)

    @classmethod
    def resolved(cls, settings: dict) -> dict:
        """Settings with the fills' options over DEFAULT_OPTIONS."""
        return {**settings, "imputer_options": merged_options(cls.DEFAULT_OPTIONS, settings.get("imputer_options"))}


class SingleFillSettings(Settings):
    """Base of the settings of evaluators with one fill, an imputer name or alias
    under the key FILL_KEY (IDSDS: `fill`, ROAD: `imputer`) with its
    `imputer_options`: the checks, assets and build of that one fill, so a
    single-fill evaluator declares only its own settings.

        @dataclass(frozen=True)
        class MySettings(SingleFillSettings):
            FILL_KEY: ClassVar[str] = "fill"
            fill: str = setting("zero", description="imputer name or alias")
            imputer_options: dict = setting(default_factory=dict, schema=IMPUTER_OPTIONS_SCHEMA)
    """

    FILL_KEY: ClassVar[str] = "fill"

    def problems(self, key: str) -> list[str]:
        return imputer_problems([getattr(self, self.FILL_KEY)], self.imputer_options, f"{key}.{self.FILL_KEY}")

    @classmethod
    def assets(cls, settings: dict) -> set[str]:
        """The asset keys its fill reads (EvaluatorSpec's `assets`)."""
        return imputer_assets(settings, [settings[cls.FILL_KEY]])

    @classmethod
    def build_fill(cls, settings: dict, assets: Optional[dict], device):
        """Its fill, built (in a job: imports torch)."""
        (imputer,) = build_imputers(settings, [settings[cls.FILL_KEY]], assets, device)
        return imputer
