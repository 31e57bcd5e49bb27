"""guided-diffusion -> diffusers conversion, checked against a reference forward
pass written here from the ADM architecture (independent of diffusers).

The state dicts are generated in guided-diffusion's key naming: a reduced
config with random weights for numerical checks, and the full 256x256 model on
the meta device (shapes only) for the key and parameter counts.
"""

import math

import pytest
import torch
import torch.nn.functional as F

from fudbench.models.guided_diffusion import (
    ADM256,
    ADM256_PARAMETERS,
    ADMConfig,
    ConversionError,
    build_adm_unet,
    convert_checkpoint,
    convert_state_dict,
    diffusers_config,
    load_into_unet,
    schedule,
)
from fudbench.assets.stand_ins import gd_shapes, random_gd_state  # noqa: F401  (other tests import them from here)

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)

SMALL = ADMConfig(
    image_size=16,
    model_channels=32,
    num_res_blocks=1,
    attention_resolutions=(8,),
    channel_mult=(1, 2),
    num_head_channels=16,
)


# gd_shapes / random_gd_state: guided-diffusion's key names with random tensors (library: the stand-ins)


# --- reference forward of guided-diffusion's UNetModel, from the state dict ---


def _gn(x, sd, p):
    return F.group_norm(x.float(), 32, sd[f"{p}.weight"], sd[f"{p}.bias"], eps=1e-5)


def _res(sd, p, x, emb, up=False, down=False):
    h = F.silu(_gn(x, sd, f"{p}.in_layers.0"))
    if up:
        h, x = F.interpolate(h, scale_factor=2, mode="nearest"), F.interpolate(x, scale_factor=2, mode="nearest")
    if down:
        h, x = F.avg_pool2d(h, 2), F.avg_pool2d(x, 2)
    h = F.conv2d(h, sd[f"{p}.in_layers.2.weight"], sd[f"{p}.in_layers.2.bias"], padding=1)
    e = F.linear(F.silu(emb), sd[f"{p}.emb_layers.1.weight"], sd[f"{p}.emb_layers.1.bias"])[:, :, None, None]
    scale, shift = e.chunk(2, dim=1)
    h = _gn(h, sd, f"{p}.out_layers.0") * (1 + scale) + shift
    h = F.conv2d(F.silu(h), sd[f"{p}.out_layers.3.weight"], sd[f"{p}.out_layers.3.bias"], padding=1)
    if f"{p}.skip_connection.weight" in sd:
        x = F.conv2d(x, sd[f"{p}.skip_connection.weight"], sd[f"{p}.skip_connection.bias"])
    return x + h


def _attention(sd, p, x, head_ch, order="legacy"):
    b, c, hh, ww = x.shape
    qkv = F.conv1d(_gn(x, sd, f"{p}.norm").reshape(b, c, -1), sd[f"{p}.qkv.weight"], sd[f"{p}.qkv.bias"])
    heads, t = c // head_ch, hh * ww
    if order == "legacy":  # guided-diffusion's QKVAttentionLegacy
        q, k, v = qkv.reshape(b * heads, 3 * head_ch, t).split(head_ch, dim=1)
    else:  # QKVAttention
        q, k, v = (z.reshape(b * heads, head_ch, t) for z in qkv.chunk(3, dim=1))
    s = 1 / math.sqrt(math.sqrt(head_ch))
    w = torch.softmax(torch.einsum("bct,bcs->bts", q * s, k * s), dim=-1)
    a = torch.einsum("bts,bcs->bct", w, v).reshape(b, c, t)
    return x + F.conv1d(a, sd[f"{p}.proj_out.weight"], sd[f"{p}.proj_out.bias"]).reshape(b, c, hh, ww)


