"""The damage ledger: intermediates a job found corrupt and deleted are remade.

A job that reads an intermediate file (attributions, records, samples ...)
and finds it corrupt deletes it (`fudbench.core.io.checked_read`). That alone does
not make Snakemake remake it: Snakemake 9 reruns a job whose output is missing
only if a job that needs the output runs too, and a job whose input is
missing is not rerun for that (only an input *newer* than its outputs counts).
So once the run's final tables exist, a deleted intermediate, and the other
outputs Snakemake removed from the failed readers, stay missing and the next
run reports "Nothing to be done" with the old tables.

The fix: the reader also appends the deleted path to a ledger,
`results/<run>/.damaged` (`note_deleted`). When the Snakefile is parsed,
`remake_damaged` returns the ledger's paths that are still missing and that a
rule of the current workflow can make; the Snakefile adds them to the inputs
of `rule all`. A missing input of the target rule is what Snakemake does
remake: it reruns the producer, and every job that reads the remade file
reruns because its input was updated by a job that ran, so the readers that
failed (and whose outputs Snakemake removed) and the tables above them are
remade too, and nothing else. This uses only Snakemake's documented
behaviour for missing targets (no internal API, nothing forced by hand), and
works the same for dry runs (`-n` lists the jobs) and on a cluster. A run that
names its own targets does not build `rule all`; there the paths are added to
its targets (also_in_targeted_runs: the one place that reaches into
Snakemake's Workflow, its `_prepare_dag` and `dag_settings`), so they are
remade too instead of "Nothing to be done" with files missing.

Why a ledger and not a check of every intermediate at parse time: a check
would have to read thousands of files on each parse (every SLURM job parses
the Snakefile again), and only the reader knows what "corrupt" means for its
file. The ledger is read, never written, at parse time; an entry whose file
exists again is ignored, so the ledger may be deleted at any time.

Limit: a damaged file is found when a job reads it. Two damaged files where
the reader of one runs only after the other was remade (e.g. a records file
of one model and an attributions file of another: the aggregation reading the
records waits for the evaluate jobs of the remade attributions) take one
detect-and-remake round each. A job that reads many files of one kind should
read them with `fudbench.core.io.read_every`, which finds all the corrupt ones in
one run (the aggregation of the records does).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Iterable, Optional

LEDGER_ENV = "FUD_DAMAGE_LEDGER"
LEDGER_NAME = ".damaged"


def note_deleted(path) -> Optional[str]:
    """Append a deleted corrupt file to the run's ledger, if this process runs a
    workflow job (the Snakefile names the ledger in FUD_DAMAGE_LEDGER). Returns
    the ledger's path, or None outside a workflow (nothing is written)."""
    ledger = os.environ.get(LEDGER_ENV)
    if not ledger:
        return None
    line = (os.path.abspath(path) + "\n").encode()
    try:
        Path(ledger).parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            os.write(fd, line)  # one small O_APPEND write: concurrent readers do not interleave
        finally:
            os.close(fd)
    except OSError:
        return None
    return ledger


def ledger_entries(ledger) -> list[str]:
    """The ledger's paths (absolute), each once, in the order they were noted."""
    try:
        lines = Path(ledger).read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    return list(dict.fromkeys(line.strip() for line in lines if line.strip()))


def remake_damaged(results: str, rules: Iterable) -> list[str]:
    """Parse time, from the Snakefile's `rule all`: point this run's jobs at the
    ledger results/<run>/.damaged (environment variable FUD_DAMAGE_LEDGER,
    inherited by every job), and return the paths noted in it that are still
    missing and that one of `rules` can make (relative to the working
    directory, as the rules name their outputs). A path no rule makes any more
    (e.g. of an explainer removed from the config) is left out: requesting it
    would fail the whole run."""
    ledger = os.path.abspath(os.path.join(results, LEDGER_NAME))
    os.environ[LEDGER_ENV] = ledger
    rules = list(rules)
    wanted = []
    for entry in ledger_entries(ledger):
        rel = os.path.relpath(entry)
        if rel.startswith("..") or os.path.exists(rel):
            continue
        if any(rule.is_producer(rel) for rule in rules):
            wanted.append(rel)
    if wanted:
        print(
            f"note: {len(wanted)} file(s) that a job found corrupt and deleted (listed in {results}/"
            f"{LEDGER_NAME}) are remade, with every job that reads them: {', '.join(wanted)}",
            file=sys.stderr,
        )
    also_in_targeted_runs(rules, wanted, always=True)
    return wanted


