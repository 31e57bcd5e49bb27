"""Configuration: schema validation with errors that name the key, plus the
checks a schema cannot express (registered names, sorted ratios, sizes).

Kept free of torch imports: the Snakefile calls this at parse time.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the key and the fix."""


def load_yaml(path) -> dict:
    with open(path) as fh:
        return yaml.safe_load(fh)


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def _describe(error) -> str:
    key = _key(error.absolute_path)
    v = error.validator
    if v == "enum":
        allowed = ", ".join(repr(a) for a in error.validator_value)
        return f"config key '{key}': {error.instance!r} is not allowed; allowed values: {allowed}"
    if v == "additionalProperties" and isinstance(error.instance, dict):
        known = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(known))
        hint = f"; allowed keys: {', '.join(known)}" if known else ""
        return f"config key '{key}': unknown key(s) {', '.join(map(repr, extra))}{hint}"
    return f"config key '{key}': {error.message}"


def validate_schema(config: dict, schema: dict) -> None:
    validator = Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = "\n  ".join(_describe(e) for e in errors)
        raise ConfigError(f"invalid configuration ({len(errors)} problem(s)):\n  {lines}")


def with_evaluator_schemas(schema: dict, config: dict) -> dict:
    """The schema with one property per configured evaluator entry whose method is
    registered: that evaluator's settings schema, generated from its settings
    dataclass (fudbench.evaluators.<name>), so defaults and constraints live there only."""
    from fudbench.evaluators import EVALUATORS, method_of, spec

    entries = config.get("evaluators") if isinstance(config.get("evaluators"), dict) else {}
    properties = {name: spec(method_of(name, settings)).schema() for name, settings in entries.items()
                  if isinstance(settings, dict) and method_of(name, settings) in EVALUATORS}
    evaluators = {**schema["properties"]["evaluators"], "properties": properties}
    return {**schema, "properties": {**schema["properties"], "evaluators": evaluators}}


def _evaluator_problems(config: dict) -> list[str]:
    from fudbench.evaluators import EVALUATORS, entries_of, method_of, spec

    problems = []
    for name, settings in config["evaluators"].items():
        method = method_of(name, settings)
        if method not in EVALUATORS:
            where = f"evaluators.{name}" + (".method" if "method" in settings else "")
            problems.append(f"config key '{where}': unknown evaluator {method!r}; "
                            f"registered: {', '.join(EVALUATORS)}")
            continue
        problems += spec(method).check(settings, f"evaluators.{name}")
    ffid = entries_of(config["evaluators"], "ffid")
    shared = [{k: spec("ffid").resolve(config["evaluators"][e])[k] for k in ("beta", "finetune")} for e in ffid]
    if any(s != shared[0] for s in shared[1:]):
        problems.append(f"config key 'evaluators': the ffid entries {ffid} must share beta and finetune (one "
                        f"surrogate per model is fine-tuned with them)")
    return problems


