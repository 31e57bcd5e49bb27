import pytest
import torch

from fudbench.explainers import build_explainer
from fudbench.explainers.controlled import _minmax
from fudbench.config.files import resolve_config


@pytest.fixture
def batch(tiny_cnn):
    torch.manual_seed(2)
    x = torch.rand(3, 3, 8, 8)
    masks = (torch.rand(3, 8, 8) > 0.5).to(torch.uint8)
    return tiny_cnn, x, tiny_cnn(x).argmax(1), masks


def test_random_is_seeded_and_batch_independent(batch):
    model, x, target, _ = batch
    r = build_explainer("random", {})
    a = r.explain(model, x, target, seeds=[1, 2, 3])
    assert a.shape == x.shape
    assert torch.equal(a[1:2], r.explain(model, x[1:2], target[1:2], seeds=[2]))
    assert not torch.equal(a, r.explain(model, x, target, seeds=[4, 5, 6]))
    with pytest.raises(ValueError, match="seed"):
        r.explain(model, x, target)


def test_oracle_returns_the_mask(batch):
    model, x, target, masks = batch
    a = build_explainer("oracle", {}).explain(model, x, target, masks=masks)
    assert torch.equal(a[:, 0], masks.float()) and torch.equal(a[:, 2], masks.float())
    with pytest.raises(ValueError, match="ground-truth masks"):
        build_explainer("oracle", {}).explain(model, x, target)


def test_degrade_interpolates_between_base_and_noise(batch):
    model, x, target, masks = batch
    seeds = [1, 2, 3]
    clean = build_explainer("degrade", {"base": "oracle", "fraction": 0.0, "ties": "protocol"}).explain(
        model, x, target, seeds, masks=masks
    )
    assert torch.equal(clean[:, 0], _minmax(masks.float()))
    strict = build_explainer("degrade", {"base": "oracle", "fraction": 0.0}).explain(
        model, x, target, seeds, masks=masks
    )
    from fudbench.explainers.controlled import break_ties  # default ties: compact, made strict

    assert torch.equal(strict[:, 0], break_ties(_minmax(masks.float()), seeds))
    noise = build_explainer("random", {}).explain(model, x, target, seeds)
    full = build_explainer("degrade", {"base": "oracle", "fraction": 1.0, "mode": "replace"}).explain(
        model, x, target, seeds, masks=masks
    )
    torch.testing.assert_close(full, noise)
    half = build_explainer(
        "deg_half", {"method": "degrade", "base": "ig", "fraction": 0.5, "base_settings": {"n_steps": 4}}
    ).explain(model, x, target, seeds)
    assert half.shape == x.shape and torch.isfinite(half).all()


def test_degrade_fraction_checked():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        build_explainer("degrade", {"base": "sm", "fraction": 1.5})


@pytest.mark.parametrize("mode", ["shuffle", "replace"])
def test_degrade_degrades_a_binary_map_progressively(tiny_cnn, mode):
    """The oracle mask is binary: degrading a fraction p of its pixels must move
    background pixels above object pixels more often as p grows (a convex mix
    with p <= 0.5 would not change the ranking at all)."""
    torch.manual_seed(0)
    x = torch.rand(4, 3, 16, 16)
    masks = torch.zeros(4, 16, 16, dtype=torch.uint8)
    masks[:, 4:12, 4:12] = 1
    target = tiny_cnn(x).argmax(1)
    seeds = [11, 12, 13, 14]

    def top_k_precision(fraction, mode=mode):
        a = (
            build_explainer("degrade", {"base": "oracle", "fraction": fraction, "mode": mode})
            .explain(tiny_cnn, x, target, seeds, masks=masks)[:, 0]
            .flatten(1)
        )
        top = a.argsort(dim=1, descending=True)[:, :64]  # as many pixels as the object has
        return masks.flatten(1).gather(1, top).float().mean().item(), a

    p0, a0 = top_k_precision(0.0)
    p3, a3 = top_k_precision(0.3)
    p6, _ = top_k_precision(0.6)
    assert p0 == 1.0 and p0 > p3 > p6
    changed = (a3 != a0).float().mean().item()
    assert 0.1 < changed < 0.4  # at most a fraction 0.3 of the pixels (shuffle: ties between them stay)
    assert top_k_precision(0.3, mode="mix")[0] == 1.0  # why "mix" is not the default
    with pytest.raises(ValueError, match="mode"):
        build_explainer("degrade", {"base": "oracle", "fraction": 0.3, "mode": "blend"})


