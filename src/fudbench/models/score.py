"""Score models: diffusers UNet2DModel (epsilon prediction) and its noise schedule."""

from __future__ import annotations

import math
from pathlib import Path

from diffusers import DDIMScheduler, DDPMScheduler, UNet2DModel


def build_unet(cfg: dict, image_size: int) -> UNet2DModel:
    channels = tuple(cfg["block_out_channels"])
    attention = tuple(cfg["attention"])
    groups = min(8, math.gcd(*channels))
    return UNet2DModel(
        sample_size=image_size,
        in_channels=3,
        out_channels=3,
        layers_per_block=cfg["layers_per_block"],
        block_out_channels=channels,
        down_block_types=tuple("AttnDownBlock2D" if a else "DownBlock2D" for a in attention),
        up_block_types=tuple("AttnUpBlock2D" if a else "UpBlock2D" for a in reversed(attention)),
        norm_num_groups=groups,
        attention_head_dim=min(32, channels[-1]),
    )


def schedule_config(cfg: dict) -> dict:
    """The training noise schedule, shared by the DDPM trainer and the DDIM sampler."""
    return {
        "num_train_timesteps": cfg["num_train_timesteps"],
        "beta_schedule": cfg["beta_schedule"],
        "beta_start": 1e-4,
        "beta_end": 0.02,
        "prediction_type": "epsilon",
    }


def ddpm_scheduler(schedule: dict) -> DDPMScheduler:
    return DDPMScheduler(**schedule, clip_sample=False)


def ddim_scheduler(schedule: dict, clip_x0: bool = True) -> DDIMScheduler:
    """DDIM with guided-diffusion's respacing for step counts dividing T
    ('leading' spacing, no offset, final alpha = 1) and optional x0 clipping."""
    return DDIMScheduler(
        **schedule,
        clip_sample=clip_x0,
        clip_sample_range=1.0,
        set_alpha_to_one=True,
        steps_offset=0,
        timestep_spacing="leading",
    )


def save_score_model(path, unet: UNet2DModel, cfg: dict, image_size: int, metrics: dict) -> None:
    from fudbench.core.io import torch_save

    torch_save(
        path,
        {
            "kind": "score_model",
            "cfg": cfg,
            "image_size": image_size,
            "schedule": schedule_config(cfg),
            "state_dict": unet.state_dict(),
            "metrics": metrics,
        },
    )


def save_score_model_pointer(path, weights, unet_config: dict, schedule: dict, source: dict) -> None:
    """A small score-model checkpoint that points at converted weights (a
    safetensors file beside it): a 2.2 GB model is not copied into every run."""
    from fudbench.core.io import torch_save

    weights = Path(weights)
    if weights.parent.resolve() != Path(path).parent.resolve():
        raise ValueError(f"the weights {weights} must lie beside the pointer checkpoint {path}")
    torch_save(
        path,
        {
            "kind": "score_model",
            "weights": weights.name,
            "unet_config": dict(unet_config),
            "image_size": unet_config["sample_size"],
            "schedule": schedule,
            "source": source,
            "weights_bytes": weights.stat().st_size,
        },
    )


def load_score_model(path, device="cpu"):
    """Returns (unet in eval mode, schedule dict)."""
    from fudbench.models.checkpoints import load_checkpoint

    ckpt = load_checkpoint(path, kind="score_model")
    if "weights" in ckpt:  # pointer to converted (guided-diffusion) weights
        from fudbench.models.guided_diffusion import load_converted

        weights = Path(path).parent / ckpt["weights"]
        if weights.is_file() and weights.stat().st_size != ckpt["weights_bytes"]:
            raise RuntimeError(
                f"{weights} has {weights.stat().st_size} bytes, the checkpoint {path} expects "
                f"{ckpt['weights_bytes']}: delete both and rerun the workflow to convert again"
            )
        return load_converted(weights, ckpt["unet_config"], device), ckpt["schedule"]
    unet = build_unet(ckpt["cfg"], ckpt["image_size"])
    unet.load_state_dict(ckpt["state_dict"])
    unet.eval().requires_grad_(False)
    return unet.to(device), ckpt["schedule"]