def check_semantics(config: dict) -> None:
    """Checks beyond the schema; each names the key and what to do."""
    from fudbench.explainers import EXPLAINERS, method_of

    problems = []
    for name, settings in config["explainers"].items():
        method = method_of(name, settings)
        if method not in EXPLAINERS:
            where = f"explainers.{name}" + (".method" if "method" in settings else "")
            problems.append(
                f"config key '{where}': unknown explainer {method!r}; "
                f"registered: {', '.join(sorted(EXPLAINERS))}"
            )
        if method == "oracle" and config["data"]["source"] != "synthetic":
            problems.append(f"config key 'explainers.{name}': the oracle needs ground-truth masks "
                            f"(data.source: synthetic)")
    problems += _evaluator_problems(config)
    unknown = [e for e in config["analysis"].get("pooled_explainers") or [] if e not in config["explainers"]]
    if unknown:
        problems.append(f"config key 'analysis.pooled_explainers': {unknown} not in explainers "
                        f"({', '.join(config['explainers'])})")
    ratios = config["evaluation"]["ratios"]
    if any(b <= a for a, b in zip(ratios, ratios[1:])):
        problems.append(f"config key 'evaluation.ratios': {ratios} must be strictly increasing")
    data = config["data"]
    if data["source"] == "synthetic":
        syn = data.get("synthetic")
        if syn is None:
            problems.append("config key 'data.synthetic': required when data.source is 'synthetic'")
        else:
            if data["n_eval"] > syn["n_test"]:
                problems.append(
                    f"config key 'data.n_eval': {data['n_eval']} exceeds data.synthetic.n_test "
                    f"= {syn['n_test']}; lower n_eval or raise n_test"
                )
            lo, hi = syn["object_scale"]
            if lo > hi:
                problems.append(f"config key 'data.synthetic.object_scale': [{lo}, {hi}] must be [min, max]")
            if abs(syn["dark"] - syn["light"]) < 0.2:
                problems.append(
                    "config key 'data.synthetic.dark'/'light': brightness classes must differ by >= 0.2"
                )
    if data["source"] == "imagenet" and "imagenet" in data:
        im = data["imagenet"]
        if im["resize"] < im["crop"]:
            problems.append(f"config key 'data.imagenet.resize': {im['resize']} must be >= data.imagenet.crop "
                            f"= {im['crop']} (shorter side resized, then centre-cropped)")
    problems += _pretrained_model_problems(config)
    for name, c in config["models"]["classifiers"].items():
        if c["arch"].startswith("torchvision_"):
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
    score = config["models"]["score_model"]
    if "attention" in score and len(score["attention"]) != len(score.get("block_out_channels", ())):
        problems.append(
            "config key 'models.score_model.attention': needs one flag per entry of block_out_channels"
        )
    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems))


def _pretrained_model_problems(config: dict) -> list[str]:
    """Models that fit only one data source: the workflow trains small_* models and
    the synthetic score model on the synthetic training split; torchvision's
    weights are ImageNet-1k classifiers."""
    from fudbench.models.torchvision_models import FIXED_INPUT_SIZE, WEIGHT_FILES

    data = config["data"]
    problems = []
    for name, c in config["models"]["classifiers"].items():
        key = f"models.classifiers.{name}"
        if c["arch"] in WEIGHT_FILES:
            if c.get("weights") not in WEIGHT_FILES[c["arch"]]:
                problems.append(f"config key '{key}.weights': {c.get('weights')!r} is not available for "
                                f"{c['arch']}; choose one of {', '.join(WEIGHT_FILES[c['arch']])}")
            if data["source"] != "imagenet":
                problems.append(f"config key '{key}.arch': {c['arch']} is an ImageNet-1k classifier and needs "
                                f"data.source: imagenet")
            size = FIXED_INPUT_SIZE.get(c["arch"])
            crop = data.get("imagenet", {}).get("crop")
            if size and crop and crop != size:
                problems.append(f"config key 'data.imagenet.crop': {crop}, but {key} ({c['arch']}) takes "
                                f"{size}x{size} images only")
        elif data["source"] != "synthetic":
            problems.append(f"config key '{key}.arch': {c['arch']} is trained by the workflow on the synthetic "
                            f"training split and needs data.source: synthetic; use a torchvision_* arch")
    source = config["models"]["score_model"]["source"]
    if source in ("train", "shipped") and data["source"] != "synthetic":
        problems.append(f"config key 'models.score_model.source': {source!r} is the synthetic benchmark's score "
                        f"model and needs data.source: synthetic; use guided_diffusion")
    return problems


def validate_config(config: dict, schema_path) -> dict:
    """Validate a config dict (raises ConfigError) and return it unchanged."""
    schema = with_evaluator_schemas(load_yaml(Path(schema_path)), config)
    validate_schema(config, schema)
    check_semantics(config)
    return config


def load_config(path, schema_path=None) -> dict[str, Any]:
    """Load and validate a config file (schema defaults to config/schema.yaml beside it)."""
    path = Path(path)
    config = load_yaml(path)
    schema_path = schema_path or path.parent / "schema.yaml"
    return validate_config(config, schema_path)
