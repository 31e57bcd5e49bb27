"""results/<run>/invocations.jsonl identifies the run (issue 60): each line carries digests of the
merged config and of the files it names, `dirty` counts untracked files (not ignored ones), and a
run refused before any job leaves no results folder and no line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from fudbench.config.files import run_config
from fudbench.workflow.invocations import input_digests, read_invocations, record_invocation, repository_state

REPO = Path(__file__).resolve().parents[1]


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _repo(tmp_path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / ".gitignore").write_text("/results/\n")
    (repo / "a.py").write_text("A = 1\n")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "one")
    return repo


def test_dirty_counts_untracked_files_inside_the_repo_not_ignored_ones(tmp_path):
    """An untracked plug-in changes what runs; `dirty` ignored it (--untracked-files=no)."""
    repo = _repo(tmp_path)
    (repo / "results").mkdir()
    (repo / "results" / "big.npz").write_bytes(b"ignored output")
    assert repository_state(repo)["dirty"] == []
    (repo / "plugins").mkdir()
    (repo / "plugins" / "mine.py").write_text("def explain(): ...\n")
    state = repository_state(repo)
    assert state["dirty"] == ["plugins/mine.py"] and state["n_dirty"] == 1 and state["n_untracked"] == 1
    first = input_digests({"a": 1}, repo)["worktree"]
    (repo / "plugins" / "mine.py").write_text("def explain(): return 2\n")
    assert input_digests({"a": 1}, repo)["worktree"] != first  # the untracked file's bytes count
    _git(repo, "add", "plugins/mine.py")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "two")
    assert "worktree" not in input_digests({"a": 1}, repo)  # clean: the commit says it all


def test_each_line_carries_the_digest_of_the_merged_config_and_the_files_it_names(tmp_path):
    """Runs at plots.dpi 70 and 80 gave identical lines."""
    repo = _repo(tmp_path)
    (repo / "plugins").mkdir()
    plugin = repo / "plugins" / "mine.py"
    plugin.write_text("def explain(): ...\n")
    results = tmp_path / "results" / "run"
    lines = []
    for dpi in (70, 80, 80):
        config = {"plots": {"dpi": dpi}, "explainers": {"mine": {"method": "plugins/mine.py:explain"}}}
        lines.append(record_invocation(results, repo, argv=["snakemake"], config=config))
    plugin.write_text("def explain(): return 1\n")
    lines.append(record_invocation(results, repo, argv=["snakemake"], config=config))
    digests = [line["digests"] for line in read_invocations(results)]
    assert digests == [line["digests"] for line in lines]
    assert digests[0]["config"] != digests[1]["config"] and digests[1]["config"] == digests[2]["config"]
    assert list(digests[0]["files"]) == ["plugins/mine.py"]
    assert digests[2]["files"] != digests[3]["files"]  # the plug-in's bytes changed, not the config
    # the workflow's config: every value merged (the smoke run names no file of its own but the default's)
    smoke = input_digests(run_config([REPO / "config/smoke.yaml"]), REPO)
    assert smoke["config"] != input_digests(run_config([]), REPO)["config"]


def _folder_with_a_corrupt_image(tmp_path) -> Path:
    folder = tmp_path / "images"
    folder.mkdir()
    rng = np.random.default_rng(0)
    rows = ["file,label"]
    for i in range(8):
        Image.fromarray(rng.integers(0, 256, (80, 80, 3), dtype=np.uint8)).save(folder / f"im{i}.png")
        rows.append(f"im{i}.png,{i % 2}")
    data = (folder / "im1.png").read_bytes()
    (folder / "im1.png").write_bytes(data[: len(data) // 2])  # truncated: the onstart asset check decodes it
    (folder / "labels.csv").write_text("\n".join(rows) + "\n")
    return folder


@pytest.mark.workflow
def test_a_run_refused_before_any_job_leaves_no_results_folder_and_no_line(tmp_path):
    """The onstart asset check refused a corrupt image after the invocation line was written:
    results/your_own/invocations.jsonl existed for a run that never ran a job."""
    folder = _folder_with_a_corrupt_image(tmp_path)
    overlay = tmp_path / "mine.yaml"
    overlay.write_text(json.dumps({"data": {"folder": {"root": str(folder), "labels": str(folder / "labels.csv")}}}))
    work = tmp_path / "work"
    work.mkdir()
    res = subprocess.run(
        [str(REPO / "fud"), "run", "--configfile", REPO / "config/your_own.yaml", overlay, "--directory", work],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=3000,
    )
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "im1.png: cannot decode the image" in out, out[-3000:]
    assert not (work / "results").exists(), sorted(map(str, work.rglob("*")))
