"""Incremental reruns (DESIGN.md): after a completed smoke run, changing one
config value reruns exactly the jobs that depend on it.

Each scenario writes a modified copy of config/smoke.yaml and asks a dry-run
(`snakemake -n`) of a copy of the completed run which jobs it would run and
why. The assertions are derived from the DAG rather than hard-coded job
lists, so they hold while rules are added:

- the "seed" jobs of the change (e.g. the evaluate jobs with evaluator=fud)
  all rerun, for the changed parameter (or because they are new);
- every other job reruns only because an input was updated by a job that
  reruns (Snakemake's reason "Input files updated by another job"), i.e. it
  lies downstream of a seed; nothing upstream or beside it reruns.

An evaluate job covers every explainer of one (model, evaluator, shard). A
changed or new explainer therefore reruns the evaluate jobs, and their work
cache recomputes only that explainer's work (tested at the job level in
tests/test_pipeline.py: test_work_cache_recomputes_only_new_or_changed_explainers).

The dry-runs use `--rerun-triggers mtime params input`: what is tested is the
reach of config values, and edits to the code (a trigger of their own) would
otherwise blur it. `test_unchanged_config_reruns_nothing` covers all triggers.
"""

from __future__ import annotations

import copy
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from workflow_support import snakemake
from fudbench.config.files import resolve_config

CONFIG_TRIGGERS = ("--rerun-triggers", "mtime", "params", "input")

# Snakemake's reasons for (re)running a job, as it prints them.
UPSTREAM = ("Input files updated by another job", "Set of input files has changed since last execution")
PARAMS = "Params have changed since last execution"
MISSING = "Missing output files"


@dataclass
class Job:
    rule: str
    wildcards: dict = field(default_factory=dict)
    outputs: list = field(default_factory=list)
    reasons: dict = field(default_factory=dict)  # reason kind -> its details

    def __str__(self):
        wc = ",".join(f"{k}={v}" for k, v in self.wildcards.items())
        return f"{self.rule}[{wc}] ({'; '.join(k + (': ' + v[:200] if v else '') for k, v in self.reasons.items())})"


_REASON_KINDS = (
    MISSING,
    PARAMS,
    "Code has changed since last execution",
    "Updated input files",
    *UPSTREAM,
    "Forced execution",
    "Job has non-existent metadata",
    "Incomplete output files",
    "Software environment definition has changed since last execution",
)


def _reasons(text: str) -> dict:
    """Split Snakemake's one-line reason into {kind: details}; an unknown kind
    is kept whole so that the assertions fail on it rather than ignore it."""
    starts = sorted((m.start(), kind) for kind in _REASON_KINDS for m in re.finditer(re.escape(kind), text))
    starts = [(i, k) for i, k in starts if i == 0 or text[i - 2 : i] == "; "]
    if not starts or starts[0][0] != 0:
        return {text: ""}
    out = {}
    for (i, kind), nxt in zip(starts, [*starts[1:], (len(text) + 2, None)]):
        out[kind] = text[i + len(kind) : nxt[0] - 2].lstrip(": ").strip()
    return out


def planned_jobs(output: str) -> list[Job]:
    """The jobs a Snakemake run (dry or real) printed, with wildcards, outputs and reasons."""
    jobs, job = [], None
    for line in output.splitlines():
        m = re.match(r"^(?:local)?(?:rule|checkpoint) (\w+):$", line)
        if m:
            job = Job(m.group(1))
            jobs.append(job)
            continue
        m = re.match(r"^    (\w+): (.*)$", line) if job else None
        if not m:
            job = None if job and not line.startswith("    ") else job
            continue
        key, value = m.groups()
        if key == "wildcards":
            job.wildcards = dict(kv.split("=", 1) for kv in value.split(", "))
        elif key == "output":
            job.outputs = value.split(", ")
        elif key == "reason":
            job.reasons = _reasons(value.strip())
    return jobs


def _missing_only_temp_samples(job: Job) -> bool:
    return MISSING in job.reasons and all("/samples/" in f for f in job.reasons[MISSING].split(", "))


def only_downstream(job: Job) -> bool:
    """Reruns only because jobs it reads from rerun (or are new). A deleted
    temp() output does not count against a job that reruns for that reason anyway."""
    reasons = set(job.reasons) - ({MISSING} if _missing_only_temp_samples(job) else set())
    return bool(reasons) and reasons <= set(UPSTREAM)


def _is_temp_sample_victim(job: Job) -> bool:
    """Known gap (docs/reliability.md): the intermediate samples are temp(); a
    rerun of an aggregating consumer (gallery, quality) needs them all, so
    Snakemake reruns the evaluate jobs that made them, for that reason alone."""
    return job.rule == "evaluate" and set(job.reasons) == {MISSING} and _missing_only_temp_samples(job)


