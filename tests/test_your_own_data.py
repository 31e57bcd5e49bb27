"""Your own classifier (`arch: import`, a factory by import path) and your own
images (`data.source: folder`), through config (docs/your_own.md): the parse-time
errors, the classifier's checkpoint round trip, the folder's eval npz, the asset
check decoding the images, and the workflow's DAG."""

import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from PIL import Image

from fudbench.assets.check import AssetError, check_assets
from fudbench.config.validate import ConfigError, load_yaml, validate_config
from fudbench.data.folder import FolderDataError, build_eval_set
from fudbench.data.imagenet import CorruptImageError, load_rgb, preprocess
from fudbench.core.io import load_npz
from fudbench.models.classifiers import load_classifier, pretrained_classifier, save_classifier

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_paper_profile import _run_script  # noqa: E402  (runs a job script as Snakemake would)
from fudbench.config.files import resolve_config

MODULE = "my_models"
FACTORIES = textwrap.dedent('''
    import torch
    from torch import nn

    NOT_CALLABLE = 3

    def build(n_classes=4, width=8):
        """A tiny CNN on normalised images."""
        return nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                             nn.Linear(width, n_classes))

    def not_a_module():
        return "logits"
''')
# file name, size (w, h), PIL mode, format, label: one grayscale, one in a subfolder
IMAGES = [
    ("b.png", (20, 24), "RGB", "PNG", 1),
    ("a.jpg", (24, 20), "RGB", "JPEG", 0),
    ("c.png", (22, 22), "L", "PNG", 3),
    ("sub/d.jpg", (30, 18), "RGB", "JPEG", 2),
    ("e.png", (18, 26), "RGB", "PNG", 0),
    ("f.jpg", (21, 21), "RGB", "JPEG", 1),
]


@pytest.fixture
def factories(tmp_path, monkeypatch):
    """my_models.py in a folder outside the package, put on sys.path."""
    (tmp_path / f"{MODULE}.py").write_text(FACTORIES)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, MODULE, raising=False)  # another test's copy
    return tmp_path / f"{MODULE}.py"


@pytest.fixture
def folder(tmp_path):
    """Six small images (PNG and JPEG, one grayscale, one in a subfolder) and labels.csv."""
    root = tmp_path / "images"
    rng = np.random.default_rng(0)
    for file, (w, h), mode, fmt, _ in IMAGES:
        (root / file).parent.mkdir(parents=True, exist_ok=True)
        img = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        (img.convert(mode) if mode != "RGB" else img).save(root / file, format=fmt)
    labels = tmp_path / "labels.csv"
    labels.write_text("file,label,note\n" + "".join(f"{f},{y},x\n" for f, _, _, _, y in IMAGES))
    return root


def _folder_cfg(folder, **changes):
    return {"root": str(folder), "labels": str(folder.parent / "labels.csv"), "resize": 20, "crop": 16, **changes}


def _config(repo, folder, tmp_path):
    """config/paper.yaml on the folder, with one factory classifier and a stand-in checkpoint path."""
    cfg = resolve_config([repo / "config/paper.yaml"])
    cfg["data"] = {"source": "folder", "folder": _folder_cfg(folder), "n_eval": 6, "shard_size": 3}
    cfg["models"]["classifiers"] = {
        "mine": {
            "arch": "import",
            "factory": f"{MODULE}:build",
            "kwargs": {"n_classes": 4},
            "weights": None,
            "mean": [0.5, 0.5, 0.5],
            "std": [0.25, 0.25, 0.25],
            "image_size": 16,
        }
    }
    cfg["models"]["score_model"]["guided_diffusion"]["checkpoint"] = str(tmp_path / "gd.pt")
    cfg["analysis"]["timing"]["model"] = "mine"
    for section in ("diagnostics", "timing"):  # they read shard 0, which holds 3 images here
        cfg["analysis"][section]["n_images"] = 3
    return cfg


@pytest.fixture
def config(repo, folder, factories, tmp_path):
    return _config(repo, folder, tmp_path)


def _check(cfg, repo):
    return validate_config(cfg, repo / "config/schema.yaml")


