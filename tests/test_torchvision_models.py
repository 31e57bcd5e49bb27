"""torchvision ResNet-50 / ViT-B/16 in the workflow: weights table, hub cache
location, checksum checks, checkpoint round trip, and both models (random
weights, 32 px images) through explain + evaluate with a reduced converted
guided-diffusion U-Net at another resolution (48 px, bridged)."""

import numpy as np
import pytest
import torch

from fudbench.core.fingerprint import file_sha256
from fudbench.models import torchvision_models as tvm
from fudbench.models.classifiers import load_classifier, pretrained_classifier, save_classifier

ARCHS = ["torchvision_resnet50", "torchvision_vit_b_16"]


def test_weights_table_matches_torchvision():
    from torchvision.models import ResNet50_Weights, ViT_B_16_Weights

    enums = {"torchvision_resnet50": ResNet50_Weights, "torchvision_vit_b_16": ViT_B_16_Weights}
    for arch, files in tvm.WEIGHT_FILES.items():
        for name, file in files.items():
            w = enums[arch][name]
            assert tvm.weight_url(arch, name) == w.url and w.url.endswith(file)
            t = w.transforms()
            assert tuple(t.mean) == tvm.IMAGENET_MEAN and tuple(t.std) == tvm.IMAGENET_STD
            assert t.crop_size == [224] and len(w.meta["categories"]) == 1000


@pytest.mark.parametrize("env", [{}, {"XDG_CACHE_HOME": "/x/cache"}, {"TORCH_HOME": "/y/torch"}])
def test_hub_dir_equals_torch_hub(monkeypatch, env):
    for k in ("TORCH_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert str(tvm.hub_dir()) == torch.hub.get_dir()
    cfg = {"arch": "torchvision_resnet50", "weights": "IMAGENET1K_V2"}
    assert tvm.weights_path(cfg) == tvm.hub_dir() / "checkpoints" / "resnet50-11ad3fa6.pth"


def _legacy_mlp_names(state: dict) -> dict:
    """ViT-B/16's file predates torchvision's MLP rename (mlp.0 / mlp.3 were mlp.linear_1 / _2)."""
    return {k.replace("mlp.0.", "mlp.linear_1.").replace("mlp.3.", "mlp.linear_2."): v for k, v in state.items()}


def _current_names(state: dict) -> dict:
    return {k.replace("mlp.linear_1.", "mlp.0.").replace("mlp.linear_2.", "mlp.3."): v for k, v in state.items()}


@pytest.fixture(scope="module")
def weight_files(tmp_path_factory):
    """Random-weight state dicts saved as stand-ins for the downloaded files (32 px ViT,
    with the legacy MLP key names of the released file)."""
    d = tmp_path_factory.mktemp("weights")
    out = {}
    for arch in ARCHS:
        torch.manual_seed(0)
        path = d / f"{arch}.pth"
        state = tvm.build_torchvision_net(arch, image_size=32).state_dict()
        torch.save(_legacy_mlp_names(state) if arch == "torchvision_vit_b_16" else state, path)
        out[arch] = {"arch": arch, "weights": "IMAGENET1K_V1", "path": str(path), "sha256": file_sha256(path)}
    return out


def test_missing_weights_name_the_fetch_command(tmp_path):
    cfg = {"arch": "torchvision_vit_b_16", "weights": "IMAGENET1K_V1", "path": str(tmp_path / "vit.pth")}
    with pytest.raises(
        tvm.WeightsError,
        match=r"(?s)'vit'.*not found at .*vit\.pth.*curl -L -o .*vit\.pth "
        r"https://download\.pytorch\.org/models/vit_b_16-c867db91\.pth",
    ):
        tvm.verify_weights(cfg, "vit")


def test_checksum_mismatch_full_and_prefix(weight_files, monkeypatch):
    cfg = dict(weight_files["torchvision_resnet50"])
    assert tvm.verify_weights(cfg, "rn") == cfg["sha256"]
    with pytest.raises(tvm.WeightsError, match=r"(?s)checksum mismatch.*models\.classifiers\.rn\.sha256 = 0{64}"):
        tvm.verify_weights({**cfg, "sha256": "0" * 64}, "rn")
    # no sha256 in config: the prefix of torchvision's file name is checked
    cfg.pop("sha256")
    with pytest.raises(tvm.WeightsError, match=r"sha256 prefix 0676ba61 in torchvision's file name"):
        tvm.verify_weights(cfg, "rn")
    digest = file_sha256(cfg["path"])
    monkeypatch.setitem(tvm.WEIGHT_FILES["torchvision_resnet50"], "IMAGENET1K_V1", f"resnet50-{digest[:8]}.pth")
    assert tvm.verify_weights(cfg, "rn") == digest


@pytest.fixture(scope="module")
def checkpoints(weight_files, tmp_path_factory):
    """Each pretrained classifier as loaded from its verified file, and saved in the
    workflow's checkpoint format."""
    d = tmp_path_factory.mktemp("checkpoints")
    out = {}
    for arch in ARCHS:
        model, digest = pretrained_classifier(weight_files[arch], arch, image_size=32)
        save_classifier(d / f"{arch}.pt", model, weight_files[arch], 1000, 32, {})
        out[arch] = (model, digest, d / f"{arch}.pt")
    return out


@pytest.mark.parametrize("arch", ARCHS)
def test_pretrained_classifier_round_trip(weight_files, checkpoints, arch):
    model, digest, path = checkpoints[arch]
    assert digest == weight_files[arch]["sha256"] and not any(p.requires_grad for p in model.parameters())
    state = _current_names(torch.load(weight_files[arch]["path"], weights_only=True))
    assert state.keys() == model.net.state_dict().keys()
    assert all(torch.equal(v, model.net.state_dict()[k]) for k, v in state.items())
    x = torch.rand(2, 3, 32, 32)
    mean, std = torch.tensor(tvm.IMAGENET_MEAN).view(1, 3, 1, 1), torch.tensor(tvm.IMAGENET_STD).view(1, 3, 1, 1)
    with torch.no_grad():
        torch.testing.assert_close(model(x), model.net((x - mean) / std))  # normalisation inside the wrapper
        torch.testing.assert_close(load_classifier(path)(x), model(x))


def test_wrong_file_is_a_clear_error(weight_files):
    cfg = {**weight_files["torchvision_resnet50"], "arch": "torchvision_vit_b_16"}
    cfg["sha256"] = file_sha256(cfg["path"])
    with pytest.raises(tvm.WeightsError, match=r"does not hold torchvision_vit_b_16 weights"):
        pretrained_classifier(cfg, "m", image_size=32)


@pytest.fixture(scope="module")
def paper_assets(checkpoints, tmp_path_factory):
    """Eval npz from generated JPEGs (the ImageNet sampler), both classifiers, and a
    reduced guided-diffusion checkpoint converted to a 48 px score model."""
    from PIL import Image

    from fudbench.data.imagenet import build_eval_set, eval_arrays
    from fudbench.core.io import write_npz
    from fudbench.models.guided_diffusion import ADMConfig, convert_checkpoint, schedule
    from fudbench.models.score import save_score_model_pointer
    from test_guided_diffusion import random_gd_state

    d = tmp_path_factory.mktemp("paper")
    root = d / "val"
    rng = np.random.default_rng(0)
    for i, wnid in enumerate(["n01440764", "n01443537", "n01440764"]):
        (root / wnid).mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (40, 44, 3), dtype=np.uint8)).save(root / wnid / f"img{i}.JPEG")
    (d / "synsets.txt").write_text("n01440764 tench\nn01443537 goldfish\n")
    sample = build_eval_set(
        {"root": root, "synsets": d / "synsets.txt", "seed": 3407, "resize": 36, "crop": 32}, n_eval=3, n_classes=2
    )
    write_npz(d / "eval.npz", **eval_arrays(sample))
    adm = ADMConfig(
        image_size=48,
        model_channels=32,
        num_res_blocks=1,
        attention_resolutions=(24,),
        channel_mult=(1, 2),
        num_head_channels=16,
    )
    torch.save(random_gd_state(adm), d / "gd.pt")
    config = convert_checkpoint(d / "gd.pt", d / "score_model.safetensors", adm)
    save_score_model_pointer(d / "score_model.pt", d / "score_model.safetensors", config, schedule(100), {})
    return d