def assert_reruns(jobs: list[Job], is_seed, seed_reason: str, downstream=only_downstream):
    """Seeds rerun for `seed_reason`; every other job only because it is
    downstream of a rerun (`downstream`), or is a victim of the known temp()
    gap. Returns (seeds, the jobs without those victims, the victims)."""
    seeds = [j for j in jobs if is_seed(j)]
    wrong_seeds = [j for j in seeds if seed_reason not in j.reasons]
    assert not wrong_seeds, "seed jobs rerun for another reason:\n" + "\n".join(map(str, wrong_seeds))
    victims = [j for j in jobs if not is_seed(j) and _is_temp_sample_victim(j)]
    others = [j for j in jobs if not is_seed(j) and not downstream(j) and j not in victims]
    assert not others, "jobs rerun that do not depend on the change:\n" + "\n".join(map(str, others))
    return seeds, [j for j in jobs if j not in victims], victims


def assert_no_sample_victims(victims: list[Job]):
    """Called last, after every other assertion of the scenario passed. Evaluate
    jobs used to rerun only to remake temp() samples for gallery/quality; the
    samples they keep are no longer temp(), so none may rerun for that."""
    assert not victims, (
        f"{len(victims)} evaluate jobs rerun only to remake samples for gallery/quality, e.g. {victims[0]}"
    )


def shard_count(cfg) -> int:
    from fudbench.data.shards import n_shards

    return n_shards(cfg["data"]["n_eval"], cfg["data"]["shard_size"])


@pytest.fixture(scope="module")
def smoke_config(repo):
    return resolve_config([repo / "config/smoke.yaml"])


@pytest.fixture(scope="module")
def completed(smoke_run, tmp_path_factory):
    """A copy of the completed smoke run (results + .snakemake metadata, mtimes kept)."""
    results, _ = smoke_run
    work = tmp_path_factory.mktemp("reruns") / "work"
    shutil.copytree(results.parent.parent, work, symlinks=True)
    return work


def dry_run(repo, work: Path, config: dict, *extra) -> tuple[list[Job], str]:
    path = work.parent / f"config_{len(list(work.parent.glob('config_*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    res = snakemake(repo, "-n", "--configfile", str(path), "--directory", str(work), *extra)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-6000:]
    return planned_jobs(out), out


@pytest.mark.workflow
def test_unchanged_config_reruns_nothing(repo, completed, smoke_config):
    jobs, out = dry_run(repo, completed, smoke_config)
    assert not jobs, "a completed run with the same config and code should have nothing to do:\n" + "\n".join(
        map(str, jobs)
    )
    assert "Nothing to be done" in out


@pytest.mark.workflow
def test_fud_steps_rerun_only_fud_evaluations_and_their_consumers(repo, completed, smoke_config):
    cfg = copy.deepcopy(smoke_config)
    before = cfg["evaluators"]["fud"]["steps"]
    cfg["evaluators"]["fud"]["steps"] = before + 1
    jobs, _ = dry_run(repo, completed, cfg, *CONFIG_TRIGGERS)
    # Seeds: the jobs whose params changed; each must have been handed FUD's step count.
    seeds, jobs, victims = assert_reruns(jobs, lambda j: PARAMS in j.reasons, seed_reason=PARAMS)
    for j in seeds:
        assert f"'steps': {before}" in j.reasons[PARAMS] and f"'steps': {before + 1}" in j.reasons[PARAMS], str(j)
    fud_evals = [j for j in seeds if j.rule == "evaluate"]
    assert {j.wildcards["evaluator"] for j in fud_evals} == {"fud"}
    assert len(fud_evals) == len(cfg["models"]["classifiers"]) * shard_count(cfg)
    assert {j.wildcards["evaluator"] for j in jobs if j.rule == "evaluate"} == {"fud"}
    assert not [j for j in jobs if j.rule in ("explain", "make_dataset", "train_classifier", "train_score_model")]
    assert_no_sample_victims(victims)


@pytest.mark.workflow
def test_ig_steps_rerun_only_the_ig_chain(repo, completed, smoke_config):
    cfg = copy.deepcopy(smoke_config)
    cfg["explainers"]["ig"]["n_steps"] += 2
    jobs, _ = dry_run(repo, completed, cfg, *CONFIG_TRIGGERS)
    seeds, jobs, victims = assert_reruns(jobs, lambda j: PARAMS in j.reasons, seed_reason=PARAMS)
    assert {(j.rule, j.wildcards.get("explainer")) for j in seeds} == {("explain", "ig")}
    assert len(seeds) == len(cfg["models"]["classifiers"]) * shard_count(cfg)
    evaluates = [j for j in jobs if j.rule == "evaluate"]
    # Every evaluate job reads ig's attributions (and recomputes only ig's work: its cache).
    assert all(set(j.reasons) <= set(UPSTREAM) for j in evaluates), "\n".join(map(str, evaluates))
    assert len(evaluates) == len(cfg["models"]["classifiers"]) * len(cfg["evaluators"]) * shard_count(cfg)
    assert_no_sample_victims(victims)


