"""Configuration: schema validation with errors that name the key, plus the
checks a schema cannot express (registered names, sorted ratios, sizes).

Kept free of torch imports: the Snakefile calls this at parse time.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from fudbench.core.settings import integral_float_message, schema_validator


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the key and the fix."""


def load_yaml(path) -> dict:
    """A YAML file (a config, an overlay, the schema) read by the one loader that refuses duplicate keys
    (fudbench.config.files.load_yaml_file)."""
    from fudbench.config.files import DuplicateKeyError, load_yaml_file

    try:
        return load_yaml_file(path)
    except DuplicateKeyError as exc:
        raise ConfigError(str(exc)) from None


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def _describe(error, prefix=()) -> str:
    """One schema error as a message naming the config key (prefix: the path of
    the validated value inside the config)."""
    key = _key((*prefix, *error.absolute_path))
    v = error.validator
    why = (
        f" ({error.schema['description']})" if isinstance(error.schema, dict) and "description" in error.schema else ""
    )
    wrong_number = integral_float_message(error)
    if wrong_number:
        return f"config key '{key}': {wrong_number}"
    if v == "uniqueItems" and isinstance(error.instance, list):
        repeated = [x for i, x in enumerate(error.instance) if x in error.instance[:i]]
        return f"config key '{key}': {', '.join(dict.fromkeys(map(repr, repeated)))} listed more than once{why}"
    if v in ("minimum", "exclusiveMinimum", "minItems") and why:
        return f"config key '{key}': {error.message}{why}"
    if v == "enum":
        allowed = ", ".join(repr(a) for a in error.validator_value)
        return f"config key '{key}': {error.instance!r} is not allowed; allowed values: {allowed}"
    if v == "additionalProperties" and isinstance(error.instance, dict):
        known = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(known))
        hint = f"; allowed keys: {', '.join(known)}" if known else ""
        return f"config key '{key}': unknown key(s) {', '.join(map(repr, extra))}{hint}"
    if v == "pattern":
        hint = f" ({error.schema['description']})" if "description" in error.schema else ""
        return f"config key '{key}': {error.instance!r} does not match the required form{hint}"
    return f"config key '{key}': {error.message}"


def validate_schema(config: dict, schema: dict) -> None:
    validator = schema_validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = "\n  ".join(_describe(e) for e in errors)
        raise ConfigError(f"invalid configuration ({len(errors)} problem(s)):\n  {lines}")


def _entries(config: dict, section: str) -> dict:
    entries = config.get(section)
    return {n: s for n, s in entries.items() if isinstance(s, dict)} if isinstance(entries, dict) else {}


def _plugin_spec(method: str, base):
    """The EvaluatorSpec a plug-in import path names, None if it does not load
    (_evaluator_problems reports why)."""
    from fudbench.evaluators import spec
    from fudbench.core.plugins import PluginError

    try:
        return spec(method, base)
    except PluginError:
        return None


def with_entry_schemas(schema: dict, config: dict, base=None) -> dict:
    """The schema with one property per configured explainer and evaluator entry
    whose method is registered (or an evaluator plug-in that loads): the JSON
    schema generated from that method's settings dataclass
    (fudbench.explainers.settings, fudbench.evaluators.<name>, the plug-in's
    EvaluatorSpec), so defaults and constraints are declared there only."""
    from fudbench.evaluators import EVALUATORS, spec
    from fudbench.evaluators.imputing import imputer_options_schema
    from fudbench.explainers.settings import SETTINGS as EXPLAINER_SETTINGS
    from fudbench.core.plugins import is_import_path
    from fudbench.core.settings import settings_schema

    method = {"method": {"type": "string"}}
    evaluator_specs = {
        n: spec(m) if m in EVALUATORS else _plugin_spec(m, base)
        for n, s in _entries(config, "evaluators").items()
        if (m := s.get("method", n)) in EVALUATORS or is_import_path(m)
    }
    generated = {
        "explainers": {
            n: settings_schema(EXPLAINER_SETTINGS[m], extra=method)
            for n, s in _entries(config, "explainers").items()
            if (m := s.get("method", n)) in EXPLAINER_SETTINGS
        },
        "evaluators": {n: s.schema() for n, s in evaluator_specs.items() if s is not None},
    }
    properties = dict(schema["properties"])
    for section, entries in generated.items():
        properties[section] = {**properties[section], "properties": entries}
    definitions = {**schema.get("$defs", {}), "imputer_options": imputer_options_schema()}
    return {**schema, "$defs": definitions, "properties": properties}


