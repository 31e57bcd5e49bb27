"""Stand-in assets for the paper profile: the files config/paper.yaml asks for,
with random contents, so that its DAG runs end to end where the real assets
(ImageNet, torchvision's weights, guided-diffusion's 2.2 GB checkpoint) are not
at hand: the tests and bench/gpu_suite.sh.

    write_imagenet_folders   JPEGs in the `folders` layout (one folder per WordNet id)
    write_torchvision_weights  a torchvision ResNet-50 / ViT-B/16 state dict, random weights
    gd_shapes, random_gd_state  guided-diffusion's UNetModel state dict (its key names), random
    write_paper_standin      all of them plus an overlay of config/paper.yaml that points at them

Speed does not depend on the weights, so a GPU run on stand-ins times the real
workload (ADM-256: 552.8 M parameters); the scores mean nothing.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import numpy as np

# A reduced ADM (the same block types) for runs on a CPU: 32 px, ~1 M parameters.
TINY_ADM = {
    "image_size": 32,
    "model_channels": 32,
    "num_res_blocks": 1,
    "attention_resolutions": [16],
    "channel_mult": [1, 2],
    "num_head_channels": 32,
    "norm_groups": 32,
}


def gd_shapes(adm) -> dict:
    """Parameter names and shapes of guided-diffusion's UNetModel (resblock_updown,
    use_scale_shift_norm, learn_sigma), in its construction order. adm: an ADMConfig."""
    c0, emb = adm.model_channels, 4 * adm.model_channels
    shapes = {}

    def param(name, *shape, bias=True):
        shapes[f"{name}.weight"] = shape
        if bias:
            shapes[f"{name}.bias"] = (shape[0],)

    def res(p, cin, cout):
        param(f"{p}.in_layers.0", cin)
        param(f"{p}.in_layers.2", cout, cin, 3, 3)
        param(f"{p}.emb_layers.1", 2 * cout, emb)
        param(f"{p}.out_layers.0", cout)
        param(f"{p}.out_layers.3", cout, cout, 3, 3)
        if cin != cout:
            param(f"{p}.skip_connection", cout, cin, 1, 1)

    def att(p, c):
        param(f"{p}.norm", c)
        param(f"{p}.qkv", 3 * c, c, 1)
        param(f"{p}.proj_out", c, c, 1)

    attn = [2**lv in {adm.image_size // r for r in adm.attention_resolutions} for lv in range(len(adm.channel_mult))]
    param("time_embed.0", emb, c0)
    param("time_embed.2", emb, emb)
    param("input_blocks.0.0", c0, adm.in_channels, 3, 3)
    chans, ch, idx = [c0], c0, 1
    for level, mult in enumerate(adm.channel_mult):
        for _ in range(adm.num_res_blocks):
            res(f"input_blocks.{idx}.0", ch, mult * c0)
            ch = mult * c0
            if attn[level]:
                att(f"input_blocks.{idx}.1", ch)
            chans.append(ch)
            idx += 1
        if level != len(adm.channel_mult) - 1:
            res(f"input_blocks.{idx}.0", ch, ch)
            chans.append(ch)
            idx += 1
    res("middle_block.0", ch, ch)
    att("middle_block.1", ch)
    res("middle_block.2", ch, ch)
    idx = 0
    for level, mult in reversed(list(enumerate(adm.channel_mult))):
        for i in range(adm.num_res_blocks + 1):
            res(f"output_blocks.{idx}.0", ch + chans.pop(), mult * c0)
            ch, sub = mult * c0, 1
            if attn[level]:
                att(f"output_blocks.{idx}.1", ch)
                sub = 2
            if level and i == adm.num_res_blocks:
                res(f"output_blocks.{idx}.{sub}", ch, ch)
            idx += 1
    param("out.0", ch)
    param("out.2", adm.out_channels, ch, 3, 3)
    return shapes


def random_gd_state(adm, seed=0) -> dict:
    """A guided-diffusion state dict of random tensors: norms near 1, biases near 0 (not
    exactly, so that a swapped pair shows), weights scaled by 1 / sqrt(fan-in)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    state = {}
    for name, shape in gd_shapes(adm).items():
        if len(shape) == 1:
            base = 1.0 if name.endswith("weight") else 0.0
            state[name] = base + 0.1 * torch.randn(shape, generator=g)
        else:
            state[name] = torch.randn(shape, generator=g) / math.sqrt(math.prod(shape[1:]))
    return state


