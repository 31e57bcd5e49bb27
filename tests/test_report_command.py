"""Through Snakemake (each command pays its start-up): `./fud report`
reports the run its config files address, refuses an unfinished run with the list of what is
missing and the command that finishes it, and a run that names targets remakes what the
damage ledger and the presence check found instead of "Nothing to be done" with files missing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "config" / "smoke.yaml"


def fud(*args, cwd):
    res = subprocess.run([str(REPO / "fud"), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=3000)
    return res.returncode, res.stdout + res.stderr


@pytest.mark.workflow
def test_report_of_an_unfinished_run_lists_what_is_missing_and_the_command(tmp_path):
    """Snakemake said "File ... marked for report but does not exist" about the first one."""
    (tmp_path / "a run").mkdir()
    rc, out = fud("report", "--configfile", SMOKE, "--directory", "a run", cwd=tmp_path)
    assert rc != 0
    assert "marked for report but does not exist" not in out
    assert "the run is not finished: " in out and "results/smoke/tables/table7_scores.csv" in out
    assert f"finish it with `{REPO / 'fud'} run --configfile {SMOKE} --directory '{tmp_path / 'a run'}'`" in out
    assert not list((tmp_path / "a run").glob("results/**/report.html"))


@pytest.mark.workflow
def test_report_with_configfile_lands_in_that_runs_folder(smoke_run, tmp_path):
    """`./fud report --configfile config/smoke.yaml` wrote results/synthetic/report.html."""
    results, _ = smoke_run
    work = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(results.parent.parent), str(work)], check=True)
    rc, out = fud("report", "--configfile", SMOKE, "--directory", work, cwd=REPO)
    assert rc == 0, out[-4000:]
    assert (work / "results" / "smoke" / "report.html").is_file()
    assert not (work / "results" / "synthetic").exists()


@pytest.mark.workflow
def test_a_targeted_run_remakes_the_deleted_data_and_model(smoke_run, tmp_path):
    """A job found data/eval.npz corrupt and deleted it (the ledger names it); Snakemake removed the
    failed job's model. A run with a target that exists said "remade", then "Nothing to be done",
    and exited 0 with both missing; now both are remade (or the run fails), never 0 with them gone."""
    results, _ = smoke_run
    work = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(results.parent.parent), str(work)], check=True)
    run = work / "results" / "smoke"
    (run / "data" / "eval.npz").unlink()
    (run / "models" / "cnn.pt").unlink()
    (run / ".damaged").write_text(f"{run / 'data' / 'eval.npz'}\n")
    rc, out = fud(
        "run", "--configfile", SMOKE, "--directory", work, "--cores", "2", "results/smoke/tables/run_info.csv", cwd=REPO
    )
    assert rc == 0, out[-4000:]
    assert "Nothing to be done" not in out
    assert "this run names its targets, so the 2 missing file(s) noted above are added to them and remade" in out
    assert (run / "data" / "eval.npz").is_file() and (run / "models" / "cnn.pt").is_file()
    rc, out = fud(
        "run", "--configfile", SMOKE, "--directory", work, "-n", "results/smoke/tables/run_info.csv", cwd=REPO
    )
    assert rc == 0 and "Nothing to be done" in out and "remade" not in out, out[-3000:]