# --- config ---------------------------------------------------------------------------


def test_folder_data_with_a_factory_classifier_is_valid(config, repo, factories, tmp_path):
    _check(config, repo)
    config["models"]["classifiers"]["by_file"] = {
        **config["models"]["classifiers"]["mine"],
        "factory": f"{factories}:build",
    }
    torch.save({"w": torch.zeros(1)}, tmp_path / "w.pt")
    config["models"]["classifiers"]["by_file"]["weights"] = str(tmp_path / "w.pt")
    config["models"]["classifiers"]["resnet50"] = {"arch": "torchvision_resnet50", "weights": "IMAGENET1K_V1"}
    _check(config, repo)  # torchvision's classifiers take folder images too (ImageNet-1k labels)


def _classifier(**changes):
    return lambda c, tmp: c["models"]["classifiers"]["mine"].update(**changes)


def _rewrite_labels(text):
    return lambda c, tmp: (tmp / "labels.csv").write_text(text)


@pytest.mark.parametrize(
    "edit,match",
    [
        # the classifier
        (_classifier(factory="my_models.build"), r"mine\.factory': 'my_models\.build' is not an import path"),
        (
            _classifier(factory="no_such_module_x:build"),
            r"mine\.factory': 'no_such_module_x:build': module 'no_such_module_x' cannot be imported",
        ),
        (
            _classifier(factory="my_models:missing"),
            r"mine\.factory': 'my_models:missing': my_models has no attribute "
            r"'missing'",
        ),
        (
            _classifier(factory="my_models:NOT_CALLABLE"),
            r"mine\.factory': 'my_models:NOT_CALLABLE' is not callable \(it is 3\)",
        ),
        (_classifier(mean=[0.5, 0.5]), r"mine\.mean': \[0\.5, 0\.5\] is too short"),
        (_classifier(std=[0.2, 0.0, 0.2]), r"mine\.std\.1': 0\.0 is less than or equal to the minimum of 0"),
        (_classifier(weights="nope/w.pt"), r"mine\.weights': .*nope/w\.pt does not exist; give a state_dict file"),
        (_classifier(image_size=224), r"mine\.image_size': 224, but the images are 16x16 \(data\.folder\.crop\)"),
        (_classifier(width=8), r"mine\.width': not used by arch: import"),
        (lambda c, tmp: c["models"]["classifiers"]["mine"].pop("std"), r"mine'.*'std' is a required property"),
        # the images
        (
            lambda c, tmp: c["data"]["folder"].update(root=str(tmp / "nope")),
            r"data\.folder\.root': .*nope is not a "
            r"directory",
        ),
        (
            lambda c, tmp: c["data"]["folder"].update(labels=str(tmp / "no.csv")),
            r"data\.folder\.labels': .*no\.csv "
            r"does not exist",
        ),
        (_rewrite_labels("name,class\na.jpg,0\n"), r"expected a header with the columns file,label"),
        (_rewrite_labels("file,label\na.jpg,0\nmissing.png,1\n"), r"line 3: missing\.png is not a file under"),
        (_rewrite_labels("file,label\na.jpg,0\nb.png,cat\n"), r"line 3: label 'cat' of b\.png is not an integer"),
        (_rewrite_labels("file,label\na.jpg,0\nb.png,1.5\n"), r"label '1\.5' of b\.png is not an integer"),
        (
            _rewrite_labels("file,label\na.jpg,0\nb.png,1\n./a.jpg,2\n"),
            r"line 4: a\.jpg is listed twice \(first on "
            r"line 2\)",
        ),
        # issue 26 case 9: rows naming files outside data.folder.root (they exist, and used to be read)
        (
            lambda c, tmp: (tmp / "labels.csv").write_text(f"file,label\na.jpg,0\n{tmp / 'labels.csv'},1\n"),
            r"line 3: /\S+/labels\.csv is an absolute path; list each image by its path relative to data\.folder\.root",
        ),
        (
            _rewrite_labels("file,label\na.jpg,0\nsub/../../labels.csv,1\n"),
            r"line 3: \.\./labels\.csv leads out of data\.folder\.root",
        ),
        (lambda c, tmp: c["data"].update(n_eval=7), r"data\.n_eval': 7 exceeds the 6 images listed"),
        (lambda c, tmp: c["data"]["folder"].update(resize=12), r"data\.folder\.resize': 12 must be >= .*crop = 16"),
        (lambda c, tmp: c["data"].pop("folder"), r"'data'.*'folder' is a required property"),
        # what folder data can be combined with
        (
            lambda c, tmp: c["explainers"].update(oracle={}),
            r"explainers\.oracle.*ground-truth masks.*`oracle: null`.*`explainers: \{_replace: true, \.\.\.\}`",
        ),
        (
            lambda c, tmp: c["explainers"].update(o20={"method": "degrade", "base": "oracle", "fraction": 0.2}),
            r"explainers\.o20.*ground-truth masks",
        ),
        (
            lambda c, tmp: c["models"].update(
                score_model=load_yaml(Path(__file__).parents[1] / "config/config.yaml")["models"]["score_model"]
            ),
            r"score_model\.source': 'shipped'.*use guided_diffusion.*folder images is not supported",
        ),
        (
            lambda c, tmp: c["models"]["classifiers"].update(
                cnn={
                    "arch": "small_cnn",
                    "width": 4,
                    "train": {"epochs": 1, "batch_size": 4, "lr": 0.1, "weight_decay": 0.0},
                }
            ),
            r"classifiers\.cnn\.arch.*needs data\.source: synthetic; use a torchvision_\* arch or arch: import.*"
            r"`cnn: null`.*`classifiers: \{_replace: true",
        ),
        (
            lambda c, tmp: c["evaluators"].update(ffid={}),
            r"evaluators\.ffid': F-Fidelity fine-tunes its surrogate on the synthetic training split, which data\.source: "
            r"folder does not have; remove the entry \(`ffid: null`.*`evaluators: \{_replace: true",
        ),
        (
            lambda c, tmp: c["evaluators"].update(srg={"imputers": ["mean"]}),
            r"evaluators\.srg': a train_set or dataset-mean fill draws from the synthetic training split",
        ),
    ],
)
def test_config_errors_name_the_key(config, repo, tmp_path, edit, match):
    edit(config, tmp_path)
    with pytest.raises(ConfigError, match=match):
        _check(config, repo)


