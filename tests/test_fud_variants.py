"""FUD's variants (docs/evaluators.md, "FUD variants"): the known-pixel rules
(renoise_ddim, alias renoise, and renoise_fresh) from x_T on, RePaint's
resampling, the guidance schedule, whole-region masks (patch, slic) and the
symmetric score, as options of the one FUD evaluator, on tiny models."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from fudbench.analysis.curves import MAIN_CURVE_SCORES, curve_score, derived_scores, per_image_scores
from fudbench.config.validate import ConfigError, validate_config
from fudbench.evaluators import build_evaluator, configured_curves
from fudbench.imputers.base import ImputeContext, Imputer
from fudbench.imputers.diffusion import DDIMSteps, GuidanceSettings, StepSettings, fud_sampler, resample_schedule
from fudbench.imputers.diffusion.guidance import AntiClassGuidance, last_steps_count
from fudbench.imputers.diffusion.loop import _noise_like
from fudbench.core.masks import keep_mask, n_pixels, ranks_from_order, region_order, reverse_order, top_count
from fudbench.models.score import build_unet, save_score_model, schedule_config
from fudbench.protocols import TopKCurve
from fudbench.core.superpixels import segment as superpixels
from fudbench.config.files import resolve_config

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)

SCORE_CFG = {
    "block_out_channels": [8, 16],
    "attention": [False, True],
    "layers_per_block": 1,
    "num_train_timesteps": 100,
    "beta_schedule": "linear",
}


def _images(n=4, size=16, seed=0):
    return torch.rand(n, 3, size, size, generator=torch.Generator().manual_seed(seed))


def _mask(x, keep=0.5, seed=1):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(len(x), 1, *x.shape[-2:], generator=g) < keep).float()


def _oracle(x, target):
    """The brightness classifier's evidence: bright pixels for class 0, dark ones for class 1."""
    return torch.where(target.view(-1, 1, 1, 1) == 0, x, 1 - x)


# --- 1. the known-pixel rules start at the first timestep's noise level; resampling ---------


class RecordingZeroEps(torch.nn.Module):
    """eps = 0, and every x_t the sampler feeds the 'U-Net' is kept."""

    def __init__(self):
        super().__init__()
        self.inputs = []

    def forward(self, x, t):
        self.inputs.append(x.clone())
        return type("Out", (), {"sample": torch.zeros_like(x)})()


def test_fresh_renoise_kept_pixels_are_fresh_draws_from_q_from_x_T_on():
    unet = RecordingZeroEps()
    sampler = fud_sampler(
        unet, schedule_config(SCORE_CFG), {"steps": 4, "guidance_scale": 0.0, "known": "renoise_fresh"}
    )
    assert sampler.timesteps == [75, 50, 25, 0]  # leading spacing: the first sampled t is 75, not T - 1 = 99
    x, seeds = _images(2, 8), [3, 4]
    mask = _mask(x)
    out = sampler.fill(x, mask, ImputeContext(seeds=seeds))
    clean, keep = x * 2 - 1, mask.bool().expand_as(x)
    generators = [torch.Generator().manual_seed(s ^ 0x5EED) for s in seeds]  # the documented seeding
    abar = sampler.ddim.scheduler.alphas_cumprod
    assert len(unet.inputs) == 4
    for t, x_t in zip(sampler.timesteps, unet.inputs):  # the U-Net's input at t: x_T first
        eps = torch.stack([torch.randn(x.shape[1:], generator=g) for g in generators])
        expected = math.sqrt(abar[t]) * clean + math.sqrt(1 - abar[t]) * eps
        torch.testing.assert_close(x_t[keep], expected[keep], atol=1e-6, rtol=0)
    assert (unet.inputs[0][keep] - clean[keep]).abs().mean() > 0.5  # x_T's kept pixels are noise, not x
    torch.testing.assert_close(unet.inputs[0][~keep], _noise_like(x, seeds)[~keep], atol=0, rtol=0)
    assert torch.equal(out[keep], x[keep])  # hard composition at the end


