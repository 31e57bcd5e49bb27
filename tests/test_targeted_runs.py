"""A run that names its targets runs their jobs: files found missing are added to its targets only
where a job made them before (deleted, or found corrupt: issue 45), not the new inputs of a config
change (issue 60: one explainer added, its one attribution file targeted, 26 jobs ran)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from test_command_line import _Rule
from test_command_line import _Workflow as _PlainWorkflow
from workflow_support import job_counts

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "config" / "smoke.yaml"


class _Persistence:
    def __init__(self, made):
        self.made = set(made)

    def metadata(self, path):
        return {"rule": "x"} if path in self.made else None


class _Workflow(_PlainWorkflow):
    """tests/test_command_line.py's stand-in for Snakemake's Workflow, with the persistence its
    _prepare_dag makes (which files a job made)."""

    def __init__(self, targets, made):
        super().__init__(targets)
        self.made = made

    def _prepare_dag(self, **kwargs):
        self.persistence = _Persistence(self.made)
        super()._prepare_dag(**kwargs)


def test_a_targeted_run_adds_the_files_a_job_made_before_not_the_new_inputs(capsys):
    from fudbench.core.damage import also_in_targeted_runs

    target, deleted, new = "results/run/attributions/m/new/shard0.npz", "results/run/models/m.pt", "results/run/r.pq"
    flow = _Workflow({target}, made={deleted})
    rules = [_Rule(flow, p) for p in (target, deleted, new)]
    assert also_in_targeted_runs(rules, [deleted, new])
    flow._prepare_dag()
    assert flow.prepared[-1] == {target, deleted}
    err = capsys.readouterr().err
    assert "the 1 missing file(s) noted above are added to them and remade: results/run/models/m.pt" in err
    assert "1 file(s) noted above that no job made yet (new inputs after a config change) are not added" in err
    assert new in err


@pytest.mark.workflow
def test_targeting_a_new_explainers_attribution_file_runs_its_job_only(smoke_copy, tmp_path):
    work = smoke_copy
    overlay = tmp_path / "more.yaml"
    overlay.write_text("explainers: {random: {}}\n")
    target = "results/smoke/attributions/cnn/random/shard0.npz"
    res = subprocess.run(
        [str(REPO / "fud"), "run", "-n", target, "--configfile", SMOKE, overlay, "--directory", work],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=3000,
    )
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert job_counts(out) == {"explain": 1, "total": 1}, out[-3000:]
    assert "no job made yet (new inputs after a config change) are not added" in out