def non_finite_numbers(value, path=()) -> list[str]:
    """Problems for every NaN or infinite number anywhere in the config (YAML's
    .nan / .inf pass a schema's range checks, since NaN compares false)."""
    if isinstance(value, float) and not math.isfinite(value):
        return [f"config key '{_key(path)}': {value} is not a finite number"]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in non_finite_numbers(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in non_finite_numbers(v, (*path, i))]
    return []


def _evaluator_problems(config: dict, base=None) -> list[str]:
    from fudbench.evaluators import EVALUATORS, entries_of, method_of, spec
    from fudbench.core.plugins import PluginError, is_import_path

    problems = []
    for name, settings in config["evaluators"].items():
        method = method_of(name, settings)
        if is_import_path(method):  # a plug-in EvaluatorSpec: loaded now, its settings checked as a built-in's
            try:
                found = spec(method, base).check(settings, f"evaluators.{name}")
                problems += found or _evaluator_mask_problems(name, spec(method, base), settings, config["data"])
            except PluginError as exc:
                problems.append(f"config key 'evaluators.{name}.method': {exc}")
            continue
        if method not in EVALUATORS:
            where = f"evaluators.{name}" + (".method" if "method" in settings else "")
            problems.append(
                f"config key '{where}': unknown evaluator {method!r}; "
                f"registered: {', '.join(EVALUATORS)} (or an EvaluatorSpec by import path, "
                f"'package.module:SPEC' or 'path/to/file.py:SPEC')"
            )
            continue
        found = spec(method).check(settings, f"evaluators.{name}")
        size = _image_size(config["data"])
        if method == "quantus" and not found and size:  # Quantus' asserts on the image size, named here
            from fudbench.evaluators.quantus import value_problems

            resolved = spec(method).resolve(settings)
            found = value_problems(resolved["settings"], f"evaluators.{name}.settings", *size, resolved["metric"])
        problems += found or _evaluator_mask_problems(name, spec(method), settings, config["data"])
    ffid = entries_of(config["evaluators"], "ffid")
    shared = [{k: spec("ffid").resolve(config["evaluators"][e])[k] for k in ("beta", "finetune")} for e in ffid]
    if any(s != shared[0] for s in shared[1:]):
        problems.append(
            f"config key 'evaluators': the ffid entries {ffid} must share beta and finetune (one "
            f"surrogate per model is fine-tuned with them)"
        )
    return problems


def _evaluator_mask_problems(name: str, entry, settings: dict, data: dict) -> list[str]:
    """A metric that reads ground-truth masks (EvaluatorSpec.needs_masks) on data without them: refused
    now, naming the entry, instead of inside its evaluate job."""
    if has_masks(data) or not entry.masks_needed(entry.resolve(settings)):
        return []
    method = settings.get("method", name)
    return [
        f"config key 'evaluators.{name}': the {method} metric ({entry.description}) reads ground-truth object "
        f"masks, and data.source {data['source']!r} has none"
        + (" (data.folder.masks is not set)" if data["source"] == "folder" else "")
        + f"; give masks (data.folder.masks: one PNG per image, docs/your_own.md) or drop the entry with "
        f"`{name}: null` under evaluators in your overlay"
    ]