@pytest.mark.parametrize("arch", ARCHS)
def test_explain_and_evaluate_with_torchvision_models(paper_assets, checkpoints, tmp_path, arch):
    from fudbench.core.io import load_npz, write_npz
    from fudbench.workflow.pipeline import evaluate_shard, explain_shard

    d, model_path = paper_assets, checkpoints[arch][2]
    attr = explain_shard(model_path, d / "eval.npz", 0, 2, "sm", {}, "predicted", (0, "explain", arch, "sm"), "cpu")
    assert attr["attributions"].shape == (2, 3, 32, 32) and np.isfinite(attr["attributions"]).all()
    write_npz(tmp_path / "attr.npz", **attr)
    fud = {"steps": 2, "guidance_scale": 4.0, "guidance_start": 1.0, "known": "clean", "clip_x0": True, "batch_size": 4}
    records, samples = evaluate_shard(
        model_path,
        d / "eval.npz",
        tmp_path / "attr.npz",
        0,
        2,
        "fud",
        fud,
        {"ratios": [0.25, 0.75], "reduction": "abs_sum"},
        {"score_model": d / "score_model.pt"},
        (0, "evaluate", arch, "sm", "fud"),
        "cpu",
    )
    assert len(records) == 4 and records["confidence"].between(0, 1).all()
    filled = samples["fud"].astype(np.float32)
    assert filled.shape == (2, 2, 3, 32, 32)
    # kept pixels are the clean image's, exactly (up to the float16 storage of samples)
    images = load_npz(d / "eval.npz")["images"][:2].astype(np.float32) / 255
    kept_any = np.isclose(filled, images[:, None], atol=1e-3).all(axis=2)
    assert kept_any[:, 1].mean() >= 0.7  # rho = 0.75 keeps 75% of the pixels
