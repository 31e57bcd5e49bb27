"""The one rule for config names that become paths: `run_name` (results/<run_name>/)
and the entry names of explainers, evaluators and models.classifiers (folders and
file names under it, Snakemake wildcards, work-cache keys).

Each must be one plain, portable path component, so that no entry's outputs can
land on another entry's files or outside results/ (`x/../insdel` wrote insdel's
records), and a wildcard constraint built from the names (`"|".join(names)`,
rules/common.smk) is a plain alternation of literals:

- entry names: lower-case ASCII letters, digits and `_` (no `.` or `-`: the names
  are joined into regular expressions and printed in `section.name.key` paths);
- run_name: ASCII letters, digits, `_`, `.` and `-`, not starting with `.`;
- at most MAX_LENGTH characters (a name is one component of several file names);
- no `__` in an entry name: it separates the parts of derived names (curve
  names such as `gevaert_del__blur`). Keys joined from several names use a
  character no name may hold (the gallery's: `<model>.<explainer>.<kind>`,
  fudbench.report.gallery), never `_` or `__`: `cnn_` + `ig` and `cnn` + `_ig`
  are both valid pairs;
- a classifier is not `score_model` nor `<anything>_surrogate`: its checkpoint
  results/<run>/models/<name>.pt would be the score model's, or the F-Fidelity
  surrogate of another classifier (models/<name>_surrogate.pt).

Checked with re.fullmatch (a schema `pattern` is a search: `$` also matches before
a final newline, so `"ig\\n"` passed it). No torch or jsonschema import: the
Snakefile and ./fud run this before anything else.
"""

from __future__ import annotations

import re

MAX_LENGTH = 64
ENTRY = re.compile(r"[a-z0-9_]+", re.ASCII)
RUN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", re.ASCII)
ENTRY_FORM = "lower-case ASCII letters, digits and _"
RUN_FORM = "a plain folder name under results/: ASCII letters, digits, _ . - and not starting with a dot"
# (config path of the section, what its names are) - every section whose entry names become paths
ENTRY_SECTIONS = (("explainers",), ("evaluators",), ("models", "classifiers"))


def _why(name: str, form: str) -> str:
    """What is wrong with a name, in words (the first thing found)."""
    if name == "":
        return "it is empty"
    if not name.strip():
        return "it is only whitespace"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "it contains a control character"
    if "/" in name or "\\" in name:
        return "it contains a path separator"
    if name in (".", "..") or name.startswith("."):
        return "it starts with a dot"
    if any(c.isspace() for c in name):
        return "it contains whitespace"
    if not name.isascii():
        return "it contains a non-ASCII character"
    if form == "entry" and any(c.isupper() for c in name):
        return "it contains an upper-case letter"
    return "it contains a character outside the allowed ones"


def name_problem(key: str, name, form: str = "entry") -> str | None:
    """The problem with `name` at config key `key` (None if it is a valid name);
    form: "entry" (explainers, evaluators, classifiers) or "run" (run_name)."""
    pattern, allowed = (RUN, RUN_FORM) if form == "run" else (ENTRY, ENTRY_FORM)
    if not isinstance(name, str):
        return f"config key '{key}': {name!r} is not a name (a string of {allowed})"
    if len(name) > MAX_LENGTH:
        return (
            f"config key '{key}': the name is {len(name)} characters long; at most {MAX_LENGTH} (it becomes "
            f"part of file names under results/)"
        )
    if not pattern.fullmatch(name):
        return f"config key '{key}': {name!r} is not a valid name: {_why(name, form)}; use {allowed}"
    return None


def _reserved(path: tuple, name: str) -> str | None:
    """Why an otherwise valid entry name is taken by another file, or None."""
    if "__" in name:
        return "it contains '__', which separates the parts of derived names (curve names such as gevaert_del__blur)"
    if path == ("models", "classifiers") and name == "score_model":
        return "results/<run>/models/score_model.pt is the score model's checkpoint"
    if path == ("models", "classifiers") and name.endswith("_surrogate"):
        return (
            f"results/<run>/models/{name}.pt is the F-Fidelity surrogate file of a classifier "
            f"{name[: -len('_surrogate')]!r}"
        )
    return None


def _section(config, path):
    for key in path:
        config = config.get(key) if isinstance(config, dict) else None
    return config if isinstance(config, dict) else None


def _shown(name) -> str:
    """A name as a part of a config key in a message: printable and short."""
    text = str(name)
    if not text.isprintable() or not text.strip():
        text = repr(text)
    return text if len(text) <= 40 else text[:37] + "..."


def name_problems(config: dict) -> list[str]:
    """Every name of `config` that becomes a path and breaks the rule, one message each."""
    problems = []
    if "run_name" in config:
        problems.append(name_problem("run_name", config["run_name"], "run"))
    for path in ENTRY_SECTIONS:
        for name in _section(config, path) or ():
            key = ".".join((*path, _shown(name)))
            problem = name_problem(key, name)
            why = None if problem else _reserved(path, name)
            problems.append(
                problem or (f"config key '{key}': {name!r} cannot be used: {why}; choose another name" if why else None)
            )
    return [p for p in problems if p]