def _explainer_settings_problems(name: str, method: str, settings: dict, path: tuple = ()) -> list[str]:
    """Cross-field checks of an explainer entry; a wrapper's (degrade,
    randomise_model: fudbench.explainers.WRAPPERS) base and base_settings are
    checked as that base's own entry would be, nested wrappers too. `path`: where
    the settings sit in the config (default: the entry)."""
    from fudbench.explainers import EXPLAINERS, WRAPPERS
    from fudbench.explainers.settings import SETTINGS
    from fudbench.core.settings import settings_schema

    path = path or ("explainers", name)
    key = _key(path)
    values = {k: v for k, v in settings.items() if k != "method"}
    if method not in WRAPPERS:
        return SETTINGS[method](**values).problems(key)
    base = values.get("base")
    if base not in EXPLAINERS or base == method:
        what = {
            "degrade": "a degraded copy",
            "randomise_model": "a randomised-model copy",
            "reorder": "a reordered copy",
            "translate": "a translated copy",
            "block_shuffle": "a block-shuffled copy",
        }.get(method, f"a {method} copy")
        return [
            f"config key '{key}.base': {base!r} is not an explainer {what} can wrap; registered: "
            f"{', '.join(m for m in EXPLAINERS if m != method)}"
        ]
    base_settings = values.get("base_settings") or {}
    errors = sorted(
        schema_validator(settings_schema(SETTINGS[base])).iter_errors(base_settings),
        key=lambda e: list(map(str, e.absolute_path)),
    )
    if errors:
        return [_describe(e, prefix=(*path, "base_settings")) for e in errors]
    return _explainer_settings_problems(name, base, base_settings, (*path, "base_settings"))


def _mask_method(method: str, settings: dict):
    """The ground-truth-mask method (oracle, background) an entry runs, itself or
    as the base of (nested) wrappers; None if it runs none."""
    from fudbench.explainers import MASK_METHODS, WRAPPERS

    if method in MASK_METHODS:
        return method
    base, base_settings = settings.get("base"), settings.get("base_settings") or {}
    if method in WRAPPERS and isinstance(base, str) and isinstance(base_settings, dict):
        return _mask_method(base, base_settings)
    return None


# Classifier archs with attention and LayerNorm: LRP has no rules for them (fudbench.explainers.lrp refuses
# the network when the job builds it; named here, before any job)
ATTENTION_ARCHS = ("small_vit", "torchvision_vit_b_16")


def _runs_base(method: str, settings: dict) -> str:
    """The method an entry finally runs: itself, or the base of its (nested) wrappers."""
    from fudbench.explainers import WRAPPERS

    base, base_settings = settings.get("base"), settings.get("base_settings") or {}
    if method in WRAPPERS and isinstance(base, str) and isinstance(base_settings, dict):
        return _runs_base(base, base_settings)
    return method


def _lrp_on_attention_problems(config: dict) -> list[str]:
    """LRP on a ViT was refused only in its explain job: every explainer runs on every classifier."""
    from fudbench.explainers import method_of

    vits = [n for n, c in config["models"]["classifiers"].items() if c.get("arch") in ATTENTION_ARCHS]
    return [
        f"config key 'explainers.{name}': LRP has no rules for attention or LayerNorm, and every explainer "
        f"runs on every classifier: models.classifiers {vits} are ViTs; remove the entry (cam or a captum "
        f"method explain ViTs) or run it in a config without them"
        for name, settings in config["explainers"].items()
        if vits and _runs_base(method_of(name, settings), settings) == "lrp"
    ]


def _cue_analysis_problems(config: dict) -> list[str]:
    """analysis.cue configures the planted-cue rules (rules/cue.smk), which run only with a data cue:
    without one it was silently ignored."""
    data = config["data"]
    if "cue" not in config["analysis"] or (data["source"] == "synthetic" and (data.get("synthetic") or {}).get("cue")):
        return []
    return [
        "config key 'analysis.cue': set, but data.synthetic.cue is not, so the planted-cue rules do not run "
        "and these settings would be ignored; remove analysis.cue (or set it to null), or plant a cue "
        "(data.synthetic.cue; studies/planted_cue/cue.yaml)"
    ]


