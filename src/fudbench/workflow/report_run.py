"""Which run `./fud report` reports, said before it starts and after it wrote the report.

`./fud report` takes the config files of the run it reports (fudbench.config.files.report_argv); without
any it reports the default run (results/synthetic), also after a photos run, whose report then needs
`./fud report config/photos.yaml`. So the command names the run it reports (its run name, config files and
results folder) and, for every other run in the same results/ folder, the command that reports it: the
config files of that run's last `./fud run` (its invocations.jsonl, fudbench.workflow.invocations), else
the repository's config files that make a run of that name (fudbench.config.files.configs_of_run).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from fudbench.config.files import REPO, caller_dir, collect_configfiles, configs_of_run, fud_command
from fudbench.workflow.invocations import read_invocations

ABOUT_ENV = "FUD_REPORT_ABOUT"  # the sentence below, printed again by the report after it was written


def option_value(argv: list[str], names) -> str | None:
    """The last value of a one-value option (`-d DIR`, `--directory=DIR`) before `--`."""
    value = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        name, eq, given = arg.partition("=")
        if eq and name in names:
            value = given
        elif arg in names and i + 1 < len(argv):
            value = argv[i + 1]
    return value


def shown(path) -> str:
    """A path as the user would type it: relative to the repository when inside it."""
    path = os.path.abspath(path)
    inside = os.path.relpath(path, REPO)
    here = os.path.realpath(caller_dir()) == os.path.realpath(REPO)
    return inside if here and not inside.startswith("..") else path


def run_configs(run_dir: Path) -> list[str] | None:
    """The config files the run in `run_dir` was last run with (its invocations.jsonl), where they
    still exist; None when unknown."""
    for entry in reversed(read_invocations(run_dir)):
        files = collect_configfiles(list(entry.get("argv", [])[1:]))[1]
        if all(os.path.isfile(f) for f in files):
            return [shown(f) for f in files]
    name = run_dir.name
    found = configs_of_run(name)
    return found[:1] if found else None


def report_command(files: list[str]) -> str:
    return shlex.join([fud_command(), "report", *files]) if files else f"{fud_command()} report"


def other_runs(results_root: Path, this: str) -> list[str]:
    """`name (command)` of each other run in `results_root` (a folder with a run's provenance)."""
    out = []
    for run_dir in sorted(p for p in results_root.glob("*") if p.is_dir() and p.name != this):
        if not any((run_dir / f).exists() for f in ("invocations.jsonl", "run_info.json")):
            continue
        files = run_configs(run_dir)
        how = (
            f"`{report_command(files)}`"
            if files is not None
            else "its config files unknown: those of the ./fud run that made it"
        )
        out.append(f"{run_dir.name} ({how})")
    return out


def describe(argv: list[str]) -> str:
    """What `./fud report` with Snakemake's arguments `argv` (fudbench.config.files.report_argv's) reports."""
    report = Path(option_value(argv, ("--report",)))
    files = collect_configfiles(list(argv))[1]
    directory = Path(option_value(argv, ("--directory", "-d")) or REPO)
    results = directory / report.parent
    given = ", ".join(shown(f) for f in files) if files else "none: config/config.yaml, the default run"
    line = (
        f"./fud report: the run '{report.parent.name}' (config files: {given}; results: {shown(results)}) "
        f"-> {shown(directory / report)}"
    )
    others = other_runs(results.parent, report.parent.name)
    if others:
        line += f"\n  other runs in {shown(results.parent)}, each reported by its own config files: " + "; ".join(
            others
        )
    return line