# --- the degradation is unbiased (issue 27, item 1) ---


def _heavy_tailed_maps(n: int, side: int = 32) -> torch.Tensor:
    """Attribution-like maps: most values near 0, a few large (|N(0, 1)|^3)."""
    return torch.randn(n, side, side, generator=torch.Generator().manual_seed(7)).abs() ** 3


def _decile_noise_share(degraded: torch.Tensor, noisy: torch.Tensor) -> tuple[float, float]:
    """Share of the degraded (noisy) pixels among the top and the bottom 10% of
    each degraded map, averaged over maps."""
    flat, noisy = degraded.flatten(1), noisy.flatten(1).float()
    k = flat.shape[1] // 10
    order = flat.argsort(dim=1, descending=True, stable=True)
    return noisy.gather(1, order[:, :k]).mean().item(), noisy.gather(1, order[:, -k:]).mean().item()


@pytest.mark.parametrize("fraction", [0.2, 0.4, 0.6, 0.8])
def test_shuffle_hits_the_top_and_the_bottom_alike_and_replace_does_not(fraction):
    """At every p the shuffled pixels make up a share p of the top decile and of
    the bottom decile (within sampling error over 200 maps of 1024 pixels);
    `replace` puts its noise at the top of a heavy-tailed map and not at the
    bottom: the bias that made `shuffle` the default."""
    from fudbench.explainers.controlled import picked_order, seeded_uniform, shuffle_degrade

    maps = _minmax(_heavy_tailed_maps(200))
    seeds = list(range(200))
    shuffled = shuffle_degrade(maps, fraction, seeds)
    k = round(fraction * 1024)
    picked = torch.zeros(200, 1024).scatter_(1, picked_order(1024, seeds)[:, :k], 1.0).view_as(maps)
    top, bottom = _decile_noise_share(shuffled, picked)
    se = (fraction * (1 - fraction) / (200 * 102)) ** 0.5
    assert abs(top - fraction) < 5 * se + 0.005 and abs(bottom - fraction) < 5 * se + 0.005
    # the values are kept: each map holds the same multiset
    assert torch.equal(shuffled.flatten(1).sort(1).values, maps.flatten(1).sort(1).values)

    replaced = seeded_uniform((32, 32), [s ^ 0x9E1EC7 for s in seeds], "cpu") < fraction
    replaced_map = torch.where(replaced, seeded_uniform((32, 32), seeds, "cpu"), maps)
    top, bottom = _decile_noise_share(replaced_map, replaced)
    assert top > 0.9 and bottom < 0.1


def test_shuffle_levels_are_nested_and_p_zero_is_the_base(batch):
    """One family (one base map, one image seed): the pixels moved at p = 0.2
    are among those moved at 0.4, and those at 0.4 among 0.8's."""
    model, x, target, _ = batch
    seeds = [5, 6, 7]
    maps = {
        p: build_explainer("degrade", {"base": "random", "fraction": p}).explain(model, x, target, seeds)[:, 0]
        for p in (0.0, 0.2, 0.4, 0.8)
    }
    moved = {p: maps[p] != maps[0.0] for p in (0.2, 0.4, 0.8)}
    assert (moved[0.2] <= moved[0.4]).all() and (moved[0.4] <= moved[0.8]).all()
    for p, m in moved.items():  # distinct values: exactly round(p * HW) pixels move in each map
        assert (m.flatten(1).sum(1) == round(p * 64)).all()
    torch.testing.assert_close(
        maps[0.0], _minmax(build_explainer("random", {}).explain(model, x, target, [s ^ 0xBA5E for s in seeds])[:, 0])
    )


