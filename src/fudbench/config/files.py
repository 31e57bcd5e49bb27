"""Config files given on the command line: merged in order, over the default
config unless they make a complete config (docs/reliability.md, "Command line").

- Several files merge in order, as Snakemake merges `--configfile a b`: a later
  file's keys override, mappings merge key by key, anything else (lists
  included) is replaced. A later `null` over a mapping removes it (an overlay
  drops an explainer, evaluator or classifier of the default: `sm: null`);
  an explainer, evaluator or classifier entry left `null` is removed too. The
  removal holds through the later merge with the default (the command line's
  files are merged with keep_removals), so a null in any file or in --config
  removes the default's entry too; `_replace` takes true or false only, and
  not at the top level.
- Relative --configfile paths are the caller's: `./fud` changes to the
  repository, after passing the directory it was run in (caller_path).
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
  Snakemake's loader (`python -m fudbench.workflow.command snakemake ARGS`).

No torch or jsonschema import: the `fud` script runs this before Snakemake.
"""

from __future__ import annotations

import copy
import os
import shlex
from collections.abc import Mapping
from pathlib import Path

import yaml

OPTIONS = ("--configfile", "--configfiles")  # Snakemake's option and its alias
REPO = Path(__file__).resolve().parents[3]
DEFAULT_CONFIG = REPO / "config" / "config.yaml"
SCHEMA = REPO / "config" / "schema.yaml"
TARGETS_HINT = (
    "--configfile takes every argument after it up to the next option, so a target written after it "
    "is read as a config file: put targets before --configfile (./fud run TARGET --configfile FILE) "
    "or after -- (./fud run --configfile FILE -- TARGET)"
)


class ConfigFileError(ValueError):
    """A --configfile argument is not a config file; the message names it and the fix."""


class DuplicateKeyError(ValueError):
    """A YAML mapping gives a key twice (YAML keeps the last one silently); the message names the file,
    the key and both lines (`detail`: the same without the file)."""

    def __init__(self, detail: str, source: str | None = None):
        super().__init__(f"{source}: {detail}" if source else detail)
        self.detail = detail


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _duplicate_keys(loader, node, path=(), seen_nodes=None) -> None:
    """DuplicateKeyError for the first key a mapping under `node` gives twice (`<<` merges excepted: a
    key given beside a merge overrides it, as YAML means)."""
    seen_nodes = set() if seen_nodes is None else seen_nodes
    if id(node) in seen_nodes:  # an alias of a node already checked
        return
    seen_nodes.add(id(node))
    if isinstance(node, yaml.MappingNode):
        lines = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            key = loader.construct_object(key_node, deep=True) if isinstance(key_node, yaml.ScalarNode) else None
            here = key_node.start_mark.line + 1
            try:
                first = lines.setdefault(key, here) if key is not None else here
            except TypeError:  # an unhashable key: YAML refuses it itself
                first = here
            if first != here:
                where = ".".join(map(str, (*path, key)))
                raise DuplicateKeyError(
                    f"config key '{where}' is given twice, on line {first} and on line {here}; YAML would "
                    f"keep the second silently: remove one"
                )
            _duplicate_keys(loader, value_node, (*path, key), seen_nodes)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _duplicate_keys(loader, item, (*path, i), seen_nodes)


def load_yaml_text(stream, source: str | None = None):
    """yaml.safe_load, but a mapping that gives a key twice is a DuplicateKeyError naming the key and
    both lines (and `source`, the file), not its last value: the one loader of config YAML (config
    files, overlays, --configfile, the schema)."""
    loader = yaml.SafeLoader(stream)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            _duplicate_keys(loader, node)
        except DuplicateKeyError as exc:
            raise DuplicateKeyError(exc.detail, source) from None
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load_yaml_file(path):
    """A YAML (or JSON) file by load_yaml_text."""
    with open(path, encoding="utf-8") as fh:
        return load_yaml_text(fh, str(path))


# A mapping in an overlay that carries `_replace: true` replaces the one below it instead of merging into it
# (the paper profile's ImageNet classifiers and score model share nothing with the default's small ones).
REPLACE = "_replace"


