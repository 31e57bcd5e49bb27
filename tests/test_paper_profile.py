"""The paper profile: its config, the resolution bridge between 224 px
classifiers and the 256 px U-Net (here 6 px images and an 8 px U-Net), the
asset check that runs before any job, and the workflow's DAG and start-up
behaviour with a fake ImageNet path."""

import copy
import hashlib
import resource
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from fudbench.assets.check import AssetError, check_assets, required_assets
from fudbench.config.validate import ConfigError, load_yaml, validate_config
from fudbench.imputers.base import ImputeContext
from fudbench.imputers.diffusion import fud_sampler
from fudbench.imputers.resolution import ResizedDiffusionImputer, bridge_resolution

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from dag_build_time import stand_in_paper_config  # noqa: E402  (the same stand-ins the DAG benchmark uses)
from fudbench.config.files import resolve_config

# --- config -------------------------------------------------------------------------


@pytest.fixture
def paper(repo):
    return resolve_config([repo / "config/paper.yaml"])


def _check(cfg, repo):
    return validate_config(cfg, repo / "config/schema.yaml")


def test_paper_config_is_valid_and_has_the_papers_setup(paper, repo):
    _check(paper, repo)
    im = paper["data"]["imagenet"]
    assert (im["seed"], im["resize"], im["crop"], paper["data"]["n_eval"]) == (3407, 256, 224, 1000)
    assert set(paper["explainers"]) == {
        "agi",
        "la",
        "attexplore",
        "big",
        "eg",
        "fig",
        "gig",
        "ig",
        "isa",
        "mfaba",
        "sm",
    }
    fud = paper["evaluators"]["fud"]
    assert (fud["steps"], fud["guidance_scale"], fud["guidance_start"]) == (100, 4.0, 0.05)
    assert paper["evaluators"]["insdel"]["n_steps"] == 224 and paper["explainers"]["isa"]["step_size"] == 5000
    assert {c["arch"] for c in paper["models"]["classifiers"].values()} == {
        "torchvision_resnet50",
        "torchvision_vit_b_16",
    }


@pytest.mark.parametrize(
    "edit,match",
    [
        (
            lambda c: c["models"]["classifiers"]["vit"].update(weights="IMAGENET1K_V2"),
            r"classifiers\.vit\.weights.*IMAGENET1K_V2.*choose one of IMAGENET1K_V1, IMAGENET1K_SWAG_LINEAR_V1",
        ),
        (lambda c: c["data"]["imagenet"].update(crop=192, resize=192), r"data\.imagenet\.crop.*192.*vit.*224x224"),
        (lambda c: c["data"]["imagenet"].update(resize=200), r"data\.imagenet\.resize.*200.*>= .*crop"),
        (lambda c: c["data"].pop("imagenet"), r"'data'.*'imagenet' is a required property"),
        (lambda c: c["models"]["classifiers"]["vit"].pop("weights"), r"classifiers\.vit.*'weights' is a required"),
        (
            lambda c: c["models"]["score_model"].update(source="train"),
            r"score_model.*'ema_decay' is a required property",
        ),
        (lambda c: c["data"]["imagenet"].update(layout="tree"), r"data\.imagenet\.layout.*'tree'.*'folders'"),
        (lambda c: c["models"]["classifiers"]["resnet50"].update(sha256="abc"), r"resnet50\.sha256.*does not match"),
        (lambda c: c["explainers"].update(oracle={}), r"explainers\.oracle.*ground-truth masks"),
    ],
)
def test_paper_config_errors_name_the_key(paper, repo, edit, match):
    edit(paper)
    with pytest.raises(ConfigError, match=match):
        _check(paper, repo)


