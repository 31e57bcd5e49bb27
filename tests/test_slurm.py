"""The SLURM profile, run for real: a one-node SLURM cluster on this machine
(tools/slurm/local_cluster.sh: slurmctld, slurmd, slurmdbd + mariadb, munge,
fake GPUs) runs the smoke config through `--executor slurm` with
profiles/slurm, from the local run's data and trained models on (the CNN's
chain and the jobs that read both models: workflow_support.recomputed); sacct
must list the jobs with the right GPU requests and the tables must equal the
local run's."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from fudbench.report import TIMING_COLUMNS
from workflow_support import remove_recomputed, snakemake

REPO_ROOT = Path(__file__).resolve().parents[1]
CLUSTER = REPO_ROOT / "tools/slurm/local_cluster.sh"
PROFILE = REPO_ROOT / "profiles/slurm"
CANNOT_INSTALL = 3  # local_cluster.sh's exit code when apt cannot fetch slurm here


def profile():
    return yaml.safe_load((PROFILE / "config.yaml").read_text())


def gpu_rules_in_workflow(repo) -> set[str]:
    """Rules whose resources declare `gpu=GPU` (rules/*.smk)."""
    found = set()
    for smk in (repo / "rules").glob("*.smk"):
        rule = None
        for line in smk.read_text().splitlines():
            m = re.match(r"\s*rule (\w+):", line)
            if m:
                rule = m.group(1)
            elif rule and re.match(r"\s*gpu\s*=\s*GPU\b", line):
                found.add(rule)
    return found


def test_profile_requests_a_gpu_for_exactly_the_gpu_rules(repo):
    prof = profile()
    gpu_rules = gpu_rules_in_workflow(repo)
    assert {"explain", "evaluate", "train_classifier"} <= gpu_rules  # the scan works
    requested = {r for r, res in prof["set-resources"].items() if res.get("gpu") == 1}
    assert gpu_rules <= requested, f"add to profiles/slurm set-resources: {sorted(gpu_rules - requested)}"
    assert requested <= gpu_rules, f"no GPU rules (renamed?): {sorted(requested - gpu_rules)}"
    for rule in requested:
        res = prof["set-resources"][rule]
        assert res.get("cpus_per_gpu", 0) >= 1, rule
        assert "attempt" in str(res["mem_mb"]), f"{rule}: mem_mb should grow with the attempt"
    assert "gpu" not in str(prof["default-resources"]), "CPU rules must not ask for a GPU"
    # Group jobs hold one GPU, whatever the group's width.
    assert "gpu=1" in prof["resources"] and "gpu=local" in prof["set-resource-scopes"]


# ---------------------------------------------------------------- the cluster


@pytest.fixture(scope="module")
def slurm_cluster():
    """A running local cluster for this module; stopped at teardown, even when
    a test fails. A cluster that this script had already started is reused and
    left running. Skips only where SLURM cannot be installed, and not even
    then with FUD_REQUIRE_SLURM set (.ci/run sets it)."""

    def run(cmd, timeout):
        return subprocess.run(["bash", str(CLUSTER), cmd], capture_output=True, text=True, timeout=timeout)

    installed = run("install", 1200)
    if installed.returncode == CANNOT_INSTALL and not os.environ.get("FUD_REQUIRE_SLURM"):
        pytest.skip(f"SLURM cannot be installed on this machine: {installed.stderr.strip()[-500:]}")
    assert installed.returncode == 0, installed.stderr[-3000:]
    if run("status", 60).returncode == 0:
        yield
        return
    started = run("start", 300)
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        yield
    finally:
        stopped = run("stop", 300)
        assert stopped.returncode == 0, f"the local SLURM cluster did not stop: {stopped.stderr[-3000:]}"


# What the SLURM run computes itself: the CNN's chain from its attributions on and every job that reads
# both models (workflow_support.recomputed). The data and the trained models are the local smoke run's (the
# 2-core test cluster would spend minutes retraining what the local run just trained; the profile's GPU
# requests of the training rules are checked statically by test_profile_requests_a_gpu_for_exactly_the_gpu_rules).
RECOMPUTED_MODEL = "cnn"


@pytest.fixture(scope="module")
def slurm_run(repo, slurm_cluster, smoke_run, tmp_path_factory):
    """The smoke config through `--executor slurm` with the repo's profile,
    from a copy of the local smoke run without what it recomputes.
    Returns (results directory, SLURM run id, Snakemake's output)."""
    local, _ = smoke_run
    work = tmp_path_factory.mktemp("smoke_slurm")
    # cp -a keeps mtimes and Snakemake's metadata: the kept files are up to date, the removed ones are remade
    subprocess.run(["cp", "-a", f"{local.parent.parent}/.", str(work)], check=True)
    remove_recomputed(work / "results" / "smoke", RECOMPUTED_MODEL)
    res = snakemake(
        repo,
        "--configfile",
        str(repo / "config/smoke.yaml"),
        "--directory",
        str(work),
        "--workflow-profile",
        str(PROFILE),
        # status polls every few seconds instead of 40+: jobs here take seconds
        "--slurm-init-seconds-before-status-checks",
        "5",
        cwd=work,
        timeout=3600,
    )
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-8000:]
    run_id = re.search(r"SLURM run ID: (\S+)", out).group(1)
    return work / "results" / "smoke", run_id, out


def sacct_jobs(run_id):
    fields = ["JobIDRaw", "State", "ReqTRES", "AllocTRES", "Comment"]
    out = subprocess.run(
        [
            "sacct",
            "-X",
            "--parsable2",
            "--noheader",
            "--name",
            run_id,
            "--starttime",
            "now-1days",
            "--format",
            ",".join(fields),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [dict(zip(fields, line.split("|"))) for line in out.splitlines() if line]


def rules_of(comment: str, rules: set[str], groups: dict[str, set[str]]) -> set[str]:
    """The rules a SLURM job ran, from the plugin's comment: `rule_<rule>` or
    `rule_<rule>_wildcards_<values>` for one job; `rule_<group>_<rule>_...`
    (cut with "..." when long) for a group job, which ran the group's rules
    of this run."""
    body = comment.removeprefix("rule_").split("_wildcards_")[0]
    for group, members in groups.items():
        if body.startswith(group + "_"):
            return members & rules
    return {body} & rules


@pytest.mark.workflow
def test_jobs_went_through_sbatch_with_gpu_requests(slurm_run):
    _, run_id, out = slurm_run
    submitted = set(re.findall(r"submitted with SLURM jobid (\d+)", out))
    jobs = sacct_jobs(run_id)
    assert {j["JobIDRaw"] for j in jobs} == submitted, "sacct must list every job Snakemake submitted"
    assert all(j["State"] == "COMPLETED" for j in jobs), jobs

    stats = out[out.index("Job stats:") :]
    rules = {m.group(1) for m in re.finditer(r"^(\w+)\s+\d+$", stats, re.M)} - {"all", "total"}
    prof = profile()
    gpu_rules = {r for r, res in prof["set-resources"].items() if res.get("gpu") == 1}
    groups = {}
    for entry in prof["groups"]:
        rule, group = entry.split("=")
        groups.setdefault(group, set()).add(rule)
    assert {"explain", "evaluate", "fud_diagnostics"} <= rules, f"GPU rules that did not run here: {sorted(rules)}"
    seen = set()
    for job in jobs:
        ran = rules_of(job["Comment"], rules, groups)
        assert ran, f"cannot tell the rules of job {job}"
        seen |= ran
        asks_gpu = "gres/gpu=1" in job["ReqTRES"] and "gres/gpu=1" in job["AllocTRES"]
        assert asks_gpu == bool(ran & gpu_rules), f"rules {sorted(ran)}: {job['ReqTRES']}"
    assert seen == rules, f"rules that never reached SLURM: {sorted(rules - seen)}"
    # Grouping made fewer SLURM jobs than rule jobs: the report group holds
    # the table and figure jobs.
    n_rule_jobs = sum(int(n) for r, n in re.findall(r"^(\w+)\s+(\d+)$", stats, re.M) if r not in ("all", "total"))
    assert len(jobs) < n_rule_jobs
    assert any(j["Comment"].startswith("rule_report_") for j in jobs)


@pytest.mark.workflow
def test_tables_equal_the_local_run(slurm_run, smoke_run):
    slurm_results, _, _ = slurm_run
    local_results, _ = smoke_run
    local = {p.name for p in (local_results / "tables").iterdir()}
    assert {p.name for p in (slurm_results / "tables").iterdir()} == local
    # wall-time columns aside (a .tex of a table with such columns shows them: left out)
    timed = {name.rsplit(".", 1)[0] for name in TIMING_COLUMNS}
    compared = sorted(n for n in local if n in TIMING_COLUMNS or n.rsplit(".", 1)[0] not in timed)

    def untimed(path):
        if path.name not in TIMING_COLUMNS:
            return path.read_bytes()
        return pd.read_csv(path).drop(columns=list(TIMING_COLUMNS[path.name])).to_csv(index=False).encode()

    differ = [n for n in compared if untimed(slurm_results / "tables" / n) != untimed(local_results / "tables" / n)]
    assert any(n.endswith(".csv") for n in compared)
    assert not differ, f"tables that differ between the SLURM and the local run: {differ}"