def _kept_inputs(known: str, seeds=(3, 4), steps=4, **more):
    """The U-Net's inputs (x_t at each sampled t) and everything to check their kept pixels."""
    unet = RecordingZeroEps()
    sampler = fud_sampler(
        unet, schedule_config(SCORE_CFG), {"steps": steps, "guidance_scale": 0.0, "known": known, **more}
    )
    x = _images(len(seeds), 8)
    mask = _mask(x)
    out = sampler.fill(x, mask, ImputeContext(seeds=list(seeds)))
    return sampler, unet.inputs, x, mask.bool().expand_as(x), out


@pytest.mark.parametrize("known", ["renoise_ddim", "renoise"])
def test_ddim_renoise_kept_pixels_follow_one_noise_draw_per_sample(known):
    """DDIM's rule (eta = 0): the kept pixels at t are sqrt(abar_t) x + sqrt(1 -
    abar_t) eps with eps the sample's own x_T draw, the same at every step:
    deterministic given the seed, no other noise."""
    sampler, inputs, x, keep, out = _kept_inputs(known)
    eps = _noise_like(x, [3, 4])  # the x_T draw of the filled pixels
    abar = sampler.ddim.scheduler.alphas_cumprod
    assert len(inputs) == 4
    for t, x_t in zip(sampler.timesteps, inputs):
        expected = math.sqrt(abar[t]) * (x * 2 - 1) + math.sqrt(1 - abar[t]) * eps
        torch.testing.assert_close(x_t[keep], expected[keep], atol=1e-6, rtol=0)
    torch.testing.assert_close(inputs[0][~keep], eps[~keep], atol=0, rtol=0)
    assert torch.equal(out[keep], x[keep])
    again = _kept_inputs(known)[1]
    assert all(torch.equal(a, b) for a, b in zip(inputs, again))  # deterministic given the seeds


def test_ddim_and_fresh_renoise_differ_after_x_T():
    """The fresh rule draws new noise for the kept pixels at every step, DDIM's keeps
    x_T's: the U-Net sees other kept pixels from the first step on."""
    _, ddim, _, keep, _ = _kept_inputs("renoise_ddim")
    _, fresh, _, _, _ = _kept_inputs("renoise_fresh")
    assert all(not torch.equal(a[keep], b[keep]) for a, b in zip(ddim, fresh))


def test_resample_schedule_is_repaints():
    """Levels 0..S (S: x_0); jump points S, S - j, ... above j, each used r - 1 times."""
    assert resample_schedule(4, 2, 1) == [("step", k) for k in range(4)]
    ops = resample_schedule(6, 2, 2)
    assert ops == [
        ("step", 0),
        ("step", 1),
        ("step", 2),
        ("step", 3),
        ("jump", 4),
        ("step", 2),
        ("step", 3),
        ("step", 4),
        ("step", 5),
        ("jump", 6),
        ("step", 4),
        ("step", 5),
    ]
    assert sum(op == "step" for op, _ in resample_schedule(25, 5, 3)) == 25 + 2 * 5 * 4  # jump points 25..10
    with pytest.raises(ValueError, match="jump_length"):
        resample_schedule(4, 4, 2)


def test_resampling_with_r_1_is_no_resampling(tiny_unet, brightness_classifier):
    x = _images(2, 8)
    mask, ctx = _mask(x), ImputeContext(brightness_classifier, torch.tensor([0, 1]), [3, 4])
    for known in ("clean", "renoise_ddim", "renoise_fresh"):
        plain = fud_sampler(*tiny_unet, {"steps": 6, "known": known, "guidance_start": 0.5}).fill(x, mask, ctx)
        r1 = fud_sampler(
            *tiny_unet, {"steps": 6, "known": known, "guidance_start": 0.5, "resamplings": 1, "jump_length": 2}
        ).fill(x, mask, ctx)
        assert torch.equal(plain, r1), known


