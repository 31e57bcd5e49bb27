"""The cost before the run (fudbench.workflow.cost) and the progress line's ETA (fudbench.workflow.progress).

The estimate's constants are calibrated on measured figures (docs/performance.md, the f609455 default
run); the first test recomputes those figures from the constants, so a constant typed wrong, or a count
that drifts from what the evaluators do, fails here."""

import copy
import io
import math
from pathlib import Path

import pytest

from fudbench.workflow import cost
from fudbench.config.files import resolve_config
from fudbench.workflow.progress import Clock, eta, patch_progress, with_eta

REPO = Path(__file__).resolve().parents[1]


def _default(explainers: int = 13):
    config = resolve_config([])
    config["explainers"] = {f"e{i}": {} for i in range(explainers)}
    return config


def test_the_constants_reproduce_the_measured_default_run():
    """docs/performance.md, f609455 (13 explainers x 8 images, CNN + ViT, AVX512-BF16): FUD's two evaluate
    jobs 61 + 63 s; the nine other entries besides ffid ("the other 8 evaluators (16 jobs)") 89 s; F-Fidelity
    25 + 12 s. Each recomputed within 15% (ffid within 30%: its CNN / ViT ratio differs from the others')."""
    config = _default()
    assert config["data"]["n_eval"] == 8 and len(config["models"]["classifiers"]) == 2
    est = cost.estimate(config, cores=2, bf16=True)
    rows = {r.entry: r.seconds for r in est.rows}
    others = sum(s for e, s in rows.items() if e not in ("fud", "ffid", "rma"))  # rma came after f609455
    assert others == pytest.approx(89, rel=0.15)
    assert rows["fud"] == pytest.approx(61 + 63, rel=0.15)
    assert rows["ffid"] == pytest.approx(25 + 12, rel=0.30)


def test_cost_grows_with_the_pixels_and_a_dominant_evaluator_is_named():
    """The template at 224 px with a real ImageNet model (the photo profile's classifier block) and
    Sensitivity-N at its defaults: Sensitivity-N dominates, and the warning says so, with the factor."""
    config = resolve_config([REPO / "config/your_own.yaml"])
    photos = resolve_config([REPO / "config/photos.yaml"])
    small = cost.estimate(config, bf16=True)
    big = copy.deepcopy(config)
    big["data"]["folder"].update(resize=256, crop=224)
    big["models"]["classifiers"] = photos["models"]["classifiers"]
    big["evaluators"]["sensn"] = {}  # n_subsets 100, batch 1024: what was left in
    est = cost.estimate(big, bf16=True)
    share = {r.entry: r.share for r in est.rows}
    assert max(share, key=share.get) == "sensn" and share["sensn"] > cost.DOMINANT_SHARE
    assert any(
        w.startswith("sensn is") and "224 x 224 px one image costs 49x a 32 px one" in w and "sensn: null" in w
        for w in est.warnings
    ), est.warnings
    assert est.total > 20 * small.total
    text = cost.format_estimate(est)
    assert "ESTIMATE" in text and cost.CALIBRATED_ON in text and "sensn" in text


def test_batches_of_large_images_cost_more_per_image():
    assert cost.batch_penalty(1024, 32) == 1.0  # 12.6 MB of input: no penalty
    assert cost.batch_penalty(32, 224) == 1.0
    # 154 MB of input: 4.6 x 32 MiB -> 1 + 0.35 log2(4.6); the measured ratio was 0.269 / 0.126 = 2.1
    assert cost.batch_penalty(256, 224) == pytest.approx(1 + 0.35 * math.log2(256 * 3 * 224 * 224 * 4 / 2**25))
    assert 1.5 < cost.batch_penalty(256, 224) < 2.2
    assert cost.batch_penalty(1024, 224) > cost.batch_penalty(256, 224)


def test_passes_follow_the_settings():
    ev = {"ratios": [0.1, 0.5, 0.9]}
    shape = (3, 32, 32)
    assert cost.entry_passes("insdel", {"n_steps": 10}, ev, shape).forwards == 2 * 11 + 3
    assert cost.entry_passes("sensn", {"n_subsets": 7}, ev, shape).shared == 3 * 7 + 1
    assert cost.entry_passes("fud", {"steps": 25, "symmetric": True}, ev, shape).unet_steps == 2 * 3 * 25
    assert cost.entry_passes("rma", {}, ev, shape).forwards == 1  # the spec's own cost
    assert cost.entry_passes("sensn", {}, ev, shape).batch == 1024  # the entry's batch size
    pf = cost.entry_passes(
        "qt", {"method": "quantus", "metric": "PixelFlipping", "settings": {"features_in_step": 16}}, ev, shape
    )
    assert pf.forwards == 32 * 32 // 16 + 1