def test_models_must_fit_the_data_source(paper, repo):
    default = load_yaml(repo / "config/config.yaml")
    mixed = copy.deepcopy(default)
    mixed["models"]["classifiers"]["rn"] = paper["models"]["classifiers"]["resnet50"]
    with pytest.raises(ConfigError, match=r"classifiers\.rn\.arch.*ImageNet-1k classifier.*data\.source: imagenet"):
        _check(mixed, repo)
    paper["models"]["classifiers"]["cnn"] = default["models"]["classifiers"]["cnn"]
    paper["models"]["score_model"] = default["models"]["score_model"]
    with pytest.raises(
        ConfigError,
        match=r"(?s)classifiers\.cnn\.arch.*synthetic.*score_model\.source.*"
        r"guided_diffusion",
    ):
        _check(paper, repo)


# --- resolution bridging ---------------------------------------------------------------


class ShapeRecorder(torch.nn.Module):
    """A classifier that records the sizes it is given (and needs 6x6 inputs)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3 * 6 * 6, 4)
        self.sizes = set()

    def forward(self, x):
        self.sizes.add(tuple(x.shape[-2:]))
        return self.lin(x.flatten(1))


@pytest.fixture
def bridge(tiny_unet):
    unet, schedule = tiny_unet  # an 8 px U-Net
    torch.manual_seed(0)
    clf = ShapeRecorder().eval().requires_grad_(False)
    x = torch.rand(3, 3, 6, 6)
    keep = (torch.rand(3, 1, 6, 6) > 0.5).float()
    inner = fud_sampler(unet, schedule, {"steps": 3, "guidance_scale": 4.0, "guidance_start": 1.0})
    ctx = ImputeContext(classifier=clf, target=torch.tensor([0, 1, 2]), seeds=[11, 12, 13])
    return inner, clf, x, keep, ctx


@pytest.mark.numerics
def test_bridge_keeps_pixels_exactly_and_guides_at_image_size(bridge, tiny_unet):
    inner, clf, x, keep, ctx = bridge
    wrapped = bridge_resolution(inner, tiny_unet[0])
    assert isinstance(wrapped, ResizedDiffusionImputer) and wrapped.model_size == 8
    out = wrapped.fill(x, keep, ctx)
    assert out.shape == x.shape and 0 <= out.min() and out.max() <= 1
    k = keep.bool().expand_as(x)
    assert torch.equal(out[k], x[k])
    assert clf.sizes == {(6, 6)}  # the guidance gradient went through the 8 -> 6 resize
    unguided = ResizedDiffusionImputer(fud_sampler(*tiny_unet, {"steps": 3, "guidance_scale": 0.0}), 8)
    assert not torch.allclose(unguided.fill(x, keep, ctx)[~k], out[~k])


@pytest.mark.numerics
def test_bridge_is_per_sample_and_passes_through_at_model_size(bridge):
    inner, clf, x, keep, ctx = bridge
    wrapped = ResizedDiffusionImputer(inner, 8)
    batched = wrapped.fill(x, keep, ctx)
    for i in range(3):
        one = ImputeContext(classifier=clf, target=ctx.target[i : i + 1], seeds=ctx.seeds[i : i + 1])
        torch.testing.assert_close(
            wrapped.fill(x[i : i + 1], keep[i : i + 1], one), batched[i : i + 1], rtol=1e-5, atol=1e-6
        )
    x8, keep8 = torch.rand(3, 3, 8, 8), (torch.rand(3, 1, 8, 8) > 0.5).float()
    ctx8 = ImputeContext(seeds=[1, 2, 3])
    assert torch.equal(wrapped.fill(x8, keep8, ctx8), inner.fill(x8, keep8, ctx8))


def test_bridge_callbacks_and_traces_are_at_image_size(bridge):
    inner, clf, x, keep, ctx = bridge
    seen = []
    out, dist = ResizedDiffusionImputer(inner, 8).sample(
        x, keep, ctx, trace=True, callback=lambda step, t, x_t, x0_hat=None: seen.append((x_t.shape, x0_hat.shape))
    )
    assert seen and all(a[-2:] == (6, 6) and b[-2:] == (6, 6) for a, b in seen)
    assert dist.shape == (3, 4) and torch.isfinite(dist).all()
    assert ResizedDiffusionImputer(inner, 8).steps == 3  # settings forwarded, methods not
    assert not hasattr(ResizedDiffusionImputer(inner, 8), "_distance")
    # with_steps is bridged (Table 10's one timing job, issue 47): the same U-Net behind the same bridge
    five = ResizedDiffusionImputer(inner, 8).with_steps(5)
    assert isinstance(five, ResizedDiffusionImputer) and five.model_size == 8 and five.steps == 5
    assert five.inner.runtime is inner.runtime and inner.steps == 3


# --- asset checks ----------------------------------------------------------------------


@pytest.fixture
def paper_assets(paper, tmp_path):
    """The paper config pointed at stand-in files in tmp_path (all present)."""
    from PIL import Image

    root = tmp_path / "val"
    for i, wnid in enumerate(f"n{k:08d}" for k in range(1000)):
        (root / wnid).mkdir(parents=True)
        if i < 3:
            Image.new("RGB", (8, 8)).save(root / wnid / f"ILSVRC2012_val_{i + 1:08d}.JPEG")
    paper["data"]["imagenet"]["root"] = str(root)
    paper["data"]["n_eval"] = 3
    for name in ("resnet50", "vit"):
        (tmp_path / f"{name}.pth").write_bytes(name.encode())
        paper["models"]["classifiers"][name]["path"] = str(tmp_path / f"{name}.pth")
    for name in ("resnet50", "vit"):
        paper["models"]["classifiers"][name]["sha256"] = hashlib.sha256(name.encode()).hexdigest()
    (tmp_path / "gd.pt").write_bytes(b"checkpoint")
    paper["models"]["score_model"]["guided_diffusion"]["checkpoint"] = str(tmp_path / "gd.pt")
    return paper


def test_all_assets_present(paper_assets, tmp_path, repo):
    notes = check_assets(paper_assets, repo, cache_file=tmp_path / "digests.json")
    assert len(notes) == 1 and "no sha256 in config" in notes[0]
    digest = hashlib.sha256(b"checkpoint").hexdigest()
    assert digest in notes[0] and "guided_diffusion.sha256" in notes[0]
    paper_assets["models"]["score_model"]["guided_diffusion"]["sha256"] = digest
    assert check_assets(paper_assets, repo) == []


def test_missing_assets_are_all_named_with_fetch_commands(paper, tmp_path, repo):
    paper["data"]["imagenet"]["root"] = str(tmp_path / "nope")
    paper["models"]["classifiers"]["vit"]["path"] = str(tmp_path / "vit.pth")
    paper["models"]["score_model"]["guided_diffusion"]["checkpoint"] = str(tmp_path / "gd.pt")
    paper["models"]["classifiers"]["resnet50"]["path"] = str(tmp_path / "rn.pth")
    with pytest.raises(AssetError) as err:
        check_assets(paper, repo)
    msg = str(err.value)
    assert msg.startswith("4 asset problem(s); nothing was run")
    assert f"{tmp_path / 'nope'} does not exist (config key 'data.imagenet.root')" in msg
    assert "image-net.org" in msg and "LOC_val_solution.csv" in msg
    assert f"curl -L -o {tmp_path / 'vit.pth'} https://download.pytorch.org/models/vit_b_16-c867db91.pth" in msg
    assert (
        f"curl -L -o {tmp_path / 'gd.pt'} https://openaipublic.blob.core.windows.net/diffusion/jul-2021/"
        f"256x256_diffusion_uncond.pt"
    ) in msg


def test_unset_and_empty_imagenet_dir(paper, paper_assets, tmp_path, repo):
    cfg = copy.deepcopy(paper_assets)
    cfg["data"]["imagenet"]["root"] = None
    with pytest.raises(AssetError, match=r"config key 'data\.imagenet\.root' is not set"):
        check_assets(cfg, repo)
    (tmp_path / "empty").mkdir()
    cfg["data"]["imagenet"]["root"] = str(tmp_path / "empty")
    with pytest.raises(AssetError, match=r"empty is empty \(config key 'data\.imagenet\.root'\)"):
        check_assets(cfg, repo)


def test_wrong_imagenet_layout_is_caught_before_any_job(paper_assets, tmp_path, repo):
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "ILSVRC2012_val_00000001.JPEG").write_bytes(b"x")
    paper_assets["data"]["imagenet"]["root"] = str(flat)
    with pytest.raises(AssetError, match=r"holds 1 images directly but no labels file"):
        check_assets(paper_assets, repo)
    paper_assets["data"]["imagenet"]["root"] = str(tmp_path / "val")
    paper_assets["data"]["n_eval"] = 1000
    with pytest.raises(AssetError, match=r"has 3 images, config key 'data\.n_eval' asks for 1000"):
        check_assets(paper_assets, repo)


def test_checksum_mismatches(paper_assets, tmp_path, repo, monkeypatch):
    paper_assets["models"]["score_model"]["guided_diffusion"]["sha256"] = "0" * 64
    (tmp_path / "vit.pth").write_bytes(b"another file")
    with pytest.raises(AssetError) as err:
        check_assets(paper_assets, repo)
    msg = str(err.value)
    assert msg.startswith("2 asset problem(s)")
    assert f"checksum mismatch for {tmp_path / 'gd.pt'}" in msg and "expected " + "0" * 64 in msg
    assert f"checksum mismatch for {tmp_path / 'vit.pth'}" in msg and "fetch it again" in msg
    # no sha256 in config: torchvision's file-name prefix is checked
    paper_assets["models"]["classifiers"]["vit"]["sha256"] = None
    with pytest.raises(AssetError, match=r"does not start with c867db91"):
        check_assets(paper_assets, repo)


def test_checksums_are_cached_by_size_and_mtime(paper_assets, tmp_path, repo, monkeypatch):
    import fudbench.core.fingerprint as fp

    calls = []
    real = fp.file_sha256
    monkeypatch.setattr(fp, "file_sha256", lambda p, *a: calls.append(Path(p).name) or real(p, *a))
    cache = tmp_path / "digests.json"
    check_assets(paper_assets, repo, cache_file=cache)
    assert sorted(calls) == ["gd.pt", "resnet50.pth", "vit.pth"]
    check_assets(paper_assets, repo, cache_file=cache)
    assert len(calls) == 3  # nothing hashed again
    (tmp_path / "vit.pth").write_bytes(b"changed!")
    with pytest.raises(AssetError, match="vit.pth"):
        check_assets(paper_assets, repo, cache_file=cache)
    assert calls[-1] == "vit.pth"


def test_synthetic_profile_needs_no_assets(repo):
    cfg = load_yaml(repo / "config/config.yaml")
    assert required_assets(cfg, repo) == [] and check_assets(cfg, repo) == []


def test_assets_cli(paper, tmp_path, repo, capsys):
    from fudbench.assets.check import main

    paper["data"]["imagenet"]["root"] = str(tmp_path)
    (tmp_path / "paper.yaml").write_text(yaml.safe_dump(paper))
    assert main([str(tmp_path / "paper.yaml"), "--repo", str(repo)]) == 1
    out = capsys.readouterr().out
    assert "[MISSING] weights of classifier 'resnet50'" in out and "fetch: mkdir -p" in out


# --- the workflow ------------------------------------------------------------------------


@pytest.mark.workflow
def test_paper_dag_builds_quickly_without_assets(repo, tmp_path):
    from workflow_support import job_counts, snakemake

    cfg = resolve_config([repo / "config/paper.yaml"])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = snakemake(
        repo,
        "-n",
        "--quiet",
        "rules",
        "--configfile",
        str(stand_in_paper_config(tmp_path)),
        "--directory",
        str(tmp_path / "work"),
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    counts = job_counts(res.stdout + res.stderr)
    shards = -(-cfg["data"]["n_eval"] // cfg["data"]["shard_size"])
    n_models, n_explainers, n_evaluators = (
        len(cfg["models"]["classifiers"]),
        len(cfg["explainers"]),
        len(cfg["evaluators"]),
    )
    assert counts["explain"] == n_models * n_explainers * shards
    assert counts["evaluate"] == n_models * n_evaluators * shards
    assert counts["make_dataset"] == 1 and counts["prepare_classifier"] == 2 and counts["convert_score_model"] == 1
    assert "train_classifier" not in counts and "train_score_model" not in counts
    assert sum(n for rule, n in counts.items() if rule != "total") < 3000
    # How fast is a benchmark figure (bench/dag_build_time.py), machine-dependent; only a gross
    # regression (e.g. a DAG that grows quadratically with the shards) fails here.
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert cpu < 120, f"parsing + DAG building took {cpu:.1f} s of CPU; see bench/dag_build_time.py"


@pytest.mark.workflow
def test_paper_run_without_assets_stops_before_any_job(repo, tmp_path):
    from workflow_support import snakemake

    res = snakemake(
        repo,
        "--cores",
        "1",
        "--configfile",
        str(stand_in_paper_config(tmp_path)),
        "--directory",
        str(tmp_path / "work"),
    )
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "asset problem(s); nothing was run" in out and "imagenet is empty" in out
    assert "resnet50.pth does not exist" in out and "curl -L -o" in out
    assert not (tmp_path / "work" / "results" / "paper" / "data").exists()
    assert "rule make_dataset" not in out and "localrule make_dataset" not in out


# --- the paper profile's job scripts, run as Snakemake would (stand-in assets) ---------


def _run_script(repo, name, tmp_path, **smk):
    """Run scripts/<name> with a stand-in `snakemake` object, as a script: job does."""
    import runpy
    from types import SimpleNamespace

    ns = {k: SimpleNamespace(**v) if isinstance(v, dict) else v for k, v in smk.items()}
    job = SimpleNamespace(
        threads=1,
        log=[str(tmp_path / f"{name}.log")],
        rule=name,
        wildcards=SimpleNamespace(),
        input=SimpleNamespace(),
        output=SimpleNamespace(),
        params=SimpleNamespace(),
    )
    job.__dict__.update(ns)
    sys.path.insert(0, str(repo / "scripts"))
    try:
        runpy.run_path(str(repo / "scripts" / name), init_globals={"snakemake": job}, run_name="__main__")
    finally:
        sys.path.remove(str(repo / "scripts"))


def test_paper_job_scripts_on_stand_ins(repo, tmp_path, monkeypatch):
    """make_dataset (ImageNet), prepare_classifier, convert_score_model and the
    score-model check, chained through their files."""
    import json

    import pandas as pd
    from PIL import Image

    import fudbench.models.guided_diffusion as gd
    from fudbench.core.fingerprint import file_sha256
    from fudbench.core.io import load_npz
    from fudbench.models import torchvision_models as tvm
    from fudbench.models.classifiers import load_classifier
    from fudbench.models.score import load_score_model
    from test_guided_diffusion import SMALL, random_gd_state

    root, res = tmp_path / "val", tmp_path / "results"
    rng = np.random.default_rng(0)
    for k in range(1000):
        (root / f"n{k:08d}").mkdir(parents=True)
    for i in range(5):
        Image.fromarray(rng.integers(0, 256, (40, 48, 3), dtype=np.uint8)).save(
            root / f"n{i % 2:08d}" / f"ILSVRC2012_val_{i + 1:08d}.JPEG"
        )
    imagenet = {
        "root": str(root),
        "layout": "auto",
        "labels": None,
        "synsets": None,
        "seed": 3407,
        "resize": 36,
        "crop": 32,
        "on_corrupt": "error",
    }
    data = {
        k: str(res / f"{k}.{ext}")
        for k, ext in [
            ("eval", "npz"),
            ("classes", "json"),
            ("manifest", "csv"),
            ("examples", "npz"),
            ("summary", "json"),
        ]
    }
    _run_script(repo, "prepare_imagenet.py", tmp_path, params={"imagenet": imagenet, "n_eval": 4}, output=data)
    manifest = pd.read_csv(data["manifest"])
    assert len(manifest) == 4 and set(manifest["label"]) <= {0, 1}
    assert json.loads(Path(data["classes"]).read_text())[0] == "tench"  # torchvision's names for 1000 folders
    assert load_npz(data["eval"])["images"].shape == (4, 3, 32, 32)
    assert json.loads(Path(data["summary"]).read_text())["n_images_found"] == 5

    torch.manual_seed(0)
    torch.save(tvm.build_torchvision_net("torchvision_resnet50").state_dict(), tmp_path / "rn.pth")
    clf = {"arch": "torchvision_resnet50", "weights": "IMAGENET1K_V1", "path": str(tmp_path / "rn.pth"), "sha256": None}
    job = {"seed": 0, "device": "cpu"}
    gates = {"min_test_accuracy": 0.7, "strict": False, "n_samples": 2, "sample_steps": 2}
    models = {"model": str(res / "rn.pt"), "metrics": str(res / "rn_metrics.json")}
    with pytest.raises(tvm.WeightsError, match="sha256 prefix 0676ba61"):  # verified before loading
        _run_script(
            repo,
            "prepare_classifier.py",
            tmp_path,
            wildcards={"model": "rn"},
            input={"images": data["eval"], "classes": data["classes"]},
            output=models,
            params={"classifier": clf, "gates": gates, "job": job},
        )
    clf["sha256"] = file_sha256(tmp_path / "rn.pth")
    _run_script(
        repo,
        "prepare_classifier.py",
        tmp_path,
        wildcards={"model": "rn"},
        input={"images": data["eval"], "classes": data["classes"]},
        output=models,
        params={"classifier": clf, "gates": gates, "job": job},
    )
    metrics = json.loads(Path(models["metrics"]).read_text())
    assert metrics["sha256"] == clf["sha256"] and 0 <= metrics["test_accuracy"] <= 1
    assert load_classifier(models["model"])(torch.rand(1, 3, 32, 32)).shape == (1, 1000)

    torch.save(random_gd_state(SMALL), tmp_path / "gd.pt")
    monkeypatch.setattr(gd, "ADM256", SMALL)  # a reduced ADM instead of the 2.2 GB model
    score = {
        "model": str(res / "score_model.pt"),
        "weights": str(res / "score_model.safetensors"),
        "manifest": str(res / "score_model.json"),
    }
    cfg = {"checkpoint": str(tmp_path / "gd.pt"), "url": gd.ADM256_URL, "sha256": "0" * 64}
    with pytest.raises(gd.ConversionError, match=r"checksum mismatch.*gd\.pt"):
        _run_script(repo, "convert_score_model.py", tmp_path, params={"guided_diffusion": cfg}, output=score)
    cfg["sha256"] = None
    _run_script(repo, "convert_score_model.py", tmp_path, params={"guided_diffusion": cfg}, output=score)
    log = (tmp_path / "convert_score_model.py.log").read_text()
    assert "record it in models.score_model.guided_diffusion.sha256" in log
    unet, _ = load_score_model(score["model"])
    assert unet.config.sample_size == 16

    check = {"report": str(res / "check.json"), "samples": str(res / "samples.npz")}
    _run_script(
        repo,
        "check_score_model.py",
        tmp_path,
        input={
            "score_model": score["model"],
            "test": data["eval"],
            "classes": data["classes"],
            "classifiers": [models["model"]],
        },
        output=check,
        params={
            "gates": gates,
            "models": ["rn"],
            "job": job,
            "precision": {"amp_dtype": "bf16", "channels_last": True},
        },
    )
    report = json.loads(Path(check["report"]).read_text())
    assert report["sampled_at"] == 16 and 0 <= report["classifiers"]["rn"]["auroc"] <= 1
    assert load_npz(check["samples"])["samples"].shape == (2, 3, 32, 32)