@pytest.mark.workflow
def test_new_explainer_adds_its_jobs_and_reruns_only_aggregations(repo, completed, smoke_config):
    cfg = copy.deepcopy(smoke_config)
    assert "random" not in cfg["explainers"]
    cfg["explainers"]["random"] = {}
    jobs, _ = dry_run(repo, completed, cfg, *CONFIG_TRIGGERS)
    is_new = lambda j: j.wildcards.get("explainer") == "random"  # noqa: E731

    def extends(j):
        """An evaluate job that gains the new explainer: its only missing
        outputs are the new explainer's, and it also reads the new
        attributions (its work cache recomputes only the new explainer)."""
        missing = j.reasons.get(MISSING, "").split(", ")
        return (
            j.rule == "evaluate"
            and missing != [""]
            and all("/random/" in f for f in missing)
            and set(j.reasons) <= {MISSING, PARAMS, *UPSTREAM}
        )

    def aggregation(j):
        """Downstream of the new jobs; an aggregation may also get the new list of
        explainer names in its params, but only together with new inputs. A
        `random` entry beside the degraded family also brings the family gate
        (rules/meta.smk: it compares the family with `random`), new, and the
        claims and report card that read it."""
        if j.rule == "family_gate":
            return set(j.reasons) <= {MISSING, *UPSTREAM}
        if j.rule == "results_page":  # `random` brings the page's paired-difference figure (results_vs_random)
            return set(j.reasons) <= {MISSING, PARAMS, *UPSTREAM} and bool(set(UPSTREAM) & set(j.reasons))
        return extends(j) or (bool(set(UPSTREAM) & set(j.reasons)) and set(j.reasons) <= {PARAMS, *UPSTREAM})

    new, jobs, victims = assert_reruns(jobs, is_new, seed_reason=MISSING, downstream=aggregation)
    # New jobs: all their outputs are missing.
    assert all(set(j.reasons) <= {MISSING, *UPSTREAM} for j in new), "\n".join(map(str, new))
    n_models = len(cfg["models"]["classifiers"])
    assert sum(j.rule == "explain" for j in new) == n_models * shard_count(cfg)
    assert sum(extends(j) for j in jobs) == n_models * len(cfg["evaluators"]) * shard_count(cfg)
    # No per-explainer job of another explainer reruns.
    assert not [j for j in jobs if "explainer" in j.wildcards and not is_new(j)]
    assert_no_sample_victims(victims)


@pytest.mark.workflow
def test_plot_option_reruns_only_figures(repo, completed, smoke_config):
    cfg = copy.deepcopy(smoke_config)
    cfg["plots"]["dpi"] += 10
    jobs, _ = dry_run(repo, completed, cfg, *CONFIG_TRIGGERS)
    makes_figure = lambda j: any("/figures/" in f for f in j.outputs)  # noqa: E731
    _, jobs, victims = assert_reruns(jobs, makes_figure, seed_reason=PARAMS)
    assert not victims
    # Every figure of the run is redrawn (each figure rule takes the plot settings) ...
    figures = {str(p.relative_to(completed)) for p in (completed / "results").rglob("figures/*") if p.is_file()}
    redrawn = {f for j in jobs for f in j.outputs}
    assert figures and figures <= redrawn, f"not redrawn: {sorted(figures - redrawn)}"
    # ... and nothing that feeds them: no data, model, attribution, record or aggregation job.
    upstream = {
        "make_dataset",
        "train_classifier",
        "train_score_model",
        "explain",
        "evaluate",
        "quality",
        "aggregate_records",
        "gallery",
        "check_score_model",
    }
    assert not [j for j in jobs if j.rule in upstream]


@pytest.mark.workflow
def test_a_table_option_reruns_only_that_table(repo, completed, smoke_config):
    """Rules get only the sub-tree of a config section they use: a setting of
    the OOD tables (Tables 2/8) does not rerun the other tables."""
    cfg = copy.deepcopy(smoke_config)
    cfg["analysis"]["ood_pooling"] = {"run": "all", "all": "run"}[cfg["analysis"]["ood_pooling"]]
    jobs, _ = dry_run(repo, completed, cfg, *CONFIG_TRIGGERS)
    seeds, _, victims = assert_reruns(jobs, lambda j: PARAMS in j.reasons, seed_reason=PARAMS)
    assert seeds and {j.rule for j in seeds} == {"table_ood"}, "\n".join(map(str, seeds))
    assert not victims


def test_scripts_get_config_only_through_params(repo):
    """A script that reads snakemake.config would use config values that no
    rerun trigger tracks; they must come through params: instead."""
    offenders = [p.name for p in (repo / "scripts").glob("*.py") if re.search(r"snakemake\.config\b", p.read_text())]
    assert not offenders