def test_resampling_redoes_steps_after_renoising_with_q(monkeypatch):
    """r = 2, j = 2 at 6 steps: 10 U-Net calls at the schedule's timesteps; a jump from
    level 4 goes back to level 2's timestep, the kept pixels at their rule there."""
    import fudbench.imputers.diffusion.loop as loop

    jumps = []
    real = loop.renoise
    monkeypatch.setattr(loop, "renoise", lambda *a: jumps.append(a[1:3]) or real(*a))
    sampler, inputs, x, keep, out = _kept_inputs("clean", steps=6, resamplings=2, jump_length=2)
    ts = sampler.timesteps
    assert len(inputs) == 10 and torch.equal(out[keep], x[keep])
    abar = sampler.ddim.level_abar
    assert jumps == [(abar(4), abar(2)), (abar(6), abar(4))] and abar(6) == 1.0
    assert inputs[4][keep].equal((x * 2 - 1)[keep])  # known: clean: the re-noised x_t's kept pixels are x again
    # the redone steps see other (re-noised) inputs at the same timesteps
    assert not torch.equal(inputs[4], inputs[2]) and not torch.equal(inputs[8], inputs[6])
    assert sampler.schedule[4] == ("jump", 4) and ts[2] == ts[sampler.schedule[5][1]]


@pytest.mark.parametrize("known", ["clean", "renoise_ddim", "renoise_fresh"])
@pytest.mark.parametrize("resamplings", [1, 3])
def test_kept_pixels_exact_at_the_end_in_every_mode(tiny_unet, brightness_classifier, known, resamplings):
    x = _images(3, 8)
    mask = _mask(x, keep=0.4)
    ctx = ImputeContext(brightness_classifier, torch.tensor([0, 1, 0]), [5, 6, 7])
    sampler = fud_sampler(
        *tiny_unet, {"steps": 6, "known": known, "guidance_start": 0.5, "resamplings": resamplings, "jump_length": 2}
    )
    out, distances = sampler.sample(x, mask, ctx, trace=True)
    keep = mask.bool().expand_as(x)
    assert torch.equal(out[keep], x[keep])
    assert distances.shape == (3, 1 + sum(op == "step" for op, _ in sampler.schedule))
    single = torch.cat(
        [
            sampler.fill(
                x[i : i + 1], mask[i : i + 1], ImputeContext(brightness_classifier, torch.tensor([int(c)]), [s])
            )
            for i, (c, s) in enumerate(zip([0, 1, 0], [5, 6, 7]))
        ]
    )
    torch.testing.assert_close(out, single, atol=1e-5, rtol=1e-5)  # batch-independent, jumps included


def test_resampling_settings_are_checked(tiny_unet):
    from fudbench.imputers.diffusion import ConstraintSettings

    assert ConstraintSettings(resamplings=0, jump_length=0).problems("evaluators.fud") == [
        "config key 'evaluators.fud.resamplings': must be >= 1, got 0",
        "config key 'evaluators.fud.jump_length': must be >= 1, got 0",
    ]
    with pytest.raises(ValueError, match=r"jump_length \(5\) must be below the number of DDIM steps \(5\)"):
        fud_sampler(*tiny_unet, {"steps": 5, "resamplings": 2, "jump_length": 5})
    from fudbench.evaluators import spec  # the config check says it before any job runs

    assert spec("fud").check({"steps": 5, "resamplings": 2, "jump_length": 5}, "evaluators.fud_repaint") == [
        "config key 'evaluators.fud_repaint.jump_length': must be below steps (5) for resamplings (2) to resample "
        "anything, got 5"
    ]


def test_clean_start_is_the_clean_image_and_renoise_is_batch_independent(tiny_unet):
    unet = RecordingZeroEps()
    x, mask = _images(2, 8), _mask(_images(2, 8))
    fud_sampler(unet, schedule_config(SCORE_CFG), {"steps": 4, "guidance_scale": 0.0}).fill(
        x, mask, ImputeContext(seeds=[3, 4])
    )
    keep = mask.bool().expand_as(x)
    assert torch.equal(unet.inputs[0][keep], (x * 2 - 1)[keep])
    renoise = fud_sampler(*tiny_unet, {"steps": 5, "guidance_scale": 0.0, "known": "renoise"})
    batched = renoise.fill(x, mask, ImputeContext(seeds=[3, 4]))
    single = torch.cat(
        [renoise.fill(x[i : i + 1], mask[i : i + 1], ImputeContext(seeds=[s])) for i, s in enumerate([3, 4])]
    )
    torch.testing.assert_close(batched, single, atol=1e-5, rtol=1e-5)