def has_masks(data: dict) -> bool:
    """The evaluated images come with object masks: the synthetic benchmark's, or a
    folder's `masks` (ImageNet has none)."""
    return data["source"] == "synthetic" or (
        data["source"] == "folder" and bool((data.get("folder") or {}).get("masks"))
    )


def has_fud(config: dict) -> bool:
    """The config has FUD's evaluator entry `fud` (the diagnostics run its settings)."""
    from fudbench.evaluators import method_of

    evaluators = config["evaluators"]
    return isinstance(evaluators.get("fud"), dict) and method_of("fud", evaluators["fud"]) == "fud"


def score_model_users(config: dict, base=None) -> list[str]:
    """The evaluator entries that read the diffusion score model (FUD, its
    variants, a diffusion fill: their spec's `assets`). Only then is
    `models.score_model` required, and its rules and files (a guided-diffusion
    checkpoint) part of the run. An entry that does not resolve is left out
    (reported on its own)."""
    from fudbench.evaluators import method_of, spec
    from fudbench.core.plugins import PluginError

    users = []
    for name, settings in (config.get("evaluators") or {}).items():
        try:
            entry = spec(method_of(name, settings), base)
            if "score_model" in entry.assets(entry.resolve(settings)):
                users.append(name)
        except (KeyError, TypeError, ValueError, PluginError):
            continue
    return users


def fud_diagnostics_on(config: dict) -> bool:
    """Whether FUD's diagnostics and timing (rules/diagnostics.smk: Figs. 3, 5, 6,
    Tables 5 and 10) are in the DAG: with the evaluator `fud` and both
    analysis.diagnostics and analysis.timing. A config without FUD is supported:
    these rules are left out and their analysis sections ignored."""
    analysis = config["analysis"]
    return has_fud(config) and "diagnostics" in analysis and "timing" in analysis


def _reference_problems(config: dict) -> list[str]:
    """Names used by the analysis, plots and meta sections must be configured:
    a missing one would silently drop tables and figures."""
    from fudbench.evaluators import configured_curves

    explainers, models = set(config["explainers"]), set(config["models"]["classifiers"])
    analysis, problems = config["analysis"], []

    def unknown(key, names, known, what, fix=""):
        missing = [n for n in names if n not in known]
        if missing:
            problems.append(
                f"config key '{key}': {missing} not in {what} ({', '.join(sorted(known))})"
                + (f"; {fix}" if fix else "")
            )

    # the defaults name the default's explainers: an overlay that replaced them must say which of its own
    unknown(
        "analysis.pooled_explainers",
        analysis.get("pooled_explainers") or [],
        explainers,
        "explainers",
        "set analysis.pooled_explainers: null (= every explainer of the run) or list some of them",
    )
    unknown(
        "plots.qualitative_explainers",
        config["plots"].get("qualitative_explainers") or [],
        explainers,
        "explainers",
        "set plots.qualitative_explainers to a few of them",
    )
    if has_fud(config):  # the diagnostics are FUD's: without it they are left out, unchecked
        if "diagnostics" in analysis:
            unknown("analysis.diagnostics.explainer", [analysis["diagnostics"]["explainer"]], explainers, "explainers")
        if "timing" in analysis:
            unknown("analysis.timing.model", [analysis["timing"]["model"]], models, "models.classifiers")
    try:
        curves = configured_curves(config["evaluators"])
    except (KeyError, TypeError, ValueError):  # an evaluator entry is itself wrong: reported on its own
        return problems
    metrics = set(curves) | {c.label for c in curves.values()}
    missing = [m for m in analysis.get("meta_metrics") or [] if m not in metrics]
    if missing:
        problems.append(
            f"config key 'analysis.meta_metrics': {missing} are not curves of the configured "
            f"evaluators; choose from {', '.join(sorted(curves))}"
        )
    return problems