def write_imagenet_folders(root, n_images: int, size=(300, 400), seed=0) -> Path:
    """n_images random JPEGs in the `folders` layout: all 1000 WordNet-id folders (so
    no synset list is needed), the images spread over the first classes."""
    from PIL import Image

    root = Path(root)
    rng = np.random.default_rng(seed)
    wnids = [f"n{k:08d}" for k in range(1000)]
    for wnid in wnids:
        (root / wnid).mkdir(parents=True, exist_ok=True)
    for i in range(n_images):
        pixels = rng.integers(0, 256, (*size, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(root / wnids[i % 10] / f"ILSVRC2012_val_{i + 1:08d}.JPEG", quality=90)
    return root


def write_torchvision_weights(path, arch: str, image_size: int = 224, seed=0) -> str:
    """A random-weight state dict of `arch` (torchvision_resnet50 / torchvision_vit_b_16);
    returns its sha256 (for the config: stand-ins have no torchvision file-name prefix)."""
    import torch

    from fudbench.core.fingerprint import file_sha256
    from fudbench.models.torchvision_models import build_torchvision_net

    torch.manual_seed(seed)
    torch.save(build_torchvision_net(arch, image_size=image_size).state_dict(), path)
    return file_sha256(path)


def write_gd_checkpoint(path, adm=None, seed=0) -> None:
    """A guided-diffusion checkpoint (plain state dict) of random weights; adm: an ADMConfig,
    default the released 256x256 model (2.2 GB)."""
    import torch

    from fudbench.models.guided_diffusion import ADM256

    torch.save(random_gd_state(adm or ADM256, seed), path)


def write_paper_standin(
    work,
    *,
    tiny: bool = False,
    n_images: Optional[int] = None,
    device: str = "cuda",
    steps: Optional[int] = None,
    explainers=None,
    cores: Optional[int] = None,
) -> Path:
    """Stand-in assets under `work` and an overlay of config/paper.yaml that uses them
    (`work/paper_standin.yaml`, to pass after config/paper.yaml). Full size: 16 JPEGs,
    ResNet-50 and ViT-B/16 at 224 px, ADM-256; tiny: 2 images at 32 px, ResNet-50 alone, a
    reduced ADM (TINY_ADM), a CPU. Few explainers and DDIM steps, so that every rule runs in
    minutes."""
    import yaml

    from fudbench.config.files import load_yaml_file
    from fudbench.models.guided_diffusion import ADM256, ADMConfig

    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    n = n_images or (2 if tiny else 16)
    size = 32 if tiny else 224
    root = write_imagenet_folders(work / "imagenet", n, size=(40, 48) if tiny else (300, 400))
    classifiers = {}
    # ViT-B/16 takes 224 px only (its position embeddings), so the tiny size (a CPU, minutes) keeps
    # ResNet-50 alone: half the jobs, the same rules.
    models = [("resnet50", "torchvision_resnet50")] + ([] if tiny else [("vit", "torchvision_vit_b_16")])
    for seed, (name, arch) in enumerate(models):
        path = work / f"{name}.pth"
        classifiers[name] = {
            "arch": arch,
            "weights": "IMAGENET1K_V1",
            "path": str(path),
            "sha256": write_torchvision_weights(path, arch, size, seed=seed),
        }
    if tiny:
        classifiers["vit"] = None
    adm = ADMConfig.from_dict({**ADM256.to_dict(), **TINY_ADM}) if tiny else ADM256
    gd = {"checkpoint": str(work / "gd.pt"), "sha256": None}
    if tiny:
        gd["architecture"] = TINY_ADM
    write_gd_checkpoint(work / "gd.pt", adm)
    explainers = list(explainers or (["sm", "ig"] if tiny else ["sm", "ig", "big", "mfaba"]))
    keep = set(explainers)
    paper = load_yaml_file(Path(__file__).resolve().parents[3] / "config" / "paper.yaml")
    overlay = {
        "run_name": "paper_standin",
        "device": device,
        "data": {
            "n_eval": n,
            "shard_size": n,
            "imagenet": {"root": str(root), **({"resize": 36, "crop": 32} if tiny else {})},
        },
        "models": {
            "classifiers": classifiers,
            "score_model": {"guided_diffusion": gd},
            "gates": {"min_test_accuracy": 0.0, "n_samples": 2, "sample_steps": 2},
        },
        # only these explainers: the rest of the paper's (and the default's) are removed
        "explainers": {
            **{e: None for e in paper.get("explainers", {}) if e not in keep},
            **{e: None for e in _default_explainers() if e not in keep},
            **{e: paper["explainers"].get(e) or {} for e in explainers},
        },
        "evaluators": {
            "fud": {"steps": steps or (3 if tiny else 10), "batch_size": 64},
            "insdel": {"n_steps": 8 if tiny else 224},
        },
        "evaluation": {"quality": {"images_per_shard": 2}},
        "analysis": {
            "pooled_explainers": None,
            "diagnostics": {"n_images": 1, "explainer": "ig"},
            "timing": {"n_images": 1, "steps": [2] if tiny else [10, 20], "model": "resnet50" if tiny else "vit"},
        },
        "plots": {"qualitative_explainers": [e for e in ("sm", "ig") if e in explainers]},
    }
    if tiny:
        overlay["evaluators"].update(
            {"sensn": {"n_subsets": 4, "batch_size": 64}, "infid": {"n_perturb": 4, "batch_size": 64}}
        )
    path = work / "paper_standin.yaml"
    path.write_text(yaml.safe_dump(overlay, sort_keys=False))
    return path


def _default_explainers() -> list[str]:
    from fudbench.config.files import load_yaml_file

    cfg = load_yaml_file(Path(__file__).resolve().parents[3] / "config" / "config.yaml")
    return list(cfg.get("explainers", {}))