# --- 2. guidance schedule ------------------------------------------------------------------

GUIDED = {  # T = 1000, leading spacing: steps -> guided timesteps
    "threshold": {10: [0], 25: [40, 0], 50: [40, 20, 0], 100: [40, 30, 20, 10, 0]},
    "last_steps": {
        10: [400, 300, 200, 100, 0],
        25: [160, 120, 80, 40, 0],
        50: [80, 60, 40, 20, 0],
        100: [40, 30, 20, 10, 0],
    },
}


@pytest.mark.parametrize("schedule", list(GUIDED))
def test_guided_timesteps_at_10_25_50_100_steps(schedule):
    cfg = {**SCORE_CFG, "num_train_timesteps": 1000}
    guidance = AntiClassGuidance(GuidanceSettings(guidance_start=0.05, guidance_schedule=schedule), 1000)
    for steps, expected in GUIDED[schedule].items():
        ddim = DDIMSteps(schedule_config(cfg), StepSettings(steps=steps))
        assert guidance.guided_timesteps(ddim.timesteps) == expected, steps
    # effective guided steps: t > 0 (at t = 0 the term moves x_0 by 1e-4 s times the gradient)
    effective = {steps: sum(t > 0 for t in ts) for steps, ts in GUIDED[schedule].items()}
    expected = {10: 0, 25: 1, 50: 2, 100: 4} if schedule == "threshold" else dict.fromkeys(GUIDED[schedule], 4)
    assert effective == expected


def test_last_steps_count_and_edge_cases():
    assert [last_steps_count(s) for s in (0.0, 0.001, 0.05, 0.07, 0.25, 1.0)] == [0, 1, 5, 7, 25, 100]
    guidance = AntiClassGuidance(GuidanceSettings(guidance_start=0.05, guidance_schedule="last_steps"), 1000)
    assert guidance.guided_timesteps([750, 500, 250, 0]) == [750, 500, 250, 0]  # fewer steps than n: all guided
    off = AntiClassGuidance(GuidanceSettings(guidance_start=0.0, guidance_schedule="last_steps"), 1000)
    assert off.guided_timesteps([750, 500, 250, 0]) == []


@pytest.mark.parametrize("schedule", list(GUIDED))
def test_the_loop_guides_exactly_the_guided_timesteps(tiny_unet, brightness_classifier, monkeypatch, schedule):
    sampler = fud_sampler(*tiny_unet, {"steps": 10, "guidance_schedule": schedule})
    guided_now, seen = [], []
    real = sampler.guidance.eps

    def spy(*args):
        guided_now.append(True)
        return real(*args)

    def after_step(i, t, x_t):  # called after each step: was that step guided?
        if guided_now:
            seen.append(t)
        guided_now.clear()

    monkeypatch.setattr(sampler.guidance, "eps", spy)
    x = _images(2, 8)
    sampler.sample(x, _mask(x), ImputeContext(brightness_classifier, torch.tensor([0, 1]), [1, 2]), callback=after_step)
    # T = 100, 10 steps, guidance_start 0.05: threshold guides t < 5; last_steps the last ceil(100 * 0.05) = 5
    assert seen == sampler.guided_timesteps == ([0] if schedule == "threshold" else [40, 30, 20, 10, 0])


# --- 3. whole-region masks -------------------------------------------------------------------


def _region_masks(x, scores, labels, fractions, bottom=False):
    order, cuts = region_order(
        [np.bincount(lab.ravel(), s.ravel()) / np.bincount(lab.ravel()) for s, lab in zip(scores.numpy(), labels)],
        labels,
        list(range(len(x))),
    )
    if bottom:
        order, cuts = reverse_order(order, cuts)
    ranks = ranks_from_order(order)
    return [keep_mask(ranks, f, "keep", x.shape[-2:], cuts) for f in fractions], cuts


