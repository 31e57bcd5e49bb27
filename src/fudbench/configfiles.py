"""Config files given on the command line: merged in order, over the default
config unless they make a complete config (docs/reliability.md, "Command line").

- Several files merge in order, as Snakemake merges `--configfile a b`: a later
  file's keys override, mappings merge key by key, anything else (lists
  included) is replaced. A later `null` over a mapping removes it (an overlay
  drops an explainer, evaluator or classifier of the default: `sm: null`);
  an explainer, evaluator or classifier entry left `null` is removed too.
- `variant_of: NAME` in an explainers, evaluators or models.classifiers entry
  repeats entry NAME of the same section with only the keys given changed
  (explainers and evaluators: `method` set to NAME's method), so a variant
  states what differs and nothing else (expand_variants; config/meta.yaml's
  FUD variants and second training seeds).
- A file that lacks a top-level key the schema requires is an *overlay*: unless
  the files given together have every required key, they apply on top of
  config/config.yaml (the Snakefile does this, so `./fud run`, `./fud snakemake`
  and plain `snakemake` agree). A complete config (a copy of config/config.yaml)
  is used as it is: merging the default under it would add the default's
  explainers and evaluators to it.
- The Snakefile merges the command line's files itself (command_line_config):
  Snakemake's own merge keeps an entry that one file nulls null when a later
  file gives it again as `{}`, so `--configfile a b` with `ig: null` in a and
  `ig: {}` in b would run without `ig`.
- `./fud` collects repeated `--configfile` options into one (argparse would keep
  only the last) and checks that every argument of it is a YAML mapping, so a
  target written after `--configfile X` is named as such instead of failing in
  Snakemake's loader (`python -m fudbench.configfiles snakemake ARGS`).

No torch or jsonschema import: the `fud` script runs this before Snakemake.
"""
from __future__ import annotations

import copy
import os
import sys
from collections.abc import Mapping
from pathlib import Path

import yaml

OPTIONS = ("--configfile", "--configfiles")  # Snakemake's option and its alias
REPO = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG = REPO / "config" / "config.yaml"
SCHEMA = REPO / "config" / "schema.yaml"
TARGETS_HINT = ("--configfile takes every argument after it up to the next option, so a target written after it "
                "is read as a config file: put targets before --configfile (./fud run TARGET --configfile FILE) "
                "or after -- (./fud run --configfile FILE -- TARGET)")


class ConfigFileError(ValueError):
    """A --configfile argument is not a config file; the message names it and the fix."""


# A mapping in an overlay that carries `_replace: true` replaces the one below it instead of merging into it
# (the paper profile's ImageNet classifiers and score model share nothing with the default's small ones).
REPLACE = "_replace"


def merge_configs(*configs: Mapping) -> dict:
    """Deep merge in order (later wins; mappings merge, other values replace, a
    `null` over a mapping removes the key, a mapping with `_replace: true`
    replaces it); the inputs are not modified and keys keep their first position."""
    merged: dict = {}
    for config in configs:
        for key, value in config.items():
            base = merged.get(key)
            if value is None and isinstance(base, Mapping):
                del merged[key]
            elif isinstance(value, Mapping) and value.get(REPLACE):
                replaced = merge_configs({k: v for k, v in value.items() if k != REPLACE})
                # over nothing (an overlay merged on its own), the mark stays for the merge with the default
                merged[key] = replaced if isinstance(base, Mapping) else {REPLACE: True, **replaced}
            elif isinstance(value, Mapping):
                merged[key] = merge_configs(base, value) if isinstance(base, Mapping) else merge_configs(value)
            else:
                merged[key] = copy.deepcopy(value)
    return merged


# Sections whose entries are mappings: a null entry there is a removal (Snakemake's own
# merge of `--configfile a b` keeps it as a None value, which this drops).
ENTRY_SECTIONS = (("explainers",), ("evaluators",), ("models", "classifiers"))
# Sections where `variant_of` repeats an entry; explainers and evaluators also get the base's method.
VARIANT_SECTIONS = {("explainers",): True, ("evaluators",): True, ("models", "classifiers"): False}


def _section(config: Mapping, path: tuple[str, ...]):
    for key in path:
        config = config.get(key) if isinstance(config, Mapping) else None
    return config if isinstance(config, dict) else None


def expand_variants(section: dict, where: str, method: bool = True) -> dict:
    """`section` (explainers, evaluators or classifiers) with every
    `variant_of: NAME` entry replaced by entry NAME's settings, `method` set to
    NAME's method (with `method`), and the entry's own keys over them. ConfigFileError for an unknown NAME or a chain
    of variants (a variant of a variant: say the base directly)."""
    out = {}
    for name, entry in section.items():
        if not isinstance(entry, Mapping) or "variant_of" not in entry:
            out[name] = entry
            continue
        base_name = entry["variant_of"]
        base = section.get(base_name)
        if not isinstance(base, Mapping):
            known = ", ".join(n for n, e in section.items() if isinstance(e, Mapping) and "variant_of" not in e)
            raise ConfigFileError(f"config key '{where}.{name}.variant_of': no entry {base_name!r} in {where} "
                                  f"to repeat (entries: {known})")
        if "variant_of" in base:
            raise ConfigFileError(f"config key '{where}.{name}.variant_of': {base_name!r} is itself a variant "
                                  f"(of {base['variant_of']!r}); name the entry it repeats")
        own = {k: v for k, v in entry.items() if k != "variant_of"}
        out[name] = merge_configs(base, {"method": base.get("method", base_name)} if method else {}, own)
    return out


def _without_replace_marks(config):
    if not isinstance(config, dict):
        return config
    return {k: _without_replace_marks(v) for k, v in config.items() if k != REPLACE}


