"""`./fud report` reports only a run that is up to date, and says which run it reports (issue 60,
issue 58). Through Snakemake on a copy of the shared smoke run (each report pays its start-up,
a few seconds; the dry run is the report's own DAG, no second one); the command-line parts
without Snakemake."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fudbench.config import files as cf

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "config" / "smoke.yaml"


def fud(*args, cwd=REPO):
    res = subprocess.run([str(REPO / "fud"), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=3000)
    return res.returncode, res.stdout + res.stderr


@pytest.mark.workflow
def test_report_of_an_out_of_date_run_is_refused_unless_stale_then_every_page_says_so(smoke_copy, tmp_path):
    """After a plots.dpi change (nothing rerun) `./fud report` wrote the old figures under the new
    config, rc 0, no warning; during a running `./fud run` (its lock held) a half-updated one."""
    work = smoke_copy
    dpi = tmp_path / "dpi.yaml"
    dpi.write_text("plots: {dpi: 71}\n")
    before = {p: p.stat().st_mtime_ns for p in (work / "results/smoke/figures").glob("*.png")}
    rc, out = fud("report", SMOKE, dpi, "--directory", work)
    assert rc != 0, out[-3000:]
    assert "the run is out of date: " in out and "params changed" in out
    assert "results/smoke/figures/results_overview.png" in out  # the figures made at the old dpi are listed
    assert f"bring it up to date with `./fud run --configfile {SMOKE} {dpi} --directory {work}`" in out
    assert f"`./fud report {SMOKE} {dpi} --directory {work} --stale`" in out
    assert not (work / "results/smoke/report.html").exists()
    assert {p: p.stat().st_mtime_ns for p in before} == before  # nothing rerun, nothing written

    rc, out = fud("report", SMOKE, dpi, "--directory", work, "--stale")
    assert rc == 0, out[-3000:]
    page = (work / "results/smoke/report.html").read_text(encoding="utf-8")
    n = int(out.split("note: the report is stale (")[1].split(" outputs out of date")[0])
    assert n > 0 and f'body::before {{ content: "stale: {n} outputs out of date' in page

    # a running workflow holds the lock on its outputs: the report waits for it
    (work / "results/smoke/report.html").unlink()
    locks = work / ".snakemake" / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    (locks / "0.output.lock").write_text("results/smoke/tables/results.csv\n")
    rc, out = fud("report", SMOKE, "--directory", work)
    assert rc != 0 and "another Snakemake is running on this run" in out, out[-3000:]
    assert f"`./fud run --configfile {SMOKE} --directory {work} --unlock`" in out
    assert not (work / "results/smoke/report.html").exists()


@pytest.mark.workflow
def test_report_names_the_run_it_reports_and_how_to_report_the_others(smoke_copy):
    """After a photos run, plain `./fud report` reported the synthetic run without saying so."""
    work = smoke_copy
    other = work / "results" / "photos"
    other.mkdir()
    argv = ["snakemake", "--configfile", str(REPO / "config/photos.yaml"), "--cores", "2"]
    (other / "invocations.jsonl").write_text(json.dumps({"argv": argv}) + "\n")
    rc, out = fud("report", SMOKE, "--directory", work)
    assert rc == 0, out[-3000:]
    about = (
        f"./fud report: the run 'smoke' (config files: config/smoke.yaml; results: {work}/results/smoke) "
        f"-> {work}/results/smoke/report.html"
    )
    assert out.count(about) == 2  # before Snakemake's lines, and as the last word
    assert "photos (`./fud report config/photos.yaml`)" in out


def test_report_of_a_run_name_names_the_config_file_that_makes_it(monkeypatch):
    """`./fud report smoke` got "--configfile argument 'smoke' does not exist, so it is not a config
    file; --configfile takes every argument ..." (a hint about targets)."""
    monkeypatch.setenv("FUD_CALLER_CWD", str(REPO))
    with pytest.raises(cf.ConfigFileError) as exc:
        cf.report_argv(["smoke"])
    assert "not a run name; the run 'smoke' is made by config/smoke.yaml" in str(exc.value)
    assert "`./fud report config/smoke.yaml`" in str(exc.value)
    with pytest.raises(cf.ConfigFileError, match="the run 'synthetic' is made by config/config.yaml"):
        cf.report_argv(["synthetic"])
    with pytest.raises(cf.ConfigFileError, match="no config/\\*.yaml makes a run named 'nosuchrun'"):
        cf.report_argv(["nosuchrun"])


def test_stale_is_the_reports_own_flag_not_snakemakes(monkeypatch):
    for name in ("FUD_CALLER_CWD", cf.STALE_ENV, cf.REPORT_ENV, cf.FINISH_ENV):  # restored after the test
        monkeypatch.setenv(name, str(REPO))
    argv = cf.report_argv(["config/smoke.yaml", "--stale", "--cores", "1"])
    assert "--stale" not in argv and cf.os.environ[cf.STALE_ENV] == "1"
    assert cf.os.environ[cf.REPORT_ENV] == "./fud report config/smoke.yaml --cores 1"  # the refusal adds --stale
    cf.report_argv(["config/smoke.yaml"])
    assert cf.STALE_ENV not in cf.os.environ