def gd_forward(sd, adm: ADMConfig, x, t, order="legacy"):
    half = adm.model_channels // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
    args = t[:, None].float() * freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=1)
    emb = F.linear(
        F.silu(F.linear(emb, sd["time_embed.0.weight"], sd["time_embed.0.bias"])),
        sd["time_embed.2.weight"],
        sd["time_embed.2.bias"],
    )
    attn = [2**lv in {adm.image_size // r for r in adm.attention_resolutions} for lv in range(len(adm.channel_mult))]
    h = F.conv2d(x, sd["input_blocks.0.0.weight"], sd["input_blocks.0.0.bias"], padding=1)
    hs, idx = [h], 1
    for level in range(len(adm.channel_mult)):
        for _ in range(adm.num_res_blocks):
            h = _res(sd, f"input_blocks.{idx}.0", h, emb)
            if attn[level]:
                h = _attention(sd, f"input_blocks.{idx}.1", h, adm.num_head_channels, order)
            hs.append(h)
            idx += 1
        if level != len(adm.channel_mult) - 1:
            h = _res(sd, f"input_blocks.{idx}.0", h, emb, down=True)
            hs.append(h)
            idx += 1
    h = _res(sd, "middle_block.0", h, emb)
    h = _attention(sd, "middle_block.1", h, adm.num_head_channels, order)
    h = _res(sd, "middle_block.2", h, emb)
    idx = 0
    for level in reversed(range(len(adm.channel_mult))):
        for i in range(adm.num_res_blocks + 1):
            h = _res(sd, f"output_blocks.{idx}.0", torch.cat([h, hs.pop()], dim=1), emb)
            sub = 1
            if attn[level]:
                h = _attention(sd, f"output_blocks.{idx}.1", h, adm.num_head_channels, order)
                sub = 2
            if level and i == adm.num_res_blocks:
                h = _res(sd, f"output_blocks.{idx}.{sub}", h, emb, up=True)
            idx += 1
    return F.conv2d(F.silu(_gn(h, sd, "out.0")), sd["out.2.weight"], sd["out.2.bias"], padding=1)


@pytest.fixture(scope="module")
def small():
    state = random_gd_state(SMALL)
    torch.manual_seed(1)
    x, t = torch.randn(2, 3, 16, 16), torch.tensor([7, 640])
    with torch.no_grad():
        ref = gd_forward(state, SMALL, x, t)
    return state, x, t, ref


def _diffusers_out(state, x, t, order):
    unet = load_into_unet(convert_state_dict(state, SMALL, order), diffusers_config(SMALL))
    with torch.no_grad():
        return unet(x, t).sample


def test_converted_model_matches_reference_forward(small):
    state, x, t, ref = small
    out = _diffusers_out(state, x, t, "legacy")
    assert out.shape == (2, 6, 16, 16)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)


def test_plain_chunk_of_legacy_qkv_is_detected_as_wrong(small):
    """Splitting the legacy layout with chunk(3) loads strictly but computes
    something else; the reference comparison catches it."""
    state, x, t, ref = small
    wrong = _diffusers_out(state, x, t, "new")
    assert (wrong - ref).abs().max() > 1e-2


def test_new_attention_order_is_supported(small):
    state, x, t, _ = small
    with torch.no_grad():
        ref_new = gd_forward(state, SMALL, x, t, order="new")
    torch.testing.assert_close(_diffusers_out(state, x, t, "new"), ref_new, rtol=1e-4, atol=1e-4)


def test_unknown_and_missing_keys_are_errors(small):
    state = dict(small[0])
    state["label_emb.weight"] = torch.zeros(10, 128)  # a class-conditional checkpoint
    with pytest.raises(ConversionError, match=r"label_emb\.weight.*unconditional"):
        convert_state_dict(state, SMALL)
    state = dict(small[0])
    del state["middle_block.1.proj_out.bias"]
    with pytest.raises(ConversionError, match=r"do not fit.*proj_out|to_out"):
        load_into_unet(convert_state_dict(state, SMALL), diffusers_config(SMALL))


def test_checkpoint_file_round_trip(small, tmp_path):
    """The .pt file in guided-diffusion's naming -> safetensors -> the score-model pointer."""
    from fudbench.models.score import load_score_model, save_score_model_pointer

    state, x, t, ref = small
    torch.save({k: v.half() for k, v in state.items()}, tmp_path / "gd.pt")  # released as fp16-trained
    config = convert_checkpoint(tmp_path / "gd.pt", tmp_path / "score_model.safetensors", SMALL)
    save_score_model_pointer(
        tmp_path / "score_model.pt", tmp_path / "score_model.safetensors", config, schedule(), {"path": "gd.pt"}
    )
    unet, sched = load_score_model(tmp_path / "score_model.pt")
    assert next(unet.parameters()).dtype == torch.float32 and sched["num_train_timesteps"] == 1000
    half_state = {k: v.half().float() for k, v in state.items()}
    with torch.no_grad():
        torch.testing.assert_close(unet(x, t).sample, gd_forward(half_state, SMALL, x, t), rtol=1e-4, atol=1e-4)
    assert not list(tmp_path.glob("*.part"))


def test_truncated_checkpoint_is_a_clear_error(tmp_path):
    (tmp_path / "gd.pt").write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(ConversionError, match=r"gd\.pt could not be read.*fetch it again"):
        convert_checkpoint(tmp_path / "gd.pt", tmp_path / "out.safetensors", SMALL)
    assert not (tmp_path / "out.safetensors").exists()


def test_full_size_config_on_meta_device():
    """The 256x256 uncond model: exact parameter count, 566 keys in, 630 out,
    every converted shape equal to the diffusers model's."""
    config = diffusers_config(ADM256)
    unet = build_adm_unet(config, device="meta")
    assert sum(p.numel() for p in unet.parameters()) == ADM256_PARAMETERS == 552_814_086
    shapes = gd_shapes(ADM256)
    assert sum(math.prod(s) for s in shapes.values()) == ADM256_PARAMETERS
    meta_state = {k: torch.empty(s, device="meta") for k, s in shapes.items()}
    converted = convert_state_dict(meta_state, ADM256)
    assert (len(meta_state), len(converted)) == (566, 630)
    expected = {k: tuple(v.shape) for k, v in unet.state_dict().items()}
    assert {k: tuple(v.shape) for k, v in converted.items()} == expected


def test_schedule_is_adm_linear():
    s = schedule()
    assert (s["beta_start"], s["beta_end"], s["beta_schedule"]) == (1e-4, 0.02, "linear")


def test_converted_model_is_fp32_and_runs_under_bf16_autocast(small):
    """Loaded in fp32; autocast (what the sampler's amp_dtype uses on a GPU) stays close."""
    state, x, t, ref = small
    unet = load_into_unet(convert_state_dict(state, SMALL), diffusers_config(SMALL))
    assert {p.dtype for p in unet.parameters()} == {torch.float32}
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        out = unet(x, t).sample.float()
    assert ((out - ref).norm() / ref.norm()) < 0.05


def test_missing_checkpoint_and_missing_converted_weights(small, tmp_path):
    from fudbench.models.guided_diffusion import verify_checkpoint
    from fudbench.models.score import load_score_model, save_score_model_pointer

    with pytest.raises(FileNotFoundError, match=r"(?s)gd\.pt not found.*guided_diffusion\.checkpoint.*curl -L -o"):
        verify_checkpoint(tmp_path / "gd.pt")
    torch.save(small[0], tmp_path / "gd.pt")
    with pytest.raises(ConversionError, match=r"checksum mismatch .*gd\.pt.*fetch it again"):
        verify_checkpoint(tmp_path / "gd.pt", "f" * 64)
    config = convert_checkpoint(tmp_path / "gd.pt", tmp_path / "score_model.safetensors", SMALL)
    save_score_model_pointer(tmp_path / "score_model.pt", tmp_path / "score_model.safetensors", config, schedule(), {})
    (tmp_path / "score_model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match=r"score_model\.safetensors are missing.*convert_score_model"):
        load_score_model(tmp_path / "score_model.pt")