def test_family_members_share_their_seeds():
    """Degrade and randomise_model entries are seeded by method, base and base
    settings, not by entry name: the levels of one family draw the same
    permutation and base noise; a plain entry keeps its own name."""
    from fudbench.explainers.seeds import explain_seed_key, explainer_seed_name

    d20 = {"method": "degrade", "base": "ig", "fraction": 0.2, "base_settings": {"n_steps": 50}}
    d40 = {**d20, "fraction": 0.4}
    assert explain_seed_key(0, "cnn", "ig_d20", d20) == explain_seed_key(0, "cnn", "ig_d40", d40)
    assert explainer_seed_name("ig_d20", d20) != explainer_seed_name("ig_d20", {**d20, "base_settings": {}})
    assert explainer_seed_name("ig_d20", d20) != explainer_seed_name("ig_d20", {**d20, "base": "sm"})
    r = {"method": "randomise_model", "base": "ig", "fraction": 0.5}
    assert explainer_seed_name("ig_r50", r) == explainer_seed_name("ig_r100", {**r, "fraction": 1.0})
    assert explainer_seed_name("ig_r50", r) != explainer_seed_name("ig_d20", {**d20, "base_settings": {}})
    assert (
        explain_seed_key(0, "cnn", "ig")
        == explain_seed_key(0, "cnn", "ig", {"n_steps": 50})
        == (0, "explain", "cnn", "ig")
    )


# --- background and randomise_model (issue 17, item 3) ---


def test_background_is_the_complement_of_the_oracle(batch):
    model, x, target, masks = batch
    oracle = build_explainer("oracle", {}).explain(model, x, target, masks=masks)
    background = build_explainer("background", {}).explain(model, x, target, masks=masks)
    assert background.shape == x.shape and torch.equal(background, 1 - oracle)
    assert torch.equal(background[:, 1], 1 - masks.float())
    assert build_explainer("background", {}).uses_masks
    with pytest.raises(ValueError, match="background explainer needs the ground-truth masks"):
        build_explainer("background", {}).explain(model, x, target)


def _trained_looking_cnn(seed=0):
    """A tiny CNN whose parameters and BatchNorm statistics all differ from what
    reset_parameters draws or sets (as a trained model's do)."""
    from fudbench.models.classifiers import build_classifier

    torch.manual_seed(seed)
    model = build_classifier({"arch": "small_cnn", "width": 4}, 4, 8, [0.5] * 3, [0.25] * 3)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.3 + 0.1)
        for name, b in model.named_buffers():
            if "running" in name:
                b.copy_(torch.rand_like(b) + 0.5)
    return model.eval().requires_grad_(False)


@pytest.fixture
def rm_batch():
    model = _trained_looking_cnn()
    torch.manual_seed(3)
    x = torch.rand(3, 3, 8, 8)
    with torch.no_grad():
        return model, x, model(x).argmax(1), [5, 6, 7]


def _rm(fraction, seed=0, base="ig", base_settings=None):
    return build_explainer(
        "rm",
        {
            "method": "randomise_model",
            "base": base,
            "fraction": fraction,
            "seed": seed,
            "base_settings": {"n_steps": 4} if base_settings is None else base_settings,
        },
    )


def _layer_states(model):
    from fudbench.explainers.controlled import parameterised_layers

    return [
        {k: v.clone() for k, v in layer.state_dict().items() if "." not in k and k != "num_batches_tracked"}
        for layer in parameterised_layers(model)
    ]


def _same(a, b):
    return all(torch.equal(a[k], b[k]) for k in a)


def test_randomise_model_fraction_0_is_the_base_map_and_degrade_0(rm_batch):
    from fudbench.explainers.controlled import base_seeds

    model, x, target, seeds = rm_batch
    base = build_explainer("ig", {"n_steps": 4}).explain(model, x, target, seeds=base_seeds(seeds))
    assert torch.equal(_rm(0.0).explain(model, x, target, seeds), base)
    degraded = build_explainer("degrade", {"base": "ig", "fraction": 0.0, "base_settings": {"n_steps": 4}}).explain(
        model, x, target, seeds
    )
    assert torch.equal(_minmax(_rm(0.0).explain(model, x, target, seeds).abs().sum(1)), degraded[:, 0])