def _first_shard_problems(config: dict) -> list[str]:
    """FUD's diagnostics (Figs. 3, 5, 6, Table 5) and timing (Table 10) read the first
    n_images images of shard 0 (rules/diagnostics.smk): asking for more than the shard
    holds is an error, not a silent cap that would let the tables rest on fewer images."""
    data, analysis = config["data"], config["analysis"]
    available = min(data["shard_size"], data["n_eval"])
    problems = []
    for section in ("diagnostics", "timing"):
        n = (analysis.get(section) or {}).get("n_images") if has_fud(config) else None
        if isinstance(n, int) and n > available:
            problems.append(
                f"config key 'analysis.{section}.n_images': {n} images requested, but its rules read "
                f"shard 0, which holds {available} (data.shard_size = {data['shard_size']}, data.n_eval "
                f"= {data['n_eval']}); lower analysis.{section}.n_images to {available} or raise "
                f"data.shard_size" + (" and data.n_eval" if data["n_eval"] < n else "")
            )
    return problems


def _plugin_explainer_problems(name: str, method: str, settings: dict, base) -> list[str]:
    """An explainer given by import path: it must load and have the Explainer interface.
    Loading imports the researcher's module at parse time (and with it, usually, torch)."""
    from fudbench.explainers.plugin import interface_problems
    from fudbench.core.plugins import PluginError, load_object

    try:
        obj = load_object(method, base)
    except PluginError as exc:
        return [f"config key 'explainers.{name}.method': {exc}"]
    return interface_problems(name, obj, {k: v for k, v in settings.items() if k != "method"})


def check_semantics(config: dict, base=None) -> None:
    """Checks beyond the schema; each names the key and what to do. `base`: the
    folder relative plug-in paths start from (the repository)."""
    from fudbench.explainers import EXPLAINERS, method_of
    from fudbench.core.plugins import is_import_path

    problems = []
    for name, settings in config["explainers"].items():
        method = method_of(name, settings)
        if is_import_path(method):
            problems += _plugin_explainer_problems(name, method, settings, base)
        elif method not in EXPLAINERS:
            where = f"explainers.{name}" + (".method" if "method" in settings else "")
            problems.append(
                f"config key '{where}': unknown explainer {method!r}; registered: {', '.join(sorted(EXPLAINERS))}"
            )
        elif (masked := _mask_method(method, settings)) and not has_masks(config["data"]):
            problems.append(
                f"config key 'explainers.{name}': the {masked} explainer needs ground-truth masks "
                f"(data.source: synthetic, or data.folder.masks); drop it with `{name}: null` under explainers in your "
                f"overlay, or replace the section: `explainers: {{_replace: true, ...}}`"
            )
        else:
            problems += _explainer_settings_problems(name, method, settings)
    problems += _lrp_on_attention_problems(config) + _cue_analysis_problems(config)
    problems += _evaluator_problems(config, base)
    problems += _reference_problems(config)
    problems += _first_shard_problems(config)
    ratios = config["evaluation"]["ratios"]
    if any(b <= a for a, b in zip(ratios, ratios[1:])):
        problems.append(f"config key 'evaluation.ratios': {ratios} must be strictly increasing")
    data = config["data"]
    if data.get("eval_offset") and data["source"] != "synthetic":
        problems.append(
            f"config key 'data.eval_offset': only the synthetic benchmark has it (data.source is "
            f"{data['source']!r}); remove it"
        )
    if data["source"] == "synthetic":
        syn = data.get("synthetic")
        if syn is None:
            problems.append("config key 'data.synthetic': required when data.source is 'synthetic'")
        else:
            offset = data.get("eval_offset", 0)
            if offset + data["n_eval"] > syn["n_test"]:
                problems.append(
                    f"config key 'data.n_eval': {data['n_eval']}"
                    + (f" from data.eval_offset {offset}" if offset else "")
                    + f" exceeds data.synthetic.n_test = {syn['n_test']}; lower n_eval"
                    + (" or eval_offset" if offset else "")
                    + " or raise n_test"
                )
            lo, hi = syn["object_scale"]
            if lo > hi:
                problems.append(f"config key 'data.synthetic.object_scale': [{lo}, {hi}] must be [min, max]")
            if abs(syn["dark"] - syn["light"]) < 0.2:
                problems.append("config key 'data.synthetic.dark'/'light': brightness classes must differ by >= 0.2")
            if syn.get("cue"):  # lazy: the generator imports scipy, which a config without a cue need not pay
                from fudbench.data.synthetic import cue_problems

                problems += cue_problems(syn)
    if data["source"] == "imagenet" and "imagenet" in data:
        im = data["imagenet"]
        if im["resize"] < im["crop"]:
            problems.append(
                f"config key 'data.imagenet.resize': {im['resize']} must be >= data.imagenet.crop "
                f"= {im['crop']} (shorter side resized, then centre-cropped)"
            )
    if data["source"] == "folder" and "folder" in data:
        problems += _folder_problems(data, base)
    problems += _pretrained_model_problems(config, base)
    problems += _shipped_model_problems(config, base)
    problems += _training_split_problems(config)
    for name, c in config["models"]["classifiers"].items():
        if c["arch"].startswith("torchvision_") or c["arch"] == "import":  # checked in _pretrained_model_problems
            continue
        if c["arch"] == "small_vit":
            for k in ("patch_size", "dim", "depth", "heads"):
                if k not in c:
                    problems.append(f"config key 'models.classifiers.{name}.{k}': required for arch small_vit")
            if data["source"] == "synthetic" and "patch_size" in c:
                if data["synthetic"]["image_size"] % c["patch_size"]:
                    problems.append(
                        f"config key 'models.classifiers.{name}.patch_size': {c['patch_size']} "
                        f"must divide data.synthetic.image_size = {data['synthetic']['image_size']}"
                    )
            if "dim" in c and "heads" in c and c["dim"] % c["heads"]:
                problems.append(f"config key 'models.classifiers.{name}.heads': must divide dim = {c['dim']}")
        elif "width" not in c:
            problems.append(f"config key 'models.classifiers.{name}.width': required for arch small_cnn")
    problems += _score_model_problems(config, base)
    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems))


