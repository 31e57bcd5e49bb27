"""The FUD sampler's parts (fudbench.imputers.diffusion): settings and config
agree, the null guidance part, the constraint parts, the two builders."""

import dataclasses

import pytest
import torch
from jsonschema import Draft202012Validator

from fudbench.config.validate import load_yaml, with_entry_schemas
from fudbench.evaluators.faithfulness.fud import MASK_SETTINGS
from fudbench.imputers.base import ImputeContext
from fudbench.imputers.diffusion import (
    FUD_SAMPLER_SETTINGS,
    PLAIN_SAMPLER_SETTINGS,
    ConstraintSettings,
    DDIMRenoiseConstraint,
    DiffusionImputer,
    FreshRenoiseConstraint,
    HardConstraint,
    NoGuidance,
    SoftConstraint,
    fud_sampler,
    plain_sampler,
    settings_defaults,
)
from fudbench.imputers.resolution import ResizedDiffusionImputer

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)


def _inputs(n=3, size=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, 3, size, size, generator=g), (torch.rand(n, 1, size, size, generator=g) < 0.5).float()


@pytest.fixture(scope="module")
def schema(repo):
    """The schema the default config is validated with (evaluator schemas included)."""
    return with_entry_schemas(load_yaml(repo / "config/schema.yaml"), load_yaml(repo / "config/config.yaml"))


def _find(node, name):
    """The first object schema named `name` anywhere in the schema."""
    if isinstance(node, dict):
        if isinstance(node.get(name), dict) and "properties" in node[name]:
            return node[name]
        node = list(node.values())
    if isinstance(node, list):
        return next((found for n in node if (found := _find(n, name)) is not None), None)
    return None


# --- settings: the dataclasses and the config schema agree ---------------------


def test_fud_settings_and_config_schema_agree(schema):
    fud = schema["properties"]["evaluators"]["properties"]["fud"]
    defaults = settings_defaults(FUD_SAMPLER_SETTINGS)
    # batch_size, symmetric, noise_draw and the mask settings: the evaluator's own; method: any entry's alias key
    assert set(fud["properties"]) - {"method"} == set(defaults) | {
        "batch_size",
        "symmetric",
        "noise_draw",
        *MASK_SETTINGS,
    }
    errors = [e.message for e in Draft202012Validator(fud).iter_errors({**defaults, "batch_size": 1})]
    assert errors == []


def test_plain_settings_and_imputer_options_schema_agree(schema):
    from fudbench.imputers.factory import DEFAULTS

    plain = _find(schema, "diffusion_plain")
    defaults = settings_defaults(PLAIN_SAMPLER_SETTINGS)
    assert set(plain["properties"]) == set(defaults) and DEFAULTS["diffusion_plain"] == defaults
    assert list(Draft202012Validator(plain).iter_errors(defaults)) == []


def test_each_default_has_one_home():
    fields = [f.name for part in FUD_SAMPLER_SETTINGS for f in dataclasses.fields(part)]
    assert len(fields) == len(set(fields))
    assert settings_defaults(FUD_SAMPLER_SETTINGS)["steps"] == 100  # the paper
    assert settings_defaults(PLAIN_SAMPLER_SETTINGS) == {"steps": 50, "clip_x0": True, "known": "clean"}


def test_shipped_fud_config_builds_a_sampler(repo, tiny_unet):
    fud = load_yaml(repo / "config/config.yaml")["evaluators"]["fud"]
    sampler = fud_sampler(*tiny_unet, {k: v for k, v in fud.items() if k != "batch_size"})
    assert sampler.steps == fud["steps"]


def test_problems_name_the_config_key():
    bad = ConstraintSettings(constraint="soft", known="renoise", soft_sigma=0)
    assert bad.problems("evaluators.fud") == [
        "config key 'evaluators.fud.known': constraint 'soft' observes the clean kept pixels; use known: clean with it",
        "config key 'evaluators.fud.soft_sigma': must be > 0, got 0",
    ]


# --- builders ---------------------------------------------------------------------


def test_builders_reject_unknown_keys_naming_the_allowed_ones(tiny_unet):
    with pytest.raises(
        ValueError,
        match=r"unknown setting\(s\) \['stepz'\]; allowed: amp_dtype, channels_last, "
        r"clip_x0, compile, constraint, guidance_scale, guidance_schedule, "
        r"guidance_start, jump_length, known, resamplings, "
        r"soft_sigma, steps",
    ):
        fud_sampler(*tiny_unet, {"stepz": 3})
    with pytest.raises(
        ValueError,
        match=r"diffusion_plain: unknown setting\(s\) \['guidance_scale'\]; "
        r"allowed: clip_x0, known, steps",
    ):
        plain_sampler(*tiny_unet, {"guidance_scale": 0.0})


def test_plain_and_fud_share_the_loop(tiny_unet):
    fud, plain = fud_sampler(*tiny_unet, {}), plain_sampler(*tiny_unet, {})
    assert type(fud) is type(plain) is DiffusionImputer
    assert (fud.name, fud.steps, plain.name, plain.steps) == ("diffusion", 100, "diffusion_plain", 50)
    assert fud.stochastic and plain.stochastic
    assert isinstance(plain.guidance, NoGuidance) and plain.guided_timesteps == []
    assert isinstance(plain.constraint, HardConstraint) and plain.copies_kept_pixels
    assert isinstance(plain_sampler(*tiny_unet, {"known": "renoise"}).constraint, DDIMRenoiseConstraint)  # alias
    assert isinstance(plain_sampler(*tiny_unet, {"known": "renoise_fresh"}).constraint, FreshRenoiseConstraint)


