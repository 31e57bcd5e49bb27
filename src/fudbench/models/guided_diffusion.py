"""guided-diffusion (ADM, Dhariwal & Nichol 2021) checkpoints in diffusers' UNet2DModel.

The paper profile's score model is openai's `256x256_diffusion_uncond.pt`. This
module maps its state dict onto a diffusers UNet2DModel whose config matches
the ADM architecture exactly (../shared/spec/diffusion.md), so the FUD sampler
runs it like any other score model:

    input_blocks / middle_block / output_blocks -> down_blocks / mid_block / up_blocks
    ResBlock in_layers.0/2, emb_layers.1, out_layers.0/3, skip_connection
        -> norm1/conv1, time_emb_proj, norm2/conv2, conv_shortcut
    AttentionBlock norm, qkv (conv1d 3C x C x 1), proj_out (conv1d)
        -> group_norm, to_q/to_k/to_v (linear), to_out.0 (linear)

The released checkpoints use guided-diffusion's *legacy* attention order: the
qkv rows are laid out [head][q|k|v][head channels], not [q|k|v][head]. Splitting
with a plain chunk(3), as diffusers' consistency-model script does, gives a
model that loads but computes garbage, so the order is an explicit argument.

Importing this module costs nothing heavy: torch, diffusers and safetensors are
imported inside the functions that need them (the Snakefile's asset check
imports the constants).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

ADM256_URL = "https://openaipublic.blob.core.windows.net/diffusion/jul-2021/256x256_diffusion_uncond.pt"
ADM256_FILE = "256x256_diffusion_uncond.pt"
ADM256_PARAMETERS = 552_814_086
ATTENTION_ORDERS = ("legacy", "new")


class ConversionError(RuntimeError):
    """The checkpoint does not match the ADM architecture it is converted for."""


@dataclass(frozen=True)
class ADMConfig:
    """guided-diffusion UNetModel flags (defaults: 256x256_diffusion_uncond)."""

    image_size: int = 256
    in_channels: int = 3
    model_channels: int = 256
    out_channels: int = 6  # learn_sigma: eps (0-2) and variance interpolation (3-5)
    num_res_blocks: int = 2
    attention_resolutions: tuple = (32, 16, 8)
    channel_mult: tuple = (1, 1, 2, 2, 4, 4)
    num_head_channels: int = 64
    norm_groups: int = 32  # guided-diffusion's GroupNorm32

    @property
    def attention_levels(self) -> list[bool]:
        """Whether each resolution level has attention (ds = 2**level in the resolutions)."""
        ds = {self.image_size // r for r in self.attention_resolutions}
        return [2**level in ds for level in range(len(self.channel_mult))]

    @property
    def block_out_channels(self) -> tuple[int, ...]:
        return tuple(self.model_channels * m for m in self.channel_mult)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["attention_resolutions"] = list(self.attention_resolutions)
        d["channel_mult"] = list(self.channel_mult)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "ADMConfig":
        d = dict(d)
        d["attention_resolutions"] = tuple(d["attention_resolutions"])
        d["channel_mult"] = tuple(d["channel_mult"])
        return cls(**d)


ADM256 = ADMConfig()


def diffusers_config(adm: ADMConfig = ADM256) -> dict:
    """UNet2DModel keyword arguments equivalent to an ADM with resblock_updown
    and use_scale_shift_norm (both true for every released guided-diffusion model)."""
    attn = adm.attention_levels
    return {
        "sample_size": adm.image_size,
        "in_channels": adm.in_channels,
        "out_channels": adm.out_channels,
        "layers_per_block": adm.num_res_blocks,
        "block_out_channels": adm.block_out_channels,
        "down_block_types": tuple("AttnDownBlock2D" if a else "ResnetDownsampleBlock2D" for a in attn),
        "up_block_types": tuple("AttnUpBlock2D" if a else "ResnetUpsampleBlock2D" for a in reversed(attn)),
        "attention_head_dim": adm.num_head_channels,
        "resnet_time_scale_shift": "scale_shift",
        "downsample_type": "resnet",
        "upsample_type": "resnet",
        # Without it the mid-block attention has no GroupNorm under scale_shift
        # and the strict load fails.
        "attn_norm_num_groups": adm.norm_groups,
        "norm_num_groups": adm.norm_groups,
        "norm_eps": 1e-5,
        "flip_sin_to_cos": True,  # ADM's timestep embedding is [cos, sin]
        "freq_shift": 0,
        "time_embedding_type": "positional",
    }


def build_adm_unet(config: dict, device="cpu"):
    """UNet2DModel from a diffusers config; device="meta" allocates nothing
    (for counting parameters or loading weights with assign=True)."""
    import torch
    from diffusers import UNet2DModel

    with torch.device(device):
        return UNet2DModel(**config)


def schedule(num_train_timesteps: int = 1000) -> dict:
    """ADM's linear schedule (betas 1e-4 .. 0.02 scaled by 1000 / T), epsilon prediction,
    in the format of fudbench.models.score.schedule_config."""
    scale = 1000 / num_train_timesteps
    return {
        "num_train_timesteps": num_train_timesteps,
        "beta_schedule": "linear",
        "beta_start": 1e-4 * scale,
        "beta_end": 0.02 * scale,
        "prediction_type": "epsilon",
    }


# --- key mapping -----------------------------------------------------------------

_RESNET = {
    "in_layers.0": "norm1",
    "in_layers.2": "conv1",
    "emb_layers.1": "time_emb_proj",
    "out_layers.0": "norm2",
    "out_layers.3": "conv2",
    "skip_connection": "conv_shortcut",
}
_TOP = {
    "time_embed.0": "time_embedding.linear_1",
    "time_embed.2": "time_embedding.linear_2",
    "input_blocks.0.0": "conv_in",
    "out.0": "conv_norm_out",
    "out.2": "conv_out",
}


def block_map(adm: ADMConfig) -> dict[str, tuple[str, str]]:
    """guided-diffusion module prefix -> (diffusers prefix, kind), kind in
    {"resnet", "attention", "plain"}; follows UNetModel's construction order."""
    attn, levels, nrb = adm.attention_levels, len(adm.channel_mult), adm.num_res_blocks
    out = {src: (dst, "plain") for src, dst in _TOP.items()}
    idx = 1
    for level in range(levels):
        for j in range(nrb):
            out[f"input_blocks.{idx}.0"] = (f"down_blocks.{level}.resnets.{j}", "resnet")
            if attn[level]:
                out[f"input_blocks.{idx}.1"] = (f"down_blocks.{level}.attentions.{j}", "attention")
            idx += 1
        if level != levels - 1:  # resblock_updown: downsampling is a ResBlock(down=True)
            out[f"input_blocks.{idx}.0"] = (f"down_blocks.{level}.downsamplers.0", "resnet")
            idx += 1
    out["middle_block.0"] = ("mid_block.resnets.0", "resnet")
    out["middle_block.1"] = ("mid_block.attentions.0", "attention")
    out["middle_block.2"] = ("mid_block.resnets.1", "resnet")
    idx = 0
    for k, level in enumerate(reversed(range(levels))):
        for j in range(nrb + 1):
            out[f"output_blocks.{idx}.0"] = (f"up_blocks.{k}.resnets.{j}", "resnet")
            sub = 1
            if attn[level]:
                out[f"output_blocks.{idx}.1"] = (f"up_blocks.{k}.attentions.{j}", "attention")
                sub = 2
            if level != 0 and j == nrb:
                out[f"output_blocks.{idx}.{sub}"] = (f"up_blocks.{k}.upsamplers.0", "resnet")
            idx += 1
    return out


