"""`./fud run|snakemake|report`: the workflow's command line.

The config files given are checked and merged (fudbench.config.files), the evaluators' estimated cost
printed (fudbench.workflow.cost), then Snakemake runs with one scheduler fix (fudbench.workflow.snakemake_main).
"""

from __future__ import annotations

import os
import sys

from fudbench.config.files import (
    ConfigFileError,
    collect_configfiles,
    config_overrides,
    report_argv,
    run_config,
    snakemake_argv,
)


def main(argv: list[str]) -> None:
    """`./fud run|snakemake|report ARGS` (python -m fudbench.workflow.command {snakemake|report} ARGS): check, then exec Snakemake
    (fudbench.workflow.snakemake_main)."""
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    if command not in ("snakemake", "report"):
        sys.exit("usage: python -m fudbench.workflow.command {snakemake|report} [args...]")
    try:
        args = snakemake_argv(args) if command == "snakemake" else report_argv(args)
    except ConfigFileError as exc:
        print(f"fud: {exc}", file=sys.stderr)
        sys.exit(2)
    if command == "report":  # which run it reports, and how to report the others (fudbench.workflow.report_run)
        from fudbench.workflow.report_run import ABOUT_ENV, describe

        os.environ[ABOUT_ENV] = describe(args)
        print(os.environ[ABOUT_ENV], file=sys.stderr)
    if command == "snakemake":  # the evaluators' estimated cost, before any job (fudbench.workflow.cost)
        from fudbench.workflow.cost import print_estimate

        print_estimate(args, lambda: run_config(collect_configfiles(list(args))[1], config_overrides(args)))
    sys.stdout.flush()
    # Snakemake with one scheduler fix (fudbench.workflow.snakemake_main: its timers no longer pile up)
    os.execv(sys.executable, [sys.executable, "-m", "fudbench.workflow.snakemake_main", *args])


if __name__ == "__main__":
    main(sys.argv[1:])