def test_randomise_model_fraction_1_changes_every_layer_and_the_map(rm_batch):
    model, x, target, seeds = rm_batch
    rm = _rm(1.0)
    randomised = rm.randomised(model)
    for before, after in zip(_layer_states(model), _layer_states(randomised)):
        assert before.keys() == after.keys() and not any(torch.equal(before[k], after[k]) for k in before)
    assert not torch.allclose(rm.explain(model, x, target, seeds), _rm(0.0).explain(model, x, target, seeds))


def test_randomise_model_half_reinitialises_exactly_the_last_half(rm_batch):
    model, x, target, seeds = rm_batch
    original = {k: v.clone() for k, v in model.state_dict().items()}
    rm = _rm(0.5)
    rm.explain(model, x, target, seeds)
    randomised = rm.randomised(model)
    before, after = _layer_states(model), _layer_states(randomised)
    n = len(before)
    assert n == 13  # 6 conv + 6 BatchNorm + the linear head
    changed = [not _same(b, a) for b, a in zip(before, after)]
    assert changed == [False] * (n - 7) + [True] * 7  # round(6.5) half up
    assert all(torch.equal(v, original[k]) for k, v in model.state_dict().items())  # the original untouched
    # the copy: eval mode, same device, requires_grad as the model, built once per model
    assert not randomised.training and all(not p.requires_grad for p in randomised.parameters())
    assert next(randomised.parameters()).device == next(model.parameters()).device
    assert rm.randomised(model) is randomised
    trainable = _trained_looking_cnn().requires_grad_(True).train()
    copy = rm.randomised(trainable)
    assert copy is not randomised and not copy.training and all(p.requires_grad for p in copy.parameters())
    # cascading: a larger fraction re-draws the same values where a smaller one re-draws
    full = _layer_states(_rm(1.0).randomised(model))
    assert all(_same(a, f) for a, f, c in zip(after, full, changed) if c)


def test_randomise_model_leaves_the_global_rng_alone_and_is_seeded(rm_batch):
    model, x, target, seeds = rm_batch
    torch.manual_seed(123)
    cpu = torch.random.get_rng_state()
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    a = _rm(0.5).explain(model, x, target, seeds)
    assert torch.equal(torch.random.get_rng_state(), cpu)
    if cuda is not None:
        assert all(torch.equal(s, t) for s, t in zip(torch.cuda.get_rng_state_all(), cuda))
    torch.manual_seed(999)  # another global state: same map
    assert torch.equal(_rm(0.5).explain(model, x, target, seeds), a)
    assert not torch.allclose(_rm(0.5, seed=1).explain(model, x, target, seeds), a)


def test_randomise_model_redraws_bare_parameters_of_a_vit():
    from fudbench.explainers.controlled import parameterised_layers
    from fudbench.models.classifiers import build_classifier

    torch.manual_seed(0)
    vit = build_classifier(
        {"arch": "small_vit", "patch_size": 4, "dim": 8, "depth": 1, "heads": 2}, 4, 8, [0.5] * 3, [0.25] * 3
    ).eval()
    layers = parameterised_layers(vit)
    assert type(layers[0]).__name__ == "SmallViT"  # class token and positions: a layer of their own, first
    net = build_explainer("rm", {"method": "randomise_model", "base": "sm", "fraction": 1.0}).randomised(vit).net
    assert not torch.equal(net.cls, vit.net.cls) and not torch.equal(net.pos, vit.net.pos)
    std = vit.net.pos.std().item()
    assert 0.5 * std < net.pos.std().item() < 2 * std  # redrawn at the trained values' scale
    kept = build_explainer("rm", {"method": "randomise_model", "base": "sm", "fraction": 0.9}).randomised(vit).net
    assert torch.equal(kept.pos, vit.net.pos)  # round(0.9 * 10) = 9 layers: all but the first