def test_null_guidance_equals_guidance_scale_zero(tiny_unet, brightness_classifier):
    x, mask = _inputs()
    ctx = ImputeContext(brightness_classifier, torch.tensor([0, 1, 0]), [5, 6, 7])
    settings = {"steps": 4, "guidance_start": 1.0, "amp_dtype": None, "channels_last": False}  # as plain_sampler
    off = fud_sampler(*tiny_unet, {**settings, "guidance_scale": 0.0})
    null = DiffusionImputer(off.runtime, off.ddim, NoGuidance(), off.constraint)
    guided = fud_sampler(*tiny_unet, settings)
    assert torch.equal(null.fill(x, mask, ctx), off.fill(x, mask, ctx))
    assert not torch.equal(guided.fill(x, mask, ctx), off.fill(x, mask, ctx))
    plain = plain_sampler(*tiny_unet, {"steps": 4})  # the classifier in the context is ignored
    assert torch.equal(plain.fill(x, mask, ctx), off.fill(x, mask, ctx))


def test_with_steps_checks_the_step_count(tiny_unet):
    with pytest.raises(ValueError, match="steps: must be >= 1"):
        fud_sampler(*tiny_unet, {"steps": 4}).with_steps(0)


# --- constraint parts -----------------------------------------------------------------


def _start(part, seeds=(1, 2, 3)):
    x, mask = _inputs(len(seeds))
    clean, m = x * 2 - 1, mask.expand_as(x)
    return part.start(clean, m, list(seeds)), clean, m.bool()


def test_hard_constraint_sets_kept_pixels_to_the_clean_image():
    kept, clean, keep = _start(HardConstraint())
    x_prev = torch.randn_like(clean)
    e = torch.randn_like(clean)
    out = kept.project(x_prev, 0.5)
    assert torch.equal(out[keep], clean[keep]) and torch.equal(out[~keep], x_prev[~keep])
    assert kept.eps(e, x_prev, 0.5) is e


def test_fresh_renoise_draws_kept_pixels_from_q_reproducibly_per_seed():
    a, clean, keep = _start(FreshRenoiseConstraint())
    b, _, _ = _start(FreshRenoiseConstraint())
    x_prev = torch.zeros_like(clean)
    first = [a.project(x_prev, abar) for abar in (0.3, 0.6)]
    assert all(torch.equal(p, q) for p, q in zip(first, [b.project(x_prev, abar) for abar in (0.3, 0.6)]))
    assert not torch.equal(first[0], first[1])  # fresh noise every step
    assert not torch.equal(first[0][keep], clean[keep])  # noised at abar < 1 ...
    assert torch.equal(a.project(x_prev, 1.0)[keep], clean[keep])  # ... clean at abar = 1
    assert torch.equal(first[0][~keep], x_prev[~keep])
    single = FreshRenoiseConstraint().start(clean[1:2], keep[1:2].float(), [2])  # per sample: batch-independent
    assert torch.equal(single.project(x_prev[1:2], 0.3), first[0][1:2])
    other, _, _ = _start(FreshRenoiseConstraint(), seeds=(4, 5, 6))
    assert not torch.equal(other.project(x_prev, 0.3)[keep], first[0][keep])


def test_ddim_renoise_puts_kept_pixels_on_the_path_of_x_T_s_own_noise():
    """One eps per sample, the x_T draw: the kept pixels at abar are sqrt(abar) x +
    sqrt(1 - abar) eps at every level (no new noise), x at abar = 1."""
    kept, clean, keep = _start(DDIMRenoiseConstraint())
    eps = torch.randn(clean.shape, generator=torch.Generator().manual_seed(9))
    x_t = kept.initial(eps, 0.2)
    torch.testing.assert_close(x_t[keep], (0.2**0.5 * clean + 0.8**0.5 * eps)[keep])
    assert torch.equal(x_t[~keep], eps[~keep])
    x_prev = torch.zeros_like(clean)
    for abar in (0.3, 0.6, 0.3):  # the same abar gives the same values: nothing is drawn per step
        expected = abar**0.5 * clean + (1 - abar) ** 0.5 * eps
        torch.testing.assert_close(kept.project(x_prev, abar)[keep], expected[keep])
    assert torch.equal(kept.project(x_prev, 1.0)[keep], clean[keep])
    assert torch.equal(kept.project(x_prev, 0.5)[~keep], x_prev[~keep])


def test_soft_constraint_pulls_through_eps_and_never_overwrites():
    kept, clean, keep = _start(SoftConstraint(0.5))
    x_t, e = torch.randn_like(clean), torch.zeros_like(clean)
    pulled = kept.eps(e, x_t, 0.75)
    expected = -(0.25**0.5) * (clean - x_t) / 0.25
    torch.testing.assert_close(pulled[keep], expected[keep])
    assert (pulled[~keep] == 0).all()
    assert kept.project(x_t, 0.5) is x_t and not SoftConstraint.exact


def test_resolution_bridge_uses_the_declared_interface(tiny_unet):
    inner = plain_sampler(*tiny_unet, {"steps": 2})
    bridge = ResizedDiffusionImputer(inner, 8)
    assert (bridge.name, bridge.stochastic) == ("diffusion_plain", True)
    assert bridge.bytes_per_sample((3, 6, 6), "cpu") is None
    inner.bytes_per_sample = lambda shape, device: shape  # what the bridge asks the inner sampler for
    assert bridge.bytes_per_sample((3, 6, 6), "cpu") == (3, 8, 8)
    x, mask = _inputs(size=6)
    soft = ResizedDiffusionImputer(fud_sampler(*tiny_unet, {"steps": 2, "constraint": "soft"}), 8)
    out = soft.fill(x, mask, ImputeContext(seeds=[1, 2, 3]))
    keep = mask.bool().expand_as(x)
    assert not torch.equal(out[keep], x[keep])  # soft: kept pixels are the sampler's own, not composed