def test_import_keys_on_another_arch_are_refused(repo):
    cfg = load_yaml(repo / "config/config.yaml")
    cfg["models"]["classifiers"]["cnn"]["mean"] = [0.5, 0.5, 0.5]
    with pytest.raises(ConfigError, match=r"classifiers\.cnn\.mean': only used by arch: import, not small_cnn"):
        _check(cfg, repo)


def test_bad_rows_are_listed_together(folder, factories, config, repo):
    (folder.parent / "labels.csv").write_text("file,label\na.jpg,-1\nb.png,x\nzz.png,0\nb.png,1\n")
    with pytest.raises(ConfigError) as err:
        _check(config, repo)
    msg = str(err.value)
    assert "4 bad row(s)" in msg and "label -1 of a.jpg is negative" in msg and "line 3: label 'x'" in msg
    assert "line 4: zz.png is not a file" in msg and "line 5: b.png is listed twice (first on line 3)" in msg


# --- the classifier ----------------------------------------------------------------------


def test_factory_classifier_round_trip(factories, tmp_path):
    """Prepared as prepare_classifier does (weights loaded strictly, normalisation
    inside), saved, and rebuilt by load_classifier: the same logits."""
    import my_models

    torch.manual_seed(3)
    torch.save(my_models.build(n_classes=5).state_dict(), tmp_path / "w.pt")
    cfg = {
        "arch": "import",
        "factory": f"{MODULE}:build",
        "kwargs": {"n_classes": 5},
        "weights": str(tmp_path / "w.pt"),
        "mean": [0.4, 0.5, 0.6],
        "std": [0.2, 0.25, 0.3],
    }
    model, digest = pretrained_classifier(cfg, "mine", image_size=16)
    assert len(digest) == 64 and not any(p.requires_grad for p in model.parameters())
    x = torch.rand(4, 3, 16, 16)
    net = my_models.build(n_classes=5)
    net.load_state_dict(torch.load(tmp_path / "w.pt"))
    mean, std = torch.tensor(cfg["mean"]).view(1, 3, 1, 1), torch.tensor(cfg["std"]).view(1, 3, 1, 1)
    with torch.no_grad():
        torch.testing.assert_close(model(x), net((x - mean) / std))  # the factory's net sees normalised images
        save_classifier(tmp_path / "mine.pt", model, cfg, 5, 16, {})
        torch.testing.assert_close(load_classifier(tmp_path / "mine.pt")(x), model(x), rtol=0, atol=0)