def test_randomise_model_errors(rm_batch):
    model, x, target, seeds = rm_batch

    class NoParameters(torch.nn.Module):
        def forward(self, x):
            return torch.stack([x.mean((1, 2, 3)), -x.mean((1, 2, 3))], 1)

    with pytest.raises(ValueError, match=r"model \(NoParameters\) has no parameterised layers"):
        _rm(0.5, base="sm", base_settings={}).explain(NoParameters(), x, target, seeds)
    with pytest.raises(ValueError, match="cannot wrap itself"):
        build_explainer("rm", {"method": "randomise_model", "base": "randomise_model", "fraction": 0.5})
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        build_explainer("rm", {"method": "randomise_model", "base": "sm", "fraction": 1.5})
    nested = build_explainer(
        "rm",
        {
            "method": "randomise_model",
            "base": "degrade",
            "fraction": 0.5,
            "base_settings": {"base": "oracle", "fraction": 0.2},
        },
    )
    assert nested.uses_masks  # the oracle's masks reach it through both wrappers
    masks = torch.zeros(3, 8, 8, dtype=torch.uint8)
    masks[:, 2:6, 2:6] = 1
    assert nested.explain(model, x, target, seeds, masks=masks).shape == x.shape


def _smoke(repo):

    return resolve_config([repo / "config/smoke.yaml"])


def test_config_accepts_a_randomise_model_entry(repo):
    from fudbench.config.validate import validate_config

    cfg = _smoke(repo)
    cfg["explainers"]["ig_r50"] = {
        "method": "randomise_model",
        "base": "ig",
        "fraction": 0.5,
        "base_settings": {"n_steps": 50},
    }
    cfg["explainers"]["ig_r50_d20"] = {
        "method": "randomise_model",
        "base": "degrade",
        "fraction": 0.5,
        "base_settings": {"base": "ig", "fraction": 0.2},
    }
    cfg["explainers"]["bg"] = {"method": "background"}
    validate_config(cfg, repo / "config/schema.yaml")


@pytest.mark.parametrize(
    "entry,match",
    [
        (
            {"base": "nope", "fraction": 0.5},
            r"'explainers\.r\.base': 'nope' is not an explainer a randomised-model "
            r"copy can wrap",
        ),
        ({"base": "randomise_model", "fraction": 0.5}, r"'explainers\.r\.base': 'randomise_model' is not an explainer"),
        ({"base": "ig", "fraction": 1.5}, r"'explainers\.r\.fraction': 1\.5 is greater than the maximum of 1"),
        ({"base": "ig"}, r"'explainers\.r': 'fraction' is a required property"),
        ({"base": "ig", "fraction": 0.5, "seed": "a"}, r"'explainers\.r\.seed': 'a' is not of type 'integer'"),
        (
            {"base": "ig", "fraction": 0.5, "base_settings": {"n_stepz": 3}},
            r"'explainers\.r\.base_settings': unknown key\(s\) 'n_stepz'",
        ),
        (
            {"base": "degrade", "fraction": 0.5, "base_settings": {"base": "ig", "fraction": 2}},
            r"'explainers\.r\.base_settings\.fraction': 2 is greater than the maximum of 1",
        ),
        (
            {"base": "degrade", "fraction": 0.5, "base_settings": {"base": "degrade", "fraction": 0.1}},
            r"'explainers\.r\.base_settings\.base': 'degrade' is not an explainer a degraded copy can wrap",
        ),
    ],
)
def test_config_refuses_bad_randomise_model_entries(repo, entry, match):
    from fudbench.config.validate import ConfigError, validate_config

    cfg = _smoke(repo)
    cfg["explainers"]["r"] = {"method": "randomise_model", **entry}
    with pytest.raises(ConfigError, match=match):
        validate_config(cfg, repo / "config/schema.yaml")


@pytest.mark.parametrize(
    "name,entry,which",
    [
        ("bg", {"method": "background"}, "background"),
        (
            "r",
            {
                "method": "randomise_model",
                "base": "degrade",
                "fraction": 0.5,
                "base_settings": {"base": "oracle", "fraction": 0.1},
            },
            "oracle",
        ),
    ],
)
def test_mask_explainers_need_synthetic_data(repo, name, entry, which):
    from fudbench.config.validate import ConfigError, check_semantics

    cfg = _smoke(repo)
    cfg["explainers"][name] = entry
    cfg["data"]["source"] = "imagenet"
    with pytest.raises(ConfigError) as err:
        check_semantics(cfg, base=repo)
    assert f"'explainers.{name}': the {which} explainer needs ground-truth masks" in str(err.value)