def _pretrained_model_problems(config: dict, base=None) -> list[str]:
    """Which models fit which data source (synthetic | imagenet | folder):
    - small_* are trained by the workflow on the synthetic training split: synthetic only;
    - torchvision_* are ImageNet-1k classifiers: imagenet, or folder images labelled
      with ImageNet-1k class indices;
    - import (your own factory, fudbench.models.imported): any source;
    - the score model `shipped` / `train` is the synthetic benchmark's: synthetic only;
      `guided_diffusion` (a pretrained model of the images' domain): imagenet and folder.
    `base` anchors relative paths (the repository)."""
    from fudbench.models.imported import imported_classifier_problems, is_imported, misplaced_import_keys
    from fudbench.models.torchvision_models import FIXED_INPUT_SIZE, WEIGHT_FILES

    data = config["data"]
    problems = []
    for name, c in config["models"]["classifiers"].items():
        key = f"models.classifiers.{name}"
        if not is_imported(c["arch"]):
            problems += misplaced_import_keys(name, c)
        if c["arch"] in WEIGHT_FILES:
            if c.get("weights") not in WEIGHT_FILES[c["arch"]]:
                problems.append(
                    f"config key '{key}.weights': {c.get('weights')!r} is not available for "
                    f"{c['arch']}; choose one of {', '.join(WEIGHT_FILES[c['arch']])}"
                )
            if data["source"] not in ("imagenet", "folder"):
                problems.append(
                    f"config key '{key}.arch': {c['arch']} is an ImageNet-1k classifier and needs "
                    f"data.source: imagenet (or folder, with ImageNet-1k class indices as labels)"
                )
            size = FIXED_INPUT_SIZE.get(c["arch"])
            crop = data.get(data["source"], {}).get("crop")
            if size and crop and crop != size:
                problems.append(
                    f"config key 'data.{data['source']}.crop': {crop}, but {key} ({c['arch']}) takes "
                    f"{size}x{size} images only"
                )
        elif is_imported(c["arch"]):
            problems += imported_classifier_problems(name, c, _image_size(data), base)
        elif data["source"] != "synthetic":
            problems.append(
                f"config key '{key}.arch': {c['arch']} is trained by the workflow on the synthetic "
                f"training split and needs data.source: synthetic; use a torchvision_* arch or "
                f"arch: import (your own classifier), and drop this one with `{name}: null` under "
                f"models.classifiers in your overlay, or replace the section: "
                f"`classifiers: {{_replace: true, mine: {{arch: import, ...}}}}` (config/your_own.yaml)"
            )
    return problems