@pytest.mark.parametrize("method, bottom", [("squares", False), ("slic", False), ("slic", True)])
def test_region_masks_are_whole_regions_in_rank_order_with_monotone_fractions(method, bottom):
    x = _images(3)
    labels = superpixels(x.numpy(), method, n_segments=12, square_side=4)
    scores = torch.rand(3, 16, 16, generator=torch.Generator().manual_seed(5))
    fractions = [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0]
    masks, cuts = _region_masks(x, scores, labels, fractions, bottom)
    for i, lab in enumerate(labels):
        counts = [int(m[i].sum()) for m in masks]
        assert counts == [top_count(f, 256, cuts[i]) for f in fractions]
        assert counts == sorted(counts) and counts[0] == 0 and counts[-1] == 256
        largest = np.bincount(lab.ravel()).max()
        assert all(n_pixels(f, 256) <= k < n_pixels(f, 256) + largest for f, k in zip(fractions[1:-1], counts[1:-1]))
        rel = np.bincount(lab.ravel(), scores[i].numpy().ravel()) / np.bincount(lab.ravel())
        for m in masks:
            kept = m[i, 0].numpy().astype(bool)
            whole = {r: kept[lab == r] for r in np.unique(lab)}
            assert all(v.all() or not v.any() for v in whole.values())  # unions of whole regions
            inside = [rel[r] for r, v in whole.items() if v.all()]
            outside = [rel[r] for r, v in whole.items() if not v.any()]
            if inside and outside:  # ... taken in rank order
                assert (min(inside) >= max(outside)) if not bottom else (max(inside) <= min(outside))


class CheckedFill(Imputer):
    """The FUD sampler, checking that every fill keeps the kept pixels exactly, and recording the masks."""

    stochastic = True

    def __init__(self, inner):
        self.inner, self.masks = inner, []

    def fill(self, x, keep_mask, context):
        out = self.inner.fill(x, keep_mask, context)
        keep = keep_mask.bool().expand_as(x)
        assert torch.equal(out[keep], x[keep])
        self.masks.append(keep_mask.clone())
        return out


@pytest.mark.parametrize(
    "sampler_settings, granularity",
    [
        ({}, "patch"),
        ({"known": "renoise"}, "slic"),
        ({"guidance_schedule": "last_steps"}, "pixel"),
        ({"known": "renoise_fresh", "guidance_schedule": "last_steps"}, "patch"),
        ({"known": "renoise_ddim", "resamplings": 2, "jump_length": 1}, "pixel"),
    ],
)
def test_every_variant_keeps_pixels_exactly_and_records_the_actual_kept_fraction(
    tiny_unet, brightness_classifier, sampler_settings, granularity
):
    unet, schedule = tiny_unet
    imputer = CheckedFill(fud_sampler(unet, schedule, {"steps": 3, "guidance_start": 0.5, **sampler_settings}))
    x = _images(2)
    y = brightness_classifier(x).argmax(1)
    fractions = [0.1, 0.3, 0.6, 0.9]
    curve = TopKCurve("fud", fractions, batch_size=4, granularity=granularity, n_segments=12, bottom_curve="fud_bottom")
    records = curve.run(brightness_classifier, x, y, torch.rand(2, 3, 16, 16), imputer, [7, 8], (0, "k")).records
    assert len(imputer.masks) == 4 and set(records["curve"]) == {"fud", "fud_bottom"}  # 2 curves x 2 batches
    fills = torch.cat(imputer.masks)  # in item order: top (image-major), then bottom
    actual = fills.flatten(1).mean(1).numpy()
    assert np.array_equal(records["kept"].to_numpy(), actual.astype(records["kept"].dtype))
    for _, g in records.groupby(["curve", "image"]):
        assert g["kept"].is_monotonic_increasing
        if granularity == "pixel":
            assert g["kept"].tolist() == [n_pixels(f, 256) / 256 for f in fractions]


# --- 4. the symmetric score, aliased ------------------------------------------------------------


@pytest.fixture(scope="module")
def score_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("fud_variants") / "score.pt"
    torch.manual_seed(0)
    save_score_model(path, build_unet(SCORE_CFG, 16).eval(), SCORE_CFG, 16, {})
    return path


def _scores(records, explainer):
    records = records.assign(model="bright", explainer=explainer)
    per_image = per_image_scores(records)
    return pd.concat([per_image, derived_scores(records, per_image)], ignore_index=True)


