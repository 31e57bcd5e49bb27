"""Shared fixtures: tiny models built in the test, random or briefly trained."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

# Tiny test models gain nothing from threads, and 2 threads on a busy 2-core
# machine oversubscribe it badly.
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture(scope="session")
def tiny_unet():
    from fudbench.models.score import build_unet

    torch.manual_seed(0)
    cfg = {
        "block_out_channels": [8, 16],
        "attention": [False, True],
        "layers_per_block": 1,
        "num_train_timesteps": 100,
        "beta_schedule": "linear",
    }
    unet = build_unet(cfg, 8).eval().requires_grad_(False)
    from fudbench.models.score import schedule_config

    return unet, schedule_config(cfg)


class BrightnessClassifier(torch.nn.Module):
    """Two classes scored by mean brightness: a model whose gradients are known."""

    def forward(self, x):
        s = 8 * (x.mean(dim=(1, 2, 3)) - 0.5)
        return torch.stack([s, -s], dim=1)


@pytest.fixture
def brightness_classifier():
    return BrightnessClassifier().eval()


@pytest.fixture(scope="module")
def cnn_batch(tiny_cnn):
    """(tiny_cnn, 3 random 8x8 images, the classes it predicts for them)."""
    torch.manual_seed(1)
    x = torch.rand(3, 3, 8, 8)
    with torch.no_grad():
        return tiny_cnn, x, tiny_cnn(x).argmax(1)


@pytest.fixture(scope="session")
def tiny_cnn():
    from fudbench.models.classifiers import build_classifier

    torch.manual_seed(0)
    return build_classifier({"arch": "small_cnn", "width": 4}, 4, 8, [0.5] * 3, [0.25] * 3).eval()


@pytest.fixture(scope="session")
def smoke_run(repo, tmp_path_factory):
    """The smoke config run once to completion in a temporary directory, shared
    by every workflow-level test (which must not modify it: copy it first).
    Returns (results directory, CompletedProcess)."""
    from workflow_support import snakemake

    work = tmp_path_factory.mktemp("smoke")
    res = snakemake(repo, "--configfile", str(repo / "config/smoke.yaml"), "--directory", str(work), "--cores", "2")
    assert res.returncode == 0, (res.stdout + res.stderr)[-6000:]
    return work / "results" / "smoke", res


@pytest.fixture
def smoke_copy(smoke_run, tmp_path):
    """A copy of the smoke run's working directory (results/smoke and Snakemake's metadata), for a
    test that changes it."""
    import subprocess

    results, _ = smoke_run
    work = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(results.parent.parent), str(work)], check=True)
    return work