def test_factory_classifier_errors(factories, tmp_path):
    cfg = {
        "arch": "import",
        "factory": f"{MODULE}:build",
        "kwargs": {"n_classes": 3},
        "mean": [0.5] * 3,
        "std": [0.5] * 3,
    }
    torch.save({"unexpected": torch.zeros(1)}, tmp_path / "w.pt")
    with pytest.raises(
        RuntimeError,
        match=r"w\.pt \(models\.classifiers\.mine\.weights\) does not fit the network "
        r"my_models:build builds",
    ):
        pretrained_classifier({**cfg, "weights": str(tmp_path / "w.pt")}, "mine")
    with pytest.raises(TypeError, match=r"my_models:not_a_module returned a str, not a torch\.nn\.Module"):
        pretrained_classifier({**cfg, "factory": f"{MODULE}:not_a_module", "kwargs": {}}, "mine")


# --- the images ------------------------------------------------------------------------


def test_folder_eval_set_and_classifier_jobs(repo, folder, factories, tmp_path):
    """make_dataset (prepare_folder.py) then prepare_classifier on its images, as the workflow runs them."""
    out = {
        k: str(tmp_path / "res" / f"{k}.{ext}")
        for k, ext in [
            ("eval", "npz"),
            ("classes", "json"),
            ("manifest", "csv"),
            ("examples", "npz"),
            ("summary", "json"),
        ]
    }
    _run_script(repo, "prepare_folder.py", tmp_path, params={"folder": _folder_cfg(folder), "n_eval": 5}, output=out)
    ev = load_npz(out["eval"])
    files = sorted(f for f, *_ in IMAGES)[:5]  # the first n_eval in file order
    label_of = {f: y for f, _, _, _, y in IMAGES}
    assert ev["images"].shape == (5, 3, 16, 16) and ev["images"].dtype == np.uint8
    assert ev["labels"].tolist() == [label_of[f] for f in files] and ev["labels"].dtype == np.int64
    assert ev["masks"].shape == (5, 16, 16) and not ev["masks"].any() and not ev["has_masks"]
    manifest = pd.read_csv(out["manifest"])
    assert manifest["id"].tolist() == list(range(5)) and manifest["file"].tolist() == files
    np.testing.assert_array_equal(ev["images"][2], preprocess(load_rgb(folder / files[2])[0], 20, 16))
    gray = files.index("c.png")
    assert manifest["mode"][gray] == "L" and np.array_equal(ev["images"][gray][0], ev["images"][gray][2])
    summary = json.loads(Path(out["summary"]).read_text())
    assert summary["converted_to_rgb"] == 1 and summary["modes"] == {"RGB": 4, "L": 1}
    assert (summary["n_eval"], summary["crop"]) == (5, 16)
    assert json.loads(Path(out["classes"]).read_text()) == ["0", "1", "2", "3"]

    models = {"model": str(tmp_path / "res/mine.pt"), "metrics": str(tmp_path / "res/mine_metrics.json")}
    clf = {
        "arch": "import",
        "factory": f"{factories}:build",
        "kwargs": {"n_classes": 4},
        "weights": None,
        "mean": [0.5] * 3,
        "std": [0.25] * 3,
    }
    job = {"seed": 0, "device": "cpu"}
    gates = {"min_test_accuracy": 0.0, "strict": True, "n_samples": 2, "sample_steps": 2}
    _run_script(
        repo,
        "prepare_classifier.py",
        tmp_path,
        wildcards={"model": "mine"},
        input={"images": out["eval"]},
        output=models,
        params={"classifier": clf, "gates": gates, "job": job},
    )
    metrics = json.loads(Path(models["metrics"]).read_text())
    assert metrics["factory"] == clf["factory"] and metrics["sha256"] is None and 0 <= metrics["test_accuracy"] <= 1
    assert load_classifier(models["model"])(torch.rand(2, 3, 16, 16)).shape == (2, 4)
    clf["kwargs"] = {"n_classes": 3}  # label 3 is not one of its classes
    with pytest.raises(RuntimeError, match=r"labels go up to 3 but classifier 'mine' returns 3 logits"):
        _run_script(
            repo,
            "prepare_classifier.py",
            tmp_path,
            wildcards={"model": "mine"},
            input={"images": out["eval"]},
            output=models,
            params={"classifier": clf, "gates": gates, "job": job},
        )