def finish_config(config: Mapping) -> dict:
    """The merged config with null entries removed (ENTRY_SECTIONS) and variants
    expanded (VARIANT_SECTIONS)."""
    config = _without_replace_marks(merge_configs(config))
    for path in ENTRY_SECTIONS:
        section = _section(config, path)
        if section is not None:
            for name in [n for n, e in section.items() if e is None]:
                del section[name]
    for path, method in VARIANT_SECTIONS.items():
        section = _section(config, path)
        if section is not None:
            expanded = expand_variants(section, ".".join(path), method)
            section.clear()
            section.update(expanded)
    return config


def load_config_file(path, where: str | None = None) -> dict:
    """A config file's mapping; ConfigFileError naming the --configfile argument
    (or `where`) if it is missing, not YAML/JSON or not a mapping at its top level."""
    path = Path(path)
    where = where or f"--configfile argument '{path}'"
    if not path.is_file():
        why = "is a directory" if path.is_dir() else "does not exist"
        raise ConfigFileError(f"{where} {why}, so it is not a config file; {TARGETS_HINT}")
    try:
        with open(path, encoding="utf-8") as fh:
            config = yaml.safe_load(fh)
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise ConfigFileError(f"{where} is not a YAML or JSON file ({type(exc).__name__}: {first}); "
                              f"{TARGETS_HINT}") from None
    if not isinstance(config, dict):
        what = "it is empty" if config is None else f"its top level is {type(config).__name__}"
        raise ConfigFileError(f"{where} is not a config file: {what}, not a mapping of config keys; {TARGETS_HINT}")
    return config


def _schema(schema_path=SCHEMA) -> dict:
    with open(schema_path) as fh:
        return yaml.safe_load(fh)


def required_keys(schema_path=SCHEMA) -> list[str]:
    return list(_schema(schema_path).get("required", []))


def is_overlay(config: Mapping, schema_path=SCHEMA) -> bool:
    """True when `config` lacks a top-level key the schema requires."""
    return any(key not in config for key in required_keys(schema_path))


def with_default(config: Mapping, default=DEFAULT_CONFIG, schema_path=SCHEMA) -> dict:
    """The workflow's config: `config` (the command line's files merged, and --config)
    on top of the default config if it is an overlay, else `config` itself;
    null entries removed and variants expanded (finish_config)."""
    if is_overlay(config, schema_path):
        return finish_config(merge_configs(load_config_file(default, f"default config {default}"), config))
    return finish_config(config)


def command_line_config(files, overrides: Mapping | None = None) -> dict:
    """The command line's --configfile files merged in order by merge_configs,
    then --config's values (`overrides`) over them: what the Snakefile gives
    with_default instead of Snakemake's own merge (module docstring)."""
    return merge_configs(*(load_config_file(f) for f in files), overrides or {})


def resolve_config(files, default=DEFAULT_CONFIG, schema_path=SCHEMA) -> dict:
    """The config a workflow run gets from these --configfile files (none: the default)."""
    return with_default(command_line_config(files), default, schema_path)


def collect_configfiles(argv: list[str]) -> tuple[list[str], list[str]]:
    """(argv with every --configfile option collected into one at the place of
    the first, in order; the config files). Mirrors argparse: `--configfile`
    takes the arguments after it up to the next one starting with '-';
    `--configfile=X` takes X; everything after `--` is left alone."""
    out, files, at, i = [], [], None, 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out += argv[i:]
            break
        name, eq, value = arg.partition("=")
        if name in OPTIONS:
            at = len(out) if at is None else at
            if eq:
                files.append(value)
            else:
                while i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                    i += 1
                    files.append(argv[i])
        else:
            out.append(arg)
        i += 1
    if at is not None:
        out[at:at] = ["--configfile", *files] if files else ["--configfile"]  # none: Snakemake's own error
    return out, files


def snakemake_argv(argv: list[str]) -> list[str]:
    """Snakemake's arguments for `./fud run` / `./fud snakemake ARGS`: the config
    files collected and checked (ConfigFileError naming a bad one)."""
    argv, files = collect_configfiles(list(argv))
    known = set(_schema().get("properties", {}))
    for f in files:
        config = load_config_file(f)
        if config and not known & set(config):  # e.g. a JSON target: results/<run>/models/quality.json
            raise ConfigFileError(f"--configfile argument '{f}' is not a config file: none of its keys "
                                  f"({', '.join(map(str, list(config)[:5]))}) is a config key; {TARGETS_HINT}")
    return argv


def report_argv(argv: list[str]) -> list[str]:
    """`./fud report [CONFIGFILE] [ARGS]`: --report results/<run_name>/report.html,
    run_name taken from the resolved config (an overlay may leave it out)."""
    files = [] if not argv or argv[0].startswith("-") else [argv.pop(0)]
    run = resolve_config(files)["run_name"]
    return [*(["--configfile", *files] if files else []), "--report", f"results/{run}/report.html",
            *snakemake_argv(argv)]


def main(argv: list[str]) -> None:
    """`python -m fudbench.configfiles {snakemake|report} ARGS`: check, then exec Snakemake
    (fudbench.snakemake_main)."""
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    if command not in ("snakemake", "report"):
        sys.exit("usage: python -m fudbench.configfiles {snakemake|report} [args...]")
    try:
        args = snakemake_argv(args) if command == "snakemake" else report_argv(args)
    except ConfigFileError as exc:
        print(f"fud: {exc}", file=sys.stderr)
        sys.exit(2)
    sys.stdout.flush()
    # Snakemake with one scheduler fix (fudbench.snakemake_main: its timers no longer pile up)
    os.execv(sys.executable, [sys.executable, "-m", "fudbench.snakemake_main", *args])


if __name__ == "__main__":
    main(sys.argv[1:])