# ------------------------------------------------------------------ files deleted by hand

_WILDCARD = re.compile(r"\{\s*(\w+)\s*(?:,[^{}]*)?\}")


def _with_wildcards(pattern: str, wildcards: dict) -> Optional[str]:
    """`pattern` with its {wildcards} filled in; None if one is not given."""
    try:
        return _WILDCARD.sub(lambda m: str(wildcards[m.group(1)]), pattern)
    except KeyError:
        return None


def _plain_inputs(rule, wildcards: dict) -> list[str]:
    """The input paths of `rule`'s job with `wildcards`: its string inputs (input functions,
    which only the DAG evaluates, are left out)."""
    out = []
    for item in rule.input:
        is_function = getattr(item, "is_callable", None)
        if callable(item) or (is_function is not None and is_function()):
            continue
        path = _with_wildcards(str(item), wildcards)
        if path is not None:
            out.append(os.path.normpath(path))
    return out


def remake_missing(results: str, rules: Iterable, limit: int = 100_000) -> list[str]:
    """Parse time, from the Snakefile's `rule all`: the intermediates of results/<run> that a
    finished job read and that are gone now (deleted by hand), so that Snakemake remakes
    them and reruns what read them (as for the ledger's files, remake_damaged). Snakemake
    itself does not: a job whose input is missing is not rerun while its outputs exist,
    so the tables stayed built from the deleted file ("Nothing to be done").

    Walks back from the rules without wildcards whose outputs all exist (the finished
    tables and figures) through the string inputs of each finished job (a job whose
    outputs all exist), to the missing inputs that a rule makes. Cheap: one stat per
    intermediate, no file read; at most `limit` files are looked at."""
    rules = list(rules)
    root = os.path.normpath(results) + os.sep
    queue = [
        (r, {}) for r in rules if not r.has_wildcards() and r.output and all(os.path.exists(str(o)) for o in r.output)
    ]
    seen, jobs, missing = set(), set(), []
    while queue and len(seen) < limit:
        rule, wildcards = queue.pop()
        for path in _plain_inputs(rule, wildcards):
            if path in seen or not path.startswith(root):
                continue
            seen.add(path)
            producer = next((r for r in rules if r.is_producer(path)), None)
            if producer is None:
                continue
            if not os.path.exists(path):
                missing.append(path)
                continue
            found = dict(producer.get_wildcards(path) or {}) if producer.has_wildcards() else {}
            job = (producer.name, tuple(sorted(found.items())))
            if job in jobs:  # a job with many outputs (one per explainer) is walked once
                continue
            jobs.add(job)
            outputs = [_with_wildcards(str(o), found) for o in producer.output]
            if all(o is not None and os.path.exists(o) for o in outputs):
                queue.append((producer, found))
    if missing:
        print(
            f"note: {len(missing)} input file(s) of finished jobs are missing (deleted by hand, or new inputs "
            f"after a config change, e.g. an added evaluator) and are made, with every job that reads them: {', '.join(missing[:10])}"
            + (f" ... ({len(missing) - 10} more)" if len(missing) > 10 else ""),
            file=sys.stderr,
        )
    also_in_targeted_runs(rules, missing)
    return missing


# ------------------------------------------------------------------ runs with targets