def test_corrupt_image_is_named_before_any_job(config, folder, repo, tmp_path):
    """The asset check (the Snakefile's onstart, before any job) decodes the evaluated images."""
    (tmp_path / "gd.pt").write_bytes(b"stand-in checkpoint")
    assert len(check_assets(config, repo)) == 1  # only the note: record the checkpoint's sha256
    data = (folder / "b.png").read_bytes()
    (folder / "b.png").write_bytes(data[: len(data) // 2])  # a truncated copy
    _check(config, repo)  # the config check reads the labels file, not the images
    with pytest.raises(
        AssetError,
        match=r"1 asset problem.*\n- your images: .*b\.png: cannot decode the image"
        r".*remove its row from .*labels\.csv",
    ):
        check_assets(config, repo)
    with pytest.raises(CorruptImageError, match=r"b\.png: cannot decode"):
        build_eval_set(_folder_cfg(folder), 6)


@pytest.mark.parametrize("score_model", ["absent", "null", "the default's (shipped, synthetic)"])
def test_folder_data_without_fud_needs_no_score_model(config, repo, tmp_path, score_model):
    """Issue 40: a score model is required only when an evaluator of the run reads
    it; without one, whatever is left under models.score_model is not checked and
    the asset check looks for no diffusion checkpoint (the guided-diffusion path
    here does not exist)."""
    from fudbench.assets.check import required_assets
    from fudbench.config.validate import score_model_users

    assert score_model_users(config) == ["fud"]
    del config["evaluators"]["fud"]
    if score_model == "absent":
        del config["models"]["score_model"]
    elif score_model == "null":
        config["models"]["score_model"] = None
    else:
        config["models"]["score_model"] = load_yaml(repo / "config/config.yaml")["models"]["score_model"]
    _check(config, repo)
    assert not [a for a in required_assets(config, repo) if "diffusion" in a.name]
    check_assets(config, repo)  # the folder's images only: no AssetError for the absent checkpoint


def test_replaced_explainers_error_names_the_key_to_set(config, repo):
    """An overlay that replaces the explainers leaves the default's pooled and
    qualitative lists naming explainers it no longer has: the error says what to set."""
    config["explainers"] = {"mine": {"method": "sm"}, "random": {}}
    config["analysis"]["pooled_explainers"] = ["sm", "ig"]
    config["plots"]["qualitative_explainers"] = ["sm"]
    config["analysis"]["diagnostics"]["explainer"] = "mine"
    with pytest.raises(
        ConfigError,
        match=r"(?s)pooled_explainers': \['sm', 'ig'\] not in explainers \(mine, random\); "
        r"set analysis\.pooled_explainers: null \(= every explainer of the run\).*"
        r"qualitative_explainers': \['sm'\] not in explainers.*set plots\.",
    ):
        _check(config, repo)
    config["analysis"]["pooled_explainers"] = None
    config["plots"]["qualitative_explainers"] = ["mine"]
    _check(config, repo)


def test_a_score_model_is_required_where_an_evaluator_reads_it(config, repo):
    """FUD (or a diffusion fill) without models.score_model: the error names the
    key, the evaluators that read it and both fixes."""
    del config["models"]["score_model"]
    config["evaluators"]["road_diff"] = {"method": "road", "imputer": "diffusion_plain"}
    with pytest.raises(
        ConfigError,
        match=r"'models\.score_model': required, because the evaluator\(s\) "
        r"\['fud', 'road_diff'\] read .*guided_diffusion.*`fud: null`",
    ):
        _check(config, repo)


def test_n_eval_beyond_the_listed_images(folder):
    with pytest.raises(FolderDataError, match=r"'data\.n_eval': 9 exceeds the 6 images listed"):
        build_eval_set(_folder_cfg(folder), 9)


# --- the workflow ------------------------------------------------------------------------


@pytest.mark.workflow
def test_folder_and_factory_dag(repo, folder, factories, tmp_path, monkeypatch):
    """One dry-run: make_dataset (folder) -> prepare_classifier (factory) -> explain -> evaluate, with a
    stand-in guided-diffusion checkpoint path (a dry-run builds the DAG without it)."""
    from workflow_support import job_counts, snakemake

    cfg = _config(repo, folder, tmp_path)
    (tmp_path / "folder.yaml").write_text(yaml.safe_dump(cfg))
    monkeypatch.setenv("PYTHONPATH", str(factories.parent))  # the factory's module, for Snakemake's parse
    res = snakemake(
        repo,
        "-n",
        "--quiet",
        "rules",
        "--configfile",
        str(tmp_path / "folder.yaml"),
        "--directory",
        str(tmp_path / "work"),
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    counts = job_counts(res.stdout + res.stderr)
    n_explainers, n_evaluators, shards = len(cfg["explainers"]), len(cfg["evaluators"]), 2
    assert counts["make_dataset"] == 1 and counts["prepare_classifier"] == 1 and counts["convert_score_model"] == 1
    assert counts["explain"] == n_explainers * shards and counts["evaluate"] == n_evaluators * shards
    assert "train_classifier" not in counts and "train_score_model" not in counts


# --- object masks of a folder (data.folder.masks) ----------------------------------------------


def _draw_masks(folder, tmp_path, skip=()):
    """A box mask per image (the image's size, non-zero = object) at masks/<file>.png."""
    masks = tmp_path / "masks"
    for file, (w, h), *_ in IMAGES:
        if file in skip:
            continue
        out = (masks / file).with_suffix(".png")
        out.parent.mkdir(parents=True, exist_ok=True)
        m = np.zeros((h, w), np.uint8)
        m[: h // 2, : w // 2] = 255  # the top-left quarter
        Image.fromarray(m).save(out)
    return masks


def test_folder_masks_are_read_like_the_images_and_enable_the_oracle(config, folder, repo, tmp_path):
    masks = _draw_masks(folder, tmp_path)
    cfg = _folder_cfg(folder, masks=str(masks))
    out = build_eval_set(cfg, 5)
    assert out["masks"].shape == (5, 16, 16) and set(np.unique(out["masks"])) == {0, 1}
    # the quarter survives resize (20 px shorter side) and the 16 px centre crop at the top left
    assert out["masks"][:, 0, 0].all() and not out["masks"][:, -1, -1].any()
    from fudbench.data.imagenet import eval_arrays

    assert bool(eval_arrays(out)["has_masks"]) and not bool(
        eval_arrays(build_eval_set(_folder_cfg(folder), 5))["has_masks"]
    )
    config["data"]["folder"]["masks"] = str(masks)
    config["explainers"]["oracle"] = {}
    config["explainers"]["o20"] = {"method": "degrade", "base": "oracle", "fraction": 0.2}
    _check(config, repo)  # the ground-truth explainers run on a folder with masks


@pytest.mark.parametrize(
    "problem,match",
    [
        (
            "missing",
            r"'data\.folder\.masks': no mask for 1 evaluated image\(s\): \S+/masks/sub/d\.png; each image "
            r"<file> needs <masks>/<file with \.png>",
        ),
        ("no_folder", r"'data\.folder\.masks': \S+/nope is not a directory"),
    ],
)
def test_folder_mask_errors_name_the_key(config, folder, repo, tmp_path, problem, match):
    masks = _draw_masks(folder, tmp_path, skip=("sub/d.jpg",) if problem == "missing" else ())
    config["data"]["folder"]["masks"] = str(masks if problem == "missing" else tmp_path / "nope")
    with pytest.raises(ConfigError, match=match):
        _check(config, repo)


def test_a_mask_of_another_size_is_named_before_any_job(config, folder, repo, tmp_path):
    masks = _draw_masks(folder, tmp_path)
    Image.fromarray(np.zeros((5, 5), np.uint8)).save(masks / "b.png")
    config["data"]["folder"]["masks"] = str(masks)
    del config["evaluators"]["fud"]
    with pytest.raises(AssetError, match=r"masks/b\.png: the mask is 5x5, its image 20x24; draw it on the image"):
        check_assets(config, repo)


# --- the accuracy gate, per classifier ---------------------------------------------------------


def test_the_accuracy_gate_is_set_per_classifier_and_says_how(config, repo):
    from fudbench.core.fingerprint import classifier_training_inputs
    from fudbench.models.gate import accuracy_gate, gate_line

    gates = {"min_test_accuracy": 0.95}
    assert accuracy_gate("cnn", {"arch": "small_cnn"}, gates) == (0.95, "models.gates.min_test_accuracy")
    assert accuracy_gate("mine", {"min_accuracy": 0.6}, gates) == (0.6, "models.classifiers.mine.min_accuracy")
    assert "BELOW" not in gate_line("mine", "top-1 accuracy", 0.8, 0.6, "models.classifiers.mine.min_accuracy")
    below = gate_line("mine", "top-1 accuracy", 0.5, 0.95, "models.gates.min_test_accuracy")
    assert "BELOW GATE" in below and "models.classifiers.mine.min_accuracy" in below
    config["models"]["classifiers"]["mine"]["min_accuracy"] = 0.6
    _check(config, repo)  # an import entry takes it
    config["models"]["classifiers"]["mine"]["min_accuracy"] = 1.5
    with pytest.raises(ConfigError, match=r"mine\.min_accuracy': 1\.5 is greater than the maximum of 1"):
        _check(config, repo)
    # a gate is no training input: setting one keeps a shipped classifier's fingerprint
    default = resolve_config([repo / "config/config.yaml"])
    before = classifier_training_inputs(default, "cnn")
    default["models"]["classifiers"]["cnn"]["min_accuracy"] = 0.5
    assert classifier_training_inputs(default, "cnn") == before
    _check(default, repo)


# --- the template: config/your_own.yaml ---------------------------------------------------------


def test_the_template_replaces_the_defaults_and_needs_no_score_model(repo):
    """config/your_own.yaml over the default: only its own classifier, explainers and
    evaluators (`_replace: true`), nothing that needs masks or a training split, no
    score model; the asset check finds its stand-in photos."""
    from fudbench.config.validate import load_config, score_model_users

    cfg = load_config(repo / "config/your_own.yaml")
    assert list(cfg["models"]["classifiers"]) == ["mine"] and "score_model" not in cfg["models"]
    assert set(cfg["explainers"]) == {"mine", "sm", "ig", "random"}
    assert set(cfg["evaluators"]) == {"insdel", "road", "irof", "sensn"} and score_model_users(cfg) == []
    assert check_assets(cfg, repo) == []


@pytest.mark.workflow
def test_the_template_dag_has_no_score_model_rule(repo, tmp_path):
    from workflow_support import job_counts, snakemake

    res = snakemake(
        repo,
        "-n",
        "--quiet",
        "rules",
        "--configfile",
        str(repo / "config/your_own.yaml"),
        "--directory",
        str(tmp_path / "work"),
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    counts = job_counts(res.stdout + res.stderr)
    assert counts["prepare_classifier"] == 1 and counts["explain"] == 4 and counts["evaluate"] == 4
    assert not {r for r in counts if "score_model" in r or "fud" in r}, counts