class _Removed:
    """What a `null` over a mapping leaves in a merge that is not final (keep_removals): the
    removal itself, so that a merge under a default later removes the default's mapping too
    instead of bringing it back (smoke.yaml + an overlay with `fud: null` ran FUD at the
    default's settings). Never in a finished config (finish_config drops it)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return "<removed>"

    def __reduce__(self):
        return (_Removed, ())

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


REMOVED = _Removed()


def merge_configs(*configs: Mapping, keep_removals: bool = False) -> dict:
    """Deep merge in order (later wins; mappings merge, other values replace, a
    `null` over a mapping removes the key, a mapping with `_replace: true`
    replaces it); the inputs are not modified and keys keep their first position.

    keep_removals: the result is itself merged over something later (the command
    line's files, then the default config under them): a removal is kept as
    REMOVED, and a mapping given after a removal is marked `_replace: true`, so
    that merge_configs(default, merge_configs(a, b, keep_removals=True)) equals
    merge_configs(default, a, b) - one rule however the merge is grouped. (A null
    over nothing stays a null: whether it removes a mapping or sets a value is
    decided where it meets the default.)"""
    merged: dict = {}
    for config in configs:
        for key, value in config.items():
            base = merged.get(key)
            if value is REMOVED or (value is None and (isinstance(base, Mapping) or base is REMOVED)):
                if keep_removals:
                    merged[key] = REMOVED
                else:
                    merged.pop(key, None)
            elif isinstance(value, Mapping) and (
                value.get(REPLACE) is True or base is REMOVED or (keep_removals and key in merged and base is None)
            ):
                # kept: a mapping after a removal (or after a null that is one if the default has a mapping
                # there) starts afresh, as it would in one merge with the default under it
                replaced = merge_configs({k: v for k, v in value.items() if k != REPLACE}, keep_removals=keep_removals)
                # over nothing (an overlay merged on its own) or in a merge that is not final, the mark stays
                # for the merge with the default
                merged[key] = (
                    replaced if isinstance(base, Mapping) and not keep_removals else {REPLACE: True, **replaced}
                )
            elif isinstance(value, Mapping):
                value = {k: v for k, v in value.items() if k != REPLACE}  # `_replace: false`: an ordinary merge
                merged[key] = (
                    merge_configs(base, value, keep_removals=keep_removals)
                    if isinstance(base, Mapping)
                    else merge_configs(value, keep_removals=keep_removals)
                )
            else:
                merged[key] = copy.deepcopy(value)
    return merged


def replace_mark_problems(config, where: str, path: tuple = ()) -> list[str]:
    """`_replace` only as true or false, and not at the top level (a complete config - every
    key the schema requires - already replaces the default; an overlay merges into it)."""
    problems = []
    if not isinstance(config, Mapping):
        return problems
    for key, value in config.items():
        if key == REPLACE and not path:
            problems.append(
                f"{where}: a top-level '{REPLACE}' is not supported; to use a file without the default "
                f"config, give every top-level key the schema requires "
                f"({', '.join(required_keys())}); an overlay merges into the default"
            )
        elif key == REPLACE and not isinstance(value, bool):
            problems.append(
                f"{where}: config key '{'.'.join(map(str, (*path, key)))}': {value!r} is not true or "
                f"false (true: this mapping replaces the one below it instead of merging into it)"
            )
        elif isinstance(value, Mapping):
            problems += replace_mark_problems(value, where, (*path, key))
    return problems


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
            raise ConfigFileError(
                f"config key '{where}.{name}.variant_of': no entry {base_name!r} in {where} "
                f"to repeat (entries: {known})"
            )
        if "variant_of" in base:
            raise ConfigFileError(
                f"config key '{where}.{name}.variant_of': {base_name!r} is itself a variant "
                f"(of {base['variant_of']!r}); name the entry it repeats"
            )
        own = {k: v for k, v in entry.items() if k != "variant_of"}
        out[name] = merge_configs(base, {"method": base.get("method", base_name)} if method else {}, own)
    return out


def _without_replace_marks(config):
    if not isinstance(config, dict):
        return config
    return {k: _without_replace_marks(v) for k, v in config.items() if k != REPLACE and v is not REMOVED}


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
        if path.suffix in (".yaml", ".yml") and not path.is_dir():  # meant as a config file, not a target
            raise ConfigFileError(f"{where} does not exist")
        why = "is a directory" if path.is_dir() else "does not exist"
        raise ConfigFileError(f"{where} {why}, so it is not a config file; {TARGETS_HINT}")
    try:
        config = load_yaml_file(path)
    except DuplicateKeyError as exc:
        raise ConfigFileError(f"{where}: {exc.detail}") from None
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise ConfigFileError(
            f"{where} is not a YAML or JSON file ({type(exc).__name__}: {first}); {TARGETS_HINT}"
        ) from None
    if not isinstance(config, dict):
        what = "it is empty" if config is None else f"its top level is {type(config).__name__}"
        raise ConfigFileError(f"{where} is not a config file: {what}, not a mapping of config keys; {TARGETS_HINT}")
    problems = replace_mark_problems(config, where)
    if problems:
        raise ConfigFileError("\n  ".join(problems))
    return config


def _schema(schema_path=SCHEMA) -> dict:
    return load_yaml_file(schema_path)


def required_keys(schema_path=SCHEMA) -> list[str]:
    return list(_schema(schema_path).get("required", []))


def is_overlay(config: Mapping, schema_path=SCHEMA) -> bool:
    """True when `config` lacks a top-level key the schema requires (or a later file removed it)."""
    return any(config.get(key, REMOVED) is REMOVED for key in required_keys(schema_path))


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
    with_default instead of Snakemake's own merge (module docstring). Removals
    are kept (merge_configs' keep_removals), so a `null` here also removes the
    default's entry when with_default merges the default under it."""
    problems = replace_mark_problems(overrides or {}, "--config")
    if problems:
        raise ConfigFileError("\n  ".join(problems))
    return merge_configs(*(load_config_file(f) for f in files), overrides or {}, keep_removals=True)


def typed_overrides(value):
    """--config's values as YAML means them. Snakemake reads `--config KEY=VALUE` with
    int, float, a boolean parser, then YAML's BaseLoader, which leaves every value inside
    a mapping or list a string: `evaluators='{fud: null}'` gave fud the string 'null'
    (not a removal) and `{fud: {steps: 3}}` the string '3'. A string that YAML reads as
    null, a boolean or a number becomes that; other strings stay strings."""
    if isinstance(value, Mapping):
        return {k: typed_overrides(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed_overrides(v) for v in value]
    if isinstance(value, str):
        try:
            scalar = yaml.safe_load(value)
        except yaml.YAMLError:
            return value
        if scalar is None or isinstance(scalar, (bool, int, float)):
            return scalar
    return value


def run_config(files, overrides: Mapping | None = None, default=DEFAULT_CONFIG, schema_path=SCHEMA) -> dict:
    """The config a workflow run gets from these --configfile files, merged in order, and
    --config's values (`overrides`, as Snakemake parsed them): the Snakefile's rule
    (command_line_config, then with_default). Every command that addresses a run (`./fud run`,
    `./fud report`, the tools and benchmarks that take config files) takes its run name,
    results/<run_name>, from this (addressed_run)."""
    return with_default(command_line_config(files, typed_overrides(overrides or {})), default, schema_path)


def resolve_config(files, default=DEFAULT_CONFIG, schema_path=SCHEMA) -> dict:
    """The config a workflow run gets from these --configfile files (none: the default)."""
    return run_config(files, None, default, schema_path)


def addressed_run(files, overrides: Mapping | None = None) -> str:
    """results/<run_name> of the run these config files (in order) and --config values address."""
    run = run_config(files, overrides).get("run_name")
    if not isinstance(run, str) or not run:
        raise ConfigFileError(
            f"the config files given ({', '.join(map(str, files)) or 'none'}) leave config key "
            f"'run_name' {'unset' if run is None else f'as {run!r}, not a name'}: set it (the run "
            f"writes results/<run_name>)"
        )
    return f"results/{run}"


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


# `./fud` changes to the repository before it runs Python; it passes the directory it was run in here,
# so that a relative --configfile is the file the user typed, not a same-named one in the repository.
CALLER_CWD = "FUD_CALLER_CWD"


def caller_dir() -> str:
    """The directory the user ran ./fud in (FUD_CALLER_CWD; else the working directory)."""
    return os.environ.get(CALLER_CWD) or os.getcwd()


def user_path(path) -> str:
    """A path the user typed on a command line, absolute: relative to the directory ./fud was run
    in (caller_dir), `~` expanded. For every script that takes a path (tools/, bench/), so that a
    relative path is the one the user meant whichever directory the script runs in."""
    return os.path.abspath(os.path.join(caller_dir(), os.path.expanduser(os.fspath(path))))


def caller_path(path: str) -> tuple[str, str]:
    """(absolute path, how errors name it) of a --configfile argument (user_path)."""
    resolved = user_path(path)
    shown = f"--configfile argument '{path}'" + (f" (= {resolved})" if resolved != path else "")
    return resolved, shown


# Snakemake's options whose value is a path (its command line, snakemake/cli.py): ./fud changes to the
# repository first, so each is made absolute against the caller's directory, as --configfile is.
PATH_OPTIONS = (
    "--directory",
    "-d",
    "--snakefile",
    "-s",
    "--report",
    "--report-stylesheet",
    "--report-metadata",
    "--export-cwl",
    "--archive",
    "--runtime-profile",
    "--conda-prefix",
    "--apptainer-prefix",
    "--singularity-prefix",
    "--shadow-prefix",
    "--generate-unit-tests",
    "--stats",
)
# --profile takes a name (looked up in Snakemake's profile folders) or a folder: made absolute only where
# the caller's directory has that folder.
PROFILE_OPTIONS = ("--profile", "--workflow-profile")
# --config KEY=VALUE ...: Snakemake's values over the config files (they may set run_name).
CONFIG_VALUE_OPTIONS = ("--config", "-C")


def _resolve_path_options(argv: list[str]) -> list[str]:
    """argv with the values of PATH_OPTIONS (and PROFILE_OPTIONS that name a folder of the caller's)
    made absolute against the caller's directory; nothing after `--` is touched."""
    out, i = [], 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return out + argv[i:]
        name, eq, value = arg.partition("=")
        if name.startswith("--") and eq and name in PATH_OPTIONS + PROFILE_OPTIONS:
            out.append(f"{name}={_typed_path(name, value)}")
        elif arg in PATH_OPTIONS + PROFILE_OPTIONS and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            out += [arg, _typed_path(arg, argv[i + 1])]
            i += 1
        else:
            out.append(arg)
        i += 1
    return out


def _typed_path(option: str, value: str) -> str:
    if option in PROFILE_OPTIONS:
        return user_path(value) if os.path.isdir(user_path(value)) else value
    return user_path(value) if value else value


def option_values(argv: list[str], names) -> list[str]:
    """The values of an option taking several (`--config A=1 B=2`, repeated or `--config=A=1`), argparse's
    way: the arguments after it up to the next one starting with '-'; nothing after `--`."""
    values, i = [], 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            break
        name, eq, value = arg.partition("=")
        if arg in names:
            while i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                i += 1
                values.append(argv[i])
        elif name.startswith("--") and eq and name in names:
            values.append(value)
        i += 1
    return values


def config_overrides(argv: list[str]) -> dict:
    """--config's values in argv, parsed as Snakemake parses them (its parse_config: imported only
    when there are some, it costs a second)."""
    values = option_values(argv, CONFIG_VALUE_OPTIONS)
    if not values:
        return {}
    from snakemake.cli import parse_config

    try:
        return parse_config(values)
    except ValueError as exc:
        raise ConfigFileError(f"--config {' '.join(values)}: {exc}") from None


def _checked_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """(Snakemake's arguments, the config files resolved): snakemake_argv's work."""
    argv, files = collect_configfiles(list(argv))
    if "--configfile" in argv[: argv.index("--") if "--" in argv else len(argv)] and not files:
        raise ConfigFileError(
            "--configfile is given without a config file: name one or more (--configfile A.yaml "
            "[B.yaml ...]), or leave the option out for config/config.yaml"
        )
    known = set(_schema().get("properties", {}))
    resolved = {}
    for f in files:
        resolved[f], where = caller_path(f)
        in_repo = REPO / f
        if not os.path.isabs(f) and not os.path.exists(resolved[f]) and in_repo.is_file():
            raise ConfigFileError(
                f"{where} does not exist; relative paths start from the directory ./fud was run "
                f"in, not the repository (which has {in_repo}: give that path to use it)"
            )
        config = load_config_file(resolved[f], where)
        unknown = [k for k in config if k not in known]
        # e.g. a JSON target (results/<run>/run_info.json shares `device` with the config): mostly foreign keys
        if unknown and len(unknown) > len(config) - len(unknown):
            raise ConfigFileError(
                f"{where} is not a config file: {len(unknown)} of its {len(config)} keys "
                f"({', '.join(map(str, unknown[:5]))}{', ...' if len(unknown) > 5 else ''}) are "
                f"not config keys; {TARGETS_HINT}"
            )
    files = [resolved[f] for f in files]
    if files:
        at = argv.index("--configfile")
        argv[at + 1 : at + 1 + len(files)] = files
    return _resolve_path_options(argv), files


def script_config(files=None, directory=None) -> tuple[dict, Path]:
    """For a tool or benchmark that takes config files (`--config A [B ...]`): (the config of the
    run they address, that run's results folder). The files are resolved where the user typed
    them (user_path) and merged in order by run_config, over config/config.yaml for overlays:
    the config and results/<run_name> that `./fud run --configfile A B` makes (in `directory`,
    default the repository, as ./fud run's --directory). No files: the default config's run.
    ConfigFileError names a file that is missing or not a config."""
    given = [os.fspath(f) for f in (files or [])]
    paths = [user_path(f) for f in given]
    for path, typed in zip(paths, given):
        load_config_file(path, f"config file '{typed}'" + (f" (= {path})" if path != typed else ""))
    config = run_config(paths)
    run = config.get("run_name")
    if not isinstance(run, str) or not run:
        raise ConfigFileError(f"the config files {given} leave config key 'run_name' unset: set it")
    return config, Path(user_path(directory) if directory else REPO) / "results" / run


def snakemake_argv(argv: list[str]) -> list[str]:
    """Snakemake's arguments for `./fud run` / `./fud snakemake ARGS`: the config
    files collected, resolved against the caller's directory (caller_path) and
    checked (ConfigFileError naming a bad one); the other options that take a path
    (PATH_OPTIONS: --directory, --snakefile, --report, ...) resolved the same way."""
    return _checked_argv(argv)[0]


def fud_command() -> str:
    """How the user runs ./fud from the directory they are in (for the commands errors suggest)."""
    here = caller_dir()
    return "./fud" if os.path.realpath(here) == os.path.realpath(REPO) else shlex.quote(str(REPO / "fud"))


# `./fud report` hands Snakemake (fudbench.workflow.snakemake_main) the command that finishes the run, for its
# error on an unfinished run (the report's files are missing).
FINISH_ENV = "FUD_FINISH_COMMAND"
REPORT_ONLY = ("--report", "--report-stylesheet", "--report-metadata", "--report-after-run")
# `./fud report --stale` (reports an out-of-date run, stamped) and the report command given, for its hint
STALE_ENV = "FUD_REPORT_STALE"
REPORT_ENV = "FUD_REPORT_COMMAND"


def configs_of_run(name: str) -> list[str]:
    """The repository's config files (config/*.yaml) that make the run `name`: config/<name>.yaml
    first, then those whose own run_name is `name`, as paths relative to the repository."""
    found = []
    for path in sorted((REPO / "config").glob("*.yaml")):
        try:
            with open(path, encoding="utf-8") as fh:
                own = yaml.safe_load(fh)
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        if path.stem == name or (isinstance(own, dict) and own.get("run_name") == name):
            found.append(f"config/{path.name}")
    return sorted(found, key=lambda f: f != f"config/{name}.yaml")


def run_name_hint(name: str) -> str:
    """`./fud report smoke`: a word that is no file, most likely a run's name; which config file
    makes that run, and the command that reports it."""
    files = configs_of_run(name)
    where = f" (= {user_path(name)})" if user_path(name) != name else ""
    if files:
        at = "" if os.path.realpath(caller_dir()) == os.path.realpath(REPO) else f"{REPO}/"
        return (
            f"'{name}'{where} is not a file: ./fud report takes the config files of the run it reports, as "
            f"./fud run does, not a run name; the run '{name}' is made by {' or '.join(files)}: report it with "
            f"`{fud_command()} report {shlex.quote(at + files[0])}`"
        )
    return (
        f"'{name}'{where} is not a file: ./fud report takes the config files of the run it reports (those "
        f"./fud run was given, e.g. `{fud_command()} report config/photos.yaml`), and no config/*.yaml makes "
        f"a run named '{name}'"
    )


def report_argv(argv: list[str]) -> list[str]:
    """`./fud report [CONFIGFILE ...] [--configfile FILE ...] [SNAKEMAKE ARGS]`: Snakemake's
    arguments to write results/<run_name>/report.html of the run these files address. The
    leading config files and every --configfile file merge in that order (`./fud report A
    --configfile B` is A, then B), --config's values over them, over config/config.yaml
    for overlays: run_name is the merged config's, by the rule the workflow itself uses
    (run_config), so the report lands in the folder of the run that ./fud run made with the
    same arguments. Sets FINISH_ENV to that ./fud run command."""
    argv = list(argv)
    end = argv.index("--") if "--" in argv else len(argv)
    stale = "--stale" in argv[:end]  # report an out-of-date run anyway, stamped (fudbench.workflow.snakemake_main)
    argv = [a for i, a in enumerate(argv) if i >= end or a != "--stale"]
    os.environ[REPORT_ENV] = shlex.join([fud_command(), "report", *argv])
    os.environ.pop(STALE_ENV, None)
    if stale:
        os.environ[STALE_ENV] = "1"
    lead = []
    while argv and not argv[0].startswith("-"):
        lead.append(argv.pop(0))
    for name in lead:  # a word that is no file and names no path: a run's name (`./fud report smoke`)
        if (
            os.sep not in name
            and Path(name).suffix not in (".yaml", ".yml", ".json")
            and not os.path.exists(user_path(name))
        ):
            raise ConfigFileError(run_name_hint(name))
    given = [a.partition("=")[0] for a in argv[: argv.index("--") if "--" in argv else len(argv)]]
    if "--report" in given:
        raise ConfigFileError(
            "./fud report writes results/<run_name>/report.html of the run its config files "
            "name and takes no --report; for a report elsewhere run ./fud snakemake "
            "--configfile FILE ... --report PATH"
        )
    argv, files = _checked_argv((["--configfile", *lead] if lead else []) + argv)
    overrides = config_overrides(argv)
    results = addressed_run(files, overrides)
    run_args, skip = [], False
    for arg in argv:  # the same run without the report's own options
        if skip:
            skip = False
            continue
        if arg in REPORT_ONLY:
            skip = arg != "--report-after-run"
            continue
        if arg.partition("=")[0] in REPORT_ONLY:
            continue
        run_args.append(arg)
    os.environ[FINISH_ENV] = shlex.join([fud_command(), "run", *run_args]) if run_args else f"{fud_command()} run"
    at = argv.index("--configfile") + 1 + len(files) if files else 0  # after the config files (never after `--`)
    return [*argv[:at], "--report", f"{results}/report.html", *argv[at:]]