def also_in_targeted_runs(rules, paths, always: bool = False) -> bool:
    """The found paths (remake_damaged, remake_missing) are inputs of `rule all`, which
    Snakemake builds only without targets: `./fud run TARGET` announced them as remade and
    then did "Nothing to be done" (issue 45). In the main Snakemake process this adds them to
    the targets of a run that names its own (targets or --target-jobs), when the run builds
    its DAG (add_targets), so every command that announces them remakes them; the jobs of the
    named targets that read them rerun with them (their input is remade), other readers on
    the next run (their input is newer). Only files a job made before are added (`always`: the
    ledger's, which a job found corrupt; else those Snakemake holds metadata of): a file no job
    made yet is a new input after a config change (an added explainer's records), and adding
    those made a run that targets the new explainer's one attribution file run 26 jobs instead
    of 1 (issue 60); the targets' own jobs make what they need of them. Returns whether the
    workflow took them (False outside Snakemake, or a Snakemake without the hook's attributes:
    then the note says to run without targets)."""
    rules = list(rules)
    workflow = getattr(rules[0], "workflow", None) if rules else None
    if workflow is None or not paths:
        return False
    if not getattr(workflow, "is_main_process", True):
        return False
    found = workflow.__dict__.get("_fud_remake")
    if found is None:
        prepare = getattr(workflow, "_prepare_dag", None)
        if prepare is None or not hasattr(workflow, "dag_settings"):
            print(
                "note: with targets, this Snakemake does not remake them: run without targets to remake them",
                file=sys.stderr,
            )
            return False
        found = workflow.__dict__["_fud_remake"] = {}

        def prepare_with_remade(*args, **kwargs):
            ledger = add_targets(workflow, [p for p, always in found.items() if always])
            prepared = prepare(*args, **kwargs)  # also the run's persistence: which files a job made
            others = [p for p, always in found.items() if not always]
            made = [p for p in others if made_before(workflow, p)] if ledger is not None else []
            if made and add_targets(workflow, made):
                prepared = prepare(*args, **kwargs)  # the DAG again, with the added targets
            if ledger is not None:
                note_targets(ledger + made, [p for p in others if p not in made])
            return prepared

        workflow._prepare_dag = prepare_with_remade
    for p in paths:
        found[p] = found.get(p, False) or always
    return True


def made_before(workflow, path: str) -> bool:
    """Whether a job of this workflow made `path` before (Snakemake keeps metadata of each file a
    job made until it is cleaned up); True where this Snakemake keeps none to ask."""
    metadata = getattr(getattr(workflow, "persistence", None), "metadata", None)
    if metadata is None:
        return True
    from snakemake.io import IOFile  # its persistence takes Snakemake's file objects, not strings

    return metadata(IOFile(path)) is not None


def add_targets(workflow, paths) -> list[str] | None:
    """Add `paths` to the workflow's DAG settings' targets if the command named targets of its
    own (then `rule all`, which requests them, is not built); returns the paths added (None
    when the command named no targets)."""
    import dataclasses

    settings = getattr(workflow, "dag_settings", None)
    if settings is None or not (settings.targets or getattr(settings, "target_jobs", None)):
        return None
    added = [p for p in paths if p not in settings.targets]
    if added:
        workflow.dag_settings = dataclasses.replace(settings, targets=frozenset(settings.targets) | set(added))
    return added


def _some(paths: list[str]) -> str:
    return ", ".join(paths[:10]) + (f" ... ({len(paths) - 10} more)" if len(paths) > 10 else "")


def note_targets(added: list[str], new: list[str]) -> None:
    """What a run that names its targets did with the files found missing."""
    if new:
        print(
            f"note: this run names its targets, so the {len(new)} file(s) noted above that no job made yet (new "
            f"inputs after a config change) are not added to them: its targets' jobs make those they read; run "
            f"without targets to make them all: {_some(new)}",
            file=sys.stderr,
        )
    if added:
        print(
            f"note: this run names its targets, so the {len(added)} missing file(s) noted above are added to them "
            f"and remade: {_some(added)}",
            file=sys.stderr,
        )