def _score_model_problems(config: dict, base=None) -> list[str]:
    """`models.score_model` is checked only where an evaluator of the run reads it
    (score_model_users): a run without FUD or a diffusion fill needs none, and
    whatever is left there (the default's synthetic one) is ignored."""
    users = score_model_users(config, base)
    if not users:
        return []
    score, source = config["models"].get("score_model"), config["data"]["source"]
    if score is None:
        fix = (
            "source: guided_diffusion with its guided_diffusion block, as in config/paper.yaml"
            if source != "synthetic"
            else "source: shipped or train, as in config/config.yaml"
        )
        return [
            f"config key 'models.score_model': required, because the evaluator(s) {users} read the diffusion "
            f"score model (FUD, its variants, diffusion fills); set it ({fix}), or drop those evaluators "
            f"(e.g. `fud: null` in an overlay, or `evaluators: {{_replace: true, ...}}` without them)"
        ]
    problems = []
    if score["source"] in ("train", "shipped") and source != "synthetic":
        problems.append(
            f"config key 'models.score_model.source': {score['source']!r} is the synthetic benchmark's "
            f"score model and needs data.source: synthetic, but the evaluator(s) {users} read it; use "
            f"guided_diffusion (a pretrained model of the images' domain, as in config/paper.yaml: "
            f"training one on ImageNet or folder images is not supported), or drop those evaluators "
            f"(`fud: null`)"
        )
    if "attention" in score and len(score["attention"]) != len(score.get("block_out_channels", ())):
        problems.append("config key 'models.score_model.attention': needs one flag per entry of block_out_channels")
    return problems


def _training_split_problems(config: dict) -> list[str]:
    """ImageNet and folder data are evaluated images only: evaluators that read the
    synthetic training split (F-Fidelity's surrogate is fine-tuned on it; train-set
    and dataset-mean fills draw from it) cannot run on them."""
    from fudbench.evaluators import EVALUATORS, method_of, spec_of

    uses = {
        "surrogate": "F-Fidelity fine-tunes its surrogate on the synthetic training split",
        "reference_images": "a train_set or dataset-mean fill draws from the synthetic training split (a mean "
        "fill with an explicit imputer_options.mean does not)",
    }
    source, problems = config["data"]["source"], []
    if source == "synthetic":
        return problems
    for name, settings in config["evaluators"].items():
        if method_of(name, settings) not in EVALUATORS:
            continue  # reported by _evaluator_problems (plug-ins: their jobs name missing assets)
        entry = spec_of(name, settings)
        try:
            assets = entry.assets(entry.resolve(settings))
        except (KeyError, TypeError, ValueError):  # the entry is itself wrong: reported on its own
            continue
        problems += [
            f"config key 'evaluators.{name}': {uses[a]}, which data.source: {source} does not have; "
            f"remove the entry (`{name}: null` under evaluators in your overlay, or replace the section: "
            f"`evaluators: {{_replace: true, ...}}`)"
            for a in sorted(assets & set(uses))
        ]
    return problems


