"""bench/gpu_suite.sh, the GPU acceptance suite: its plan at full size (what a GPU node
runs, within 8 minutes of limits), its time limits (a slow step is stopped with its
children and reported), and the whole suite at toy size on this CPU (marked workflow:
one Snakemake run of the paper profile on tiny stand-ins)."""

import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import gpu_suite  # noqa: E402


def _plan(**kw):
    args = SimpleNamespace(
        **{"tiny": False, "device": "cuda", "time_scale": 1.0, "cores": 16, "tiny_compile": False, **kw}
    )
    return gpu_suite.plan(args, Path("/out"))


def test_full_size_plan_measures_what_the_issue_asks_within_8_minutes():
    plan = _plan()
    assert list(plan) == list(gpu_suite.STEPS)
    assert sum(limit for _, limit in plan.values()) < 8 * 60
    eager, compiled = (list(map(str, plan[k][0])) for k in ("throughput_eager", "throughput_compiled"))
    for cmd, flag in ((eager, "false"), (compiled, "true")):
        assert "--tiny" not in cmd and cmd[cmd.index("--compile") + 1] == flag
        assert cmd[cmd.index("--plan") + 1 : cmd.index("--plan") + 5] == ["10:32", "100:32", "10:1", "10:auto"]
        assert cmd[cmd.index("--dtype") + 1] == "auto" and cmd[cmd.index("--device") + 1] == "cuda"
    explain = list(map(str, plan["explainer_cost"][0]))
    assert set(gpu_suite.PAPER_EXPLAINERS) <= set(explain) and len(gpu_suite.PAPER_EXPLAINERS) == 11
    precision = list(map(str, plan["fud_precision"][0]))
    assert "bench/fud_precision.py" in precision
    assert precision[precision.index("--models") + 1 :][:2] == ["resnet50", "vit"]
    assert "--tiny" not in map(str, plan["paper_standin"][0])
    assert _plan(time_scale=2.0)["paper_standin"][1] == 2 * plan["paper_standin"][1]


def test_tiny_plan_skips_compiling_unless_asked():
    assert _plan(tiny=True, device="cpu")["throughput_compiled"][0].startswith("skipped")
    assert "--tiny" in _plan(tiny=True, device="cpu", tiny_compile=True)["throughput_compiled"][0]


def test_a_step_over_its_limit_is_stopped_with_its_children(tmp_path):
    marker = tmp_path / "child.pid"
    t0 = time.perf_counter()
    row = gpu_suite.run_step("slow", ["bash", "-c", f"sleep 60 & echo $! > {marker}; wait"], 1.5, tmp_path / "slow.log")
    assert row["status"] == "timed out" and time.perf_counter() - t0 < 20
    child = int(marker.read_text())
    time.sleep(0.5)
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]
    assert gpu_suite.run_step("fails", ["bash", "-c", "exit 3"], 10, tmp_path / "f.log")["status"] == "failed (exit 3)"


@pytest.mark.workflow
def test_the_suite_runs_at_toy_size_on_a_cpu(tmp_path):
    """Every step at toy size, the paper profile's DAG through ./fud run on tiny stand-ins included;
    the summary names the machine and says how each step ended. Generous limits (--time-scale): a
    shared CI machine is slow, and the limits themselves are tested above."""
    out = tmp_path / "suite"
    res = subprocess.run(
        [
            "bash",
            str(REPO / "bench" / "gpu_suite.sh"),
            "--tiny",
            "--out",
            str(out),
            "--time-scale",
            os.environ.get("FUD_SUITE_TIME_SCALE", "10"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=3000,
    )
    logs = "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(out.glob("*.log")))
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:] + logs
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary["step"]) == list(gpu_suite.STEPS)
    status = dict(zip(summary["step"], summary["status"]))
    assert status.pop("throughput_compiled").startswith("skipped")
    assert set(status.values()) == {"ok"}
    import torch

    assert (summary["torch"] == torch.__version__).all()
    md = (out / "summary.md").read_text()
    assert "device: CPU" in md and f"torch {torch.__version__}" in md and "Timed out: none." in md
    eager = pd.read_csv(out / "throughput_eager.csv")
    assert sorted(set(eager["steps"])) == [2, 4] and set(eager["batch_request"].astype(str)) == {"1", "2", "auto"}
    assert (eager["seconds_per_sample"] > 0).all() and not eager["compile"].any()
    precision = pd.read_csv(out / "fud_precision.csv")
    assert set(precision["explainer"]) == {"sm", "ig"} and precision["d_fud_maxabs"].notna().all()
    assert set(pd.read_csv(out / "explainer_cost.csv")["method"]) == {"sm", "ig"}
    results = out / "paper_standin" / "run" / "results" / "paper_standin"
    table10 = pd.read_csv(results / "tables" / "table10_timing.csv")
    assert table10["device"].str.startswith("CPU").all() and set(table10["steps"]) == {2}
    assert "Table 10 names: CPU" in md
    assert len(list((results / "tables").glob("*.csv"))) >= 5 and list((results / "figures").rglob("*.png"))