def test_symmetric_alias_writes_top_bottom_and_the_derived_score(score_model, brightness_classifier):
    settings = {"method": "fud", "symmetric": True, "steps": 3, "batch_size": 32}
    evaluator = build_evaluator(
        "fud_sym",
        settings,
        {"ratios": [0.0, 0.2, 0.5, 0.8], "reduction": "abs_sum"},
        {"score_model": score_model},
        "cpu",
    )
    x = _images(6)
    y = brightness_classifier(x).argmax(1)
    ids = list(range(10, 16))
    scores = {}
    for name, attribution in {"oracle": _oracle(x, y), "random": torch.rand(x.shape)}.items():
        records, samples = evaluator.run(brightness_classifier, x, y, attribution, ids, (0, "evaluate", "m", "fud_sym"))
        assert set(records["curve"]) == {"fud@fud_sym", "fud_bottom@fud_sym"}
        assert set(samples) == {"fud@fud_sym", "removed_fud@fud_sym"}
        top, bottom = (
            records[records["curve"] == c].set_index(["image", "step"]) for c in ("fud@fud_sym", "fud_bottom@fud_sym")
        )
        # paired noise: at rho = 0 both keep nothing, so the same seeds give the same fill
        assert top.xs(0, level="step")["confidence"].equals(bottom.xs(0, level="step")["confidence"])
        s = _scores(records, name).pivot(index="image", columns="curve", values="score").astype(float)
        assert list(s.columns) == ["fud@fud_sym", "fud_bottom@fud_sym", "fud_symmetric@fud_sym"]
        np.testing.assert_allclose(s["fud_symmetric@fud_sym"], s["fud@fud_sym"] - s["fud_bottom@fud_sym"])
        scores[name] = s["fud_symmetric@fud_sym"].mean()
    assert scores["oracle"] > 0.2 and abs(scores["random"]) < scores["oracle"] / 4


def test_symmetric_curves_are_known_by_name_and_table_7_is_unchanged():
    assert MAIN_CURVE_SCORES == ["fud", "insertion", "deletion", "sensitivity_n", "infidelity"]
    assert curve_score("fud_symmetric@fud_sym")[:2] == ("FUD symmetric [fud_sym]", True)
    assert curve_score("fud_bottom")[:2] == ("FUD bottom", False)
    curves = configured_curves({"fud": {}, "fud_sym": {"method": "fud", "symmetric": True}})
    assert {"fud", "fud@fud_sym", "fud_bottom@fud_sym", "fud_symmetric@fud_sym"} == set(curves)
    assert curves["fud_symmetric@fud_sym"].table == "appendix_scores" and curves["fud_bottom@fud_sym"].table is None


# --- 5. config validation ------------------------------------------------------------------------


def _config(repo, **evaluators):
    """The smoke config with more evaluator entries."""
    config = resolve_config([repo / "config/smoke.yaml"])
    config["evaluators"].update(evaluators)
    return config


def test_variant_options_pass_the_config_validation(repo):
    validate_config(
        _config(
            repo,
            fud_sym={
                "method": "fud",
                "symmetric": True,
                "granularity": "slic",
                "n_segments": 32,
                "compactness": 5,
                "known": "renoise",
                "guidance_schedule": "last_steps",
            },
            fud_patch={"method": "fud", "granularity": "patch", "patch_size": 8},
        ),
        repo / "config/schema.yaml",
    )


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"granularity": "hexagon"}, r"evaluators.fud_v.granularity': 'hexagon' is not"),
        ({"guidance_schedule": "fraction"}, r"evaluators.fud_v.guidance_schedule': 'fraction' is not"),
        ({"known": "noisy"}, r"evaluators.fud_v.known': 'noisy' is not"),
        ({"patch_size": 0}, r"evaluators.fud_v.patch_size': 0 is less than the minimum of 1"),
        ({"symmetric": "yes"}, r"evaluators.fud_v.symmetric': 'yes' is not of type 'boolean'"),
    ],
)
def test_bad_variant_options_are_rejected_naming_the_key(repo, entry, message):
    with pytest.raises(ConfigError, match=message):
        validate_config(_config(repo, fud_v={"method": "fud", **entry}), repo / "config/schema.yaml")