def _image_size(data: dict) -> tuple[int, str] | None:
    """(side of the evaluated images, its config key): the synthetic image size, else the centre crop."""
    source = data["source"]
    key = "image_size" if source == "synthetic" else "crop"
    size = (data.get(source) or {}).get(key)
    return None if size is None else (size, f"data.{source}.{key}")


def _folder_problems(data: dict, base) -> list[str]:
    """data.folder (your own images): paths resolved against `base`, the labels file
    read and every listed file looked up; no image is decoded here (the asset check
    before any job does)."""
    from fudbench.data.folder import folder_problems, resolved_folder
    from fudbench.core.paths import PackagePathError

    try:
        folder = resolved_folder(data["folder"], base)
    except PackagePathError as exc:
        return [f"config key 'data.folder': {exc}"]
    return folder_problems(folder, data["n_eval"])


def validate_config(config: dict, schema_path) -> dict:
    """Validate a config dict (raises ConfigError) and return it unchanged."""
    from fudbench.config.names import name_problems

    # names that become paths first (fudbench.config.names): a bad one must not reach any check that builds paths
    problems = name_problems(config) or non_finite_numbers(config)
    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems))
    base = Path(schema_path).resolve().parent.parent
    schema = with_entry_schemas(load_yaml(Path(schema_path)), config, base)
    validate_schema(config, schema)
    check_semantics(config, base=base)
    return config


def load_config(path, schema_path=None) -> dict[str, Any]:
    """Load and validate a config file (schema defaults to config/schema.yaml
    beside it). An overlay (a file without every required key, e.g.
    config/meta.yaml) is resolved over the config.yaml beside it, or the
    repository's, as the workflow resolves it (fudbench.config.files)."""
    from fudbench.config.files import DEFAULT_CONFIG, resolve_config

    path = Path(path)
    schema_path = schema_path or path.parent / "schema.yaml"
    default = path.parent / "config.yaml"
    config = resolve_config([path], default if default.is_file() else DEFAULT_CONFIG, schema_path)
    return validate_config(config, schema_path)


def _shipped_model_problems(config: dict, base=None) -> list[str]:
    """source: shipped classifiers (and their F-Fidelity surrogates): the
    files and the fingerprint of the settings they were trained with, checked
    before any job (fudbench.models.shipped)."""
    from fudbench.evaluators import entries_of, spec_of
    from fudbench.core.fingerprint import classifier_training_inputs, surrogate_training_inputs
    from fudbench.models.shipped import shipped_problems
    from fudbench.core.paths import resolve_path

    problems = []
    ffid = entries_of(config["evaluators"], "ffid")
    for name, c in config["models"]["classifiers"].items():
        if c.get("source", "train") != "shipped":
            continue
        key = f"models.classifiers.{name}"
        if c["arch"] not in ("small_cnn", "small_vit") or config["data"]["source"] != "synthetic":
            problems.append(
                f"config key '{key}.source': shipped is for the synthetic benchmark's small_cnn and "
                f"small_vit classifiers; remove it (pretrained and imported classifiers are not trained)"
            )
            continue
        if "shipped" not in c:
            problems.append(f"config key '{key}.shipped': required with source: shipped (the checkpoint's path)")
            continue
        fix = f"set {key}.source: train to train it in the workflow"
        problems += shipped_problems(
            resolve_path(c["shipped"], base),
            classifier_training_inputs(config, name),
            f"config key '{key}.shipped'",
            fix,
        )
        if c.get("shipped_surrogate") and ffid:
            settings = config["evaluators"][ffid[0]]
            resolved = spec_of(ffid[0], settings).resolve(settings)
            problems += shipped_problems(
                resolve_path(c["shipped_surrogate"], base),
                surrogate_training_inputs(config, name, resolved),
                f"config key '{key}.shipped_surrogate'",
                f"set {key}.shipped_surrogate: null to fine-tune it in the workflow",
            )
    return problems
