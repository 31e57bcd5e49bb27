"""results/<run>/invocations.jsonl: one line per invocation with its commit (issue 44)."""

import subprocess

from fudbench.workflow.invocations import read_invocations, record_invocation


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_each_invocation_appends_its_commit_and_dirty_state(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "a.txt").write_text("1")
    _git(repo, "add", "a.txt")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "one")
    results = tmp_path / "results" / "run"
    first = record_invocation(results, repo, argv=["snakemake", "--cores", "2"])
    (repo / "a.txt").write_text("2")  # uncommitted change
    second = record_invocation(results, repo, argv=["snakemake"])
    lines = read_invocations(results)
    assert [line["argv"] for line in lines] == [["snakemake", "--cores", "2"], ["snakemake"]]
    assert first["commit"] == second["commit"] and len(first["commit"]) == 40
    assert first["dirty"] == [] and second["dirty"] == ["a.txt"]


def test_outside_git_records_no_commit(tmp_path):
    entry = record_invocation(tmp_path / "r", tmp_path, argv=[])
    assert "commit" not in entry and read_invocations(tmp_path / "r")[0]["argv"] == []
