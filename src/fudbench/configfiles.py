"""Config files given on the command line: merged in order, over the default
config unless they make a complete config (docs/reliability.md, "Command line").

- Several files merge in order, as Snakemake merges `--configfile a b`: a later
  file's keys override, mappings merge key by key, anything else (lists
  included) is replaced.
- A file that lacks a top-level key the schema requires is an *overlay*: unless
  the files given together have every required key, they apply on top of
  config/config.yaml (the Snakefile does this, so `./fud run`, `./fud snakemake`
  and plain `snakemake` agree). A complete config (config/smoke.yaml,
  config/meta.yaml, a copy of config/config.yaml) is used as it is: merging the
  default under it would add the default's explainers and evaluators to it.
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


def merge_configs(*configs: Mapping) -> dict:
    """Deep merge in order (later wins; mappings merge, other values replace);
    the inputs are not modified and keys keep their first position."""
    merged: dict = {}
    for config in configs:
        for key, value in config.items():
            if isinstance(value, Mapping):
                base = merged.get(key)
                merged[key] = merge_configs(base, value) if isinstance(base, Mapping) else merge_configs(value)
            else:
                merged[key] = copy.deepcopy(value)
    return merged


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
    on top of the default config if it is an overlay, else `config` itself."""
    if is_overlay(config, schema_path):
        return merge_configs(load_config_file(default, f"default config {default}"), config)
    return merge_configs(config)


def resolve_config(files, default=DEFAULT_CONFIG, schema_path=SCHEMA) -> dict:
    """The config a workflow run gets from these --configfile files (none: the default)."""
    return with_default(merge_configs(*(load_config_file(f) for f in files)), default, schema_path)


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
    """`python -m fudbench.configfiles {snakemake|report} ARGS`: check, then exec Snakemake."""
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    if command not in ("snakemake", "report"):
        sys.exit("usage: python -m fudbench.configfiles {snakemake|report} [args...]")
    try:
        args = snakemake_argv(args) if command == "snakemake" else report_argv(args)
    except ConfigFileError as exc:
        print(f"fud: {exc}", file=sys.stderr)
        sys.exit(2)
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, "-m", "snakemake", *args])


if __name__ == "__main__":
    main(sys.argv[1:])