def test_a_metric_without_a_cost_model_is_listed_not_summed(tmp_path):
    (tmp_path / "nocost.py").write_text(
        "from dataclasses import replace\nfrom fudbench.evaluators.faithfulness.idsds import SPEC as I\n"
        "SPEC = replace(I, name='nocost')\n"
    )
    config = _default()
    config["evaluators"] = {"insdel": {}, "mine": {"method": f"{tmp_path / 'nocost.py'}:SPEC"}}
    est = cost.estimate(config, bf16=True)
    mine = next(r for r in est.rows if r.entry == "mine")
    assert mine.seconds is None and "no cost model for ['mine']" in " ".join(est.warnings)
    assert "no cost model" in cost.format_estimate(est)


def test_print_estimate_before_a_run_only(monkeypatch):
    out = io.StringIO()
    photos = str(REPO / "config/photos.yaml")

    def config():
        return resolve_config([photos])

    assert cost.print_estimate(["--configfile", photos, "-n"], config, out)
    text = out.getvalue()
    assert "cost estimate of the evaluators" in text and "5 image(s) of 224 x 224 px" in text and "insdel" in text
    for flags in (["--lint"], ["--report", "r.html"], ["--unlock"], ["--dag"]):
        assert not cost.print_estimate(["--configfile", photos, *flags], config, io.StringIO())
    monkeypatch.setenv(cost.QUIET_ENV, "1")
    assert not cost.print_estimate(["--configfile", photos], config, io.StringIO())
    monkeypatch.delenv(cost.QUIET_ENV)
    broken = io.StringIO()  # advice only: a bad config is the Snakefile's to report
    assert not cost.print_estimate(
        ["--configfile", "/nonexistent/x.yaml"], lambda: resolve_config(["/nonexistent/x.yaml"]), broken
    )
    assert broken.getvalue().startswith("fud: no cost estimate")


def test_cores_from_the_command_line():
    assert (
        cost.cores_of(["--cores", "3"]) == 3 and cost.cores_of(["-c", "2"]) == 2 and cost.cores_of(["--cores=4"]) == 4
    )


# --- the progress line ---------------------------------------------------------------------------------------------


def test_the_progress_line_gets_an_eta_at_the_pace_so_far():
    line = "12 of 48 steps (25%) done"
    out = with_eta(line, elapsed=120.0, now=0.0)
    assert out.startswith(line) and "2 min 00 s elapsed" in out and "~6 min 00 s left at the pace so far" in out
    assert with_eta("Finished job 3.", 10.0) == "Finished job 3."
    assert eta(0, 10, 5.0) == "" and eta(10, 10, 65.0) == "; finished in 1 min 05 s"


def test_patch_progress_appends_the_eta_to_snakemakes_own_line(monkeypatch):
    from snakemake.logging import DefaultFormatter

    monkeypatch.setattr(DefaultFormatter, "format_progress", DefaultFormatter.format_progress)
    monkeypatch.setattr(DefaultFormatter, "format_job_info", DefaultFormatter.format_job_info)
    ticks = iter([0.0, 10.0, 40.0])  # created, first job started, now
    clock = Clock(lambda: next(ticks))
    assert patch_progress(clock)
    clock.job_started()
    fmt = DefaultFormatter.__new__(DefaultFormatter)
    line = DefaultFormatter.format_progress(fmt, {"done": 3, "total": 9})
    assert line.startswith("3 of 9 steps (33%) done; 30 s elapsed, ~1 min 00 s left")


@pytest.mark.workflow
def test_fud_dry_run_prints_the_estimate(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "FUD_CALLER_CWD": str(REPO)}
    env.pop(cost.QUIET_ENV, None)
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "fudbench.workflow.command",
            "snakemake",
            "--configfile",
            str(REPO / "config/photos.yaml"),
            "-n",
            "--directory",
            str(tmp_path),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "fud: cost estimate of the evaluators" in res.stderr and "qt_faithcorr" in res.stderr