def split_qkv(weight, bias, n_heads: int, order: str = "legacy"):
    """qkv conv1d (3C, C, 1) weight and (3C,) bias -> [(w, b) for q, k, v] as linear (C, C), (C,)."""
    c = weight.shape[1]
    w = weight.reshape(3 * c, c)
    if order == "legacy":  # rows [head][q|k|v][ch]
        w = w.reshape(n_heads, 3, c // n_heads, c)
        b = bias.reshape(n_heads, 3, c // n_heads)
        return [(w[:, i].reshape(c, c), b[:, i].reshape(c)) for i in range(3)]
    if order == "new":  # rows [q|k|v][head][ch]
        return list(zip(w.chunk(3, dim=0), bias.chunk(3, dim=0)))
    raise ValueError(f"attention order must be one of {ATTENTION_ORDERS}, got {order!r}")


def convert_state_dict(state: dict, adm: ADMConfig = ADM256, attention_order: str = "legacy") -> dict:
    """guided-diffusion state dict -> UNet2DModel state dict (same tensors, reshaped, float32).

    Raises ConversionError naming the keys that no ADM module of `adm` owns."""
    blocks = block_map(adm)
    # Longest prefix first, so "input_blocks.1.0" never matches "input_blocks.1.0x".
    prefixes = sorted(blocks, key=len, reverse=True)
    out, unknown, qkv = {}, [], {}
    for key, tensor in state.items():
        src = next((p for p in prefixes if key.startswith(p + ".")), None)
        if src is None:
            unknown.append(key)
            continue
        dst, kind = blocks[src]
        rest = key[len(src) + 1 :]
        tensor = tensor.float()
        if kind == "plain":
            out[f"{dst}.{rest}"] = tensor
        elif kind == "resnet":
            module, _, param = rest.rpartition(".")
            if module not in _RESNET:
                unknown.append(key)
                continue
            out[f"{dst}.{_RESNET[module]}.{param}"] = tensor
        else:  # attention
            module, _, param = rest.rpartition(".")
            if module == "norm":
                out[f"{dst}.group_norm.{param}"] = tensor
            elif module == "proj_out":
                out[f"{dst}.to_out.0.{param}"] = tensor.reshape(tensor.shape[0], -1) if param == "weight" else tensor
            elif module == "qkv":
                qkv.setdefault(dst, {})[param] = tensor
            else:
                unknown.append(key)
    if unknown:
        shown = ", ".join(unknown[:8]) + (f" (+{len(unknown) - 8} more)" if len(unknown) > 8 else "")
        raise ConversionError(
            f"{len(unknown)} key(s) of the checkpoint belong to no module of the ADM "
            f"architecture being converted ({shown}); is it a guided-diffusion "
            f"{adm.image_size}x{adm.image_size} unconditional model?"
        )
    for dst, p in qkv.items():
        if set(p) != {"weight", "bias"}:
            raise ConversionError(f"attention {dst}: qkv needs a weight and a bias, found {sorted(p)}")
        n_heads = p["weight"].shape[1] // adm.num_head_channels
        for name, (w, b) in zip(("to_q", "to_k", "to_v"), split_qkv(p["weight"], p["bias"], n_heads, attention_order)):
            out[f"{dst}.{name}.weight"] = w.contiguous()
            out[f"{dst}.{name}.bias"] = b.contiguous()
    return out


def load_into_unet(unet_state: dict, config: dict, device="cpu"):
    """Strictly load a converted state dict into a fresh UNet2DModel (fp32, eval, frozen).
    The model is built on the meta device and takes the tensors over (no second copy)."""
    unet = build_adm_unet(config, device="meta")
    try:
        unet.load_state_dict(unet_state, strict=True, assign=True)
    except RuntimeError as exc:
        raise ConversionError(f"the converted weights do not fit the UNet2DModel config: {exc}") from exc
    return unet.to(device).eval().requires_grad_(False)


def read_guided_diffusion_checkpoint(path) -> dict:
    """The original .pt file: a plain state dict of tensors (read without unpickling code)."""
    import torch

    path = Path(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise ConversionError(
            f"{path} could not be read as a PyTorch checkpoint ({type(exc).__name__}: "
            f"{exc}); the download is probably incomplete: delete it and fetch it again "
            f"from {ADM256_URL}"
        ) from exc
    if not isinstance(state, dict) or not all(hasattr(v, "shape") for v in state.values()):
        raise ConversionError(f"{path} is not a guided-diffusion state dict (a dict of tensors)")
    return state


def convert_checkpoint(
    src, dst, adm: ADMConfig = ADM256, attention_order: str = "legacy", source_sha256: str | None = None
) -> dict:
    """Convert a guided-diffusion checkpoint into a safetensors file of UNet2DModel
    weights (written atomically), after a strict load. Returns the diffusers config."""
    from safetensors.torch import save_file

    from fudbench.core.io import atomic_path

    config = diffusers_config(adm)
    state = convert_state_dict(read_guided_diffusion_checkpoint(src), adm, attention_order)
    unet = load_into_unet(state, config)  # strict: every key used, every shape right
    metadata = {
        "format": "diffusers.UNet2DModel",
        "config": json.dumps(config),
        "adm": json.dumps(adm.to_dict()),
        "attention_order": attention_order,
        "source": str(src),
        "source_sha256": source_sha256 or "",
    }
    with atomic_path(dst) as tmp:
        save_file({k: v.contiguous() for k, v in unet.state_dict().items()}, str(tmp), metadata=metadata)
    return config


def load_converted(weights, config: dict, device="cpu"):
    """UNet2DModel from a converted safetensors file (fp32; cast or autocast it on a GPU)."""
    from safetensors.torch import load_file

    weights = Path(weights)
    if not weights.is_file():
        raise FileNotFoundError(
            f"converted score-model weights {weights} are missing; rerun the workflow's "
            f"convert_score_model rule (delete the score_model.pt beside it first)"
        )
    return load_into_unet(load_file(str(weights)), config, device)


def verify_checkpoint(path, sha256: str | None = None, url: str = ADM256_URL) -> str:
    """Check that the downloaded checkpoint exists and, when a sha256 is configured,
    matches it. Returns the file's sha256 (to record in config on first use)."""
    from fudbench.core.fingerprint import file_sha256

    path = Path(path)
    fetch = f"mkdir -p {path.parent} && curl -L -o {path} {url}"
    if not path.is_file():
        raise FileNotFoundError(
            f"guided-diffusion checkpoint {path} not found (config key "
            f"'models.score_model.guided_diffusion.checkpoint'); fetch it with:\n    {fetch}"
        )
    digest = file_sha256(path)
    if sha256 and digest != sha256.lower():
        raise ConversionError(
            f"checksum mismatch for {path}: sha256 {digest}, config "
            f"'models.score_model.guided_diffusion.sha256' says {sha256}; the download is "
            f"corrupt or another file: delete it and fetch it again with:\n    {fetch}"
        )
    return digest
