"""Baseline imputers (mean, noise, train-set, histogram, telea, noisy-linear,
box blur, max-distance) and the by-name factory, on small hand-made images."""

import numpy as np
import pytest
import torch

from fudbench.imputers import (
    BoxBlurImputer,
    GaussianNoiseImputer,
    HistogramImputer,
    ImputeContext,
    MaxDistanceImputer,
    MeanImputer,
    NoisyLinearImputer,
    SampleAverageImputer,
    TeleaImputer,
    TrainSetImputer,
    UniformNoiseImputer,
    ZeroImputer,
)
from fudbench.imputers.factory import build_imputer
from fudbench.imputers.registry import IMPUTERS

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)


class NormalisedModel(torch.nn.Module):
    """Stands in for a fudbench Classifier: only its .normalize.mean/std are read."""

    def __init__(self, mean, std):
        super().__init__()
        self.normalize = torch.nn.Module()
        self.normalize.register_buffer("mean", torch.tensor(mean).view(1, -1, 1, 1))
        self.normalize.register_buffer("std", torch.tensor(std).view(1, -1, 1, 1))

    def forward(self, x):
        return x.flatten(1)[:, :2]


def _images(n=3, h=12, w=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    return 0.05 + 0.9 * torch.rand(n, 3, h, w, generator=g)


def _masks(n=3, h=12, w=12, seed=1):
    g = torch.Generator().manual_seed(seed)
    m = (torch.rand(n, 1, h, w, generator=g) > 0.4).float()
    m[:, :, 3:7, 4:9] = 0.0  # a removed block in every image
    return m


def _ctx(n, offset=0, model=None):
    return ImputeContext(
        classifier=model, target=torch.zeros(n, dtype=torch.long), seeds=[1000 + offset + i for i in range(n)]
    )


def _refs():
    # reference k is the constant image k / 10: a drawn pixel tells which reference it came from
    return torch.stack([torch.full((3, 12, 12), k / 10) for k in range(1, 8)])


ALL = [
    ("zero", ZeroImputer()),
    ("mean", MeanImputer([0.2, 0.4, 0.6])),
    ("mean_model", MeanImputer(None)),
    ("sample_average", SampleAverageImputer()),
    ("uniform", UniformNoiseImputer()),
    ("gaussian", GaussianNoiseImputer(std=1.0)),
    ("gaussian_image", GaussianNoiseImputer(0.3, around_image=True)),
    ("gaussian_model", GaussianNoiseImputer(1.0, model_space=True)),
    ("train_set", TrainSetImputer(_refs())),
    ("histogram", HistogramImputer()),
    ("telea", TeleaImputer()),
    ("noisy_linear", NoisyLinearImputer()),
    ("box_blur", BoxBlurImputer()),
    ("max_distance", MaxDistanceImputer()),
]


@pytest.mark.parametrize("name,imputer", ALL, ids=[a for a, _ in ALL])
def test_kept_pixels_bit_identical_and_fill_in_range(name, imputer):
    x, m = _images(), _masks()
    model = NormalisedModel([0.5, 0.4, 0.3], [0.25, 0.2, 0.3])
    out = imputer.fill(x, m, _ctx(3, model=model))
    keep = m.bool().expand_as(x)
    assert out.shape == x.shape and out.dtype == x.dtype
    assert torch.equal(out[keep], x[keep])
    assert out.min() >= 0 and out.max() <= 1
    if name != "gaussian_image":  # every other fill changes the removed block
        assert not torch.equal(out[~keep], x[~keep])


STOCHASTIC = [(a, i) for a, i in ALL if getattr(i, "stochastic", False)]


@pytest.mark.parametrize("name,imputer", STOCHASTIC, ids=[a for a, _ in STOCHASTIC])
def test_seeded_imputers_batched_equals_per_sample_and_depend_on_seed(name, imputer):
    x, m = _images(), _masks()
    model = NormalisedModel([0.5, 0.4, 0.3], [0.25, 0.2, 0.3])
    batched = imputer.fill(x, m, _ctx(3, model=model))
    single = torch.cat(
        [imputer.fill(x[i : i + 1], m[i : i + 1], ImputeContext(classifier=model, seeds=[1000 + i])) for i in range(3)]
    )
    assert torch.equal(batched, single)
    assert torch.equal(batched, imputer.fill(x, m, _ctx(3, model=model)))
    assert not torch.equal(batched, imputer.fill(x, m, _ctx(3, offset=50, model=model)))
    with pytest.raises(ValueError, match="seed"):
        imputer.fill(x, m, ImputeContext())


def _ramp(h=16, w=16):
    yy, xx = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32), indexing="ij")
    r = 0.2 + 0.02 * xx + 0.015 * yy
    return torch.stack([r, 1 - r, 0.5 * r + 0.1]).unsqueeze(0)


def test_noisy_linear_reproduces_a_linear_ramp_exactly_without_noise():
    x = _ramp()
    m = torch.ones(1, 1, 16, 16)
    m[0, 0, 4:11, 5:12] = 0.0
    out = NoisyLinearImputer(noise=0.0).fill(x, m, None)
    np.testing.assert_allclose(out.numpy(), x.numpy(), atol=1e-5, rtol=0)
    # A removed bump is not reproduced: the fill is an interpolation, not a copy.
    bumpy = x.clone()
    bumpy[0, :, 7, 8] += 0.3
    assert (NoisyLinearImputer(0.0).fill(bumpy, m, None) - bumpy).abs().max() > 0.25


def test_noisy_linear_at_the_border_averages_in_image_neighbours_only():
    # Touching the border, a pixel's mean runs over its in-image neighbours only
    # (as ROAD's reference): no longer the ramp, but bounded by the known values.
    x = _ramp()
    m = torch.ones(1, 1, 16, 16)
    m[0, 0, 0:6, 9:16] = 0.0
    out = NoisyLinearImputer(noise=0.0).fill(x, m, None)
    removed = ~m.bool()[0, 0]
    for c in range(3):
        known = x[0, c][~removed]
        assert out[0, c][removed].min() >= known.min() - 1e-6 and out[0, c][removed].max() <= known.max() + 1e-6
    assert (out - x).abs().max() > 1e-3


def test_noisy_linear_noise_is_seeded_with_the_configured_std():
    x = _ramp(32, 32)
    m = torch.ones(1, 1, 32, 32)
    m[0, 0, 4:28, 4:28] = 0.0
    clean = NoisyLinearImputer(0.0).fill(x, m, None)
    noisy = NoisyLinearImputer(0.01).fill(x, m, ImputeContext(seeds=[7]))
    diff = (noisy - clean)[m.bool().logical_not().expand_as(x)]
    assert 0.008 < float(diff.std()) < 0.012 and abs(float(diff.mean())) < 0.002
    assert torch.equal(noisy, NoisyLinearImputer(0.01).fill(x, m, ImputeContext(seeds=[7])))
    assert not torch.equal(noisy, NoisyLinearImputer(0.01).fill(x, m, ImputeContext(seeds=[8])))


def test_noisy_linear_weights_are_one_sixth_edge_one_twelfth_diagonal():
    # One removed pixel: its value is the weighted mean of its 8 neighbours.
    x = torch.zeros(1, 1, 3, 3)
    x[0, 0, 0, 1] = x[0, 0, 1, 0] = 1.0  # two edge neighbours
    x[0, 0, 0, 0] = 1.0  # one diagonal neighbour
    m = torch.ones(1, 1, 3, 3)
    m[0, 0, 1, 1] = 0.0
    out = NoisyLinearImputer(0.0).fill(x, m, None)
    assert out[0, 0, 1, 1].item() == pytest.approx(2 / 6 + 1 / 12)


def test_noisy_linear_and_telea_with_nothing_kept_fill_grey():
    x = _images(1)
    m = torch.zeros(1, 1, 12, 12)
    for imp in (NoisyLinearImputer(0.0), TeleaImputer()):
        np.testing.assert_array_equal(imp.fill(x, m, None).numpy(), np.full(x.shape, 0.5, np.float32))


def test_telea_fills_a_constant_image_with_its_constant():
    x = torch.full((1, 3, 12, 12), 0.4)
    m = _masks(1)
    out = TeleaImputer().fill(x, m, None)
    # cv2 works on uint8 and its Telea weights round: within 2 grey levels
    np.testing.assert_allclose(out.numpy(), x.numpy(), atol=2.5 / 255, rtol=0)


def test_mean_fills_the_given_or_the_model_mean():
    x, m = _images(), _masks()
    out = MeanImputer([0.2, 0.4, 0.6]).fill(x, m, None)
    removed = ~m.bool()[:, 0]
    for c, v in enumerate([0.2, 0.4, 0.6]):
        assert torch.all(out[:, c][removed] == torch.tensor(v))
    model = NormalisedModel([0.5, 0.4, 0.3], [0.25, 0.2, 0.3])
    out = MeanImputer(None).fill(x, m, ImputeContext(classifier=model))
    for c, v in enumerate([0.5, 0.4, 0.3]):
        assert torch.all(out[:, c][removed] == torch.tensor(v))
    with pytest.raises(ValueError, match="3 channels"):
        MeanImputer([0.1, 0.2]).fill(x, m, None)


def test_train_set_draws_removed_pixels_from_one_other_image():
    refs = _refs()
    x, m = _images(8), _masks(8)
    imp = TrainSetImputer(refs)
    out = imp.fill(x, m, _ctx(8))
    removed = ~m.bool()[:, 0]
    picks = imp.pick(_ctx(8).seeds)
    for i in range(8):
        vals = out[i][:, removed[i]]
        assert torch.all(vals == refs[picks[i]][:, removed[i]])  # all from the picked reference
    assert len(set(picks)) > 1
    # uint8 references (the asset format) give the same pixels as float ones
    as_uint8 = TrainSetImputer((refs * 255).round().byte()).fill(x, m, _ctx(8))
    np.testing.assert_allclose(as_uint8.numpy(), out.numpy(), atol=1 / 255, rtol=0)
    with pytest.raises(ValueError, match="evaluated size"):
        imp.fill(_images(2, 8, 8), torch.ones(2, 1, 8, 8), _ctx(2))


def test_histogram_fill_is_one_colour_of_the_image():
    x, m = _images(4), _masks(4)
    out = HistogramImputer().fill(x, m, _ctx(4))
    removed = ~m.bool()[:, 0]
    for i in range(4):
        colours = out[i][:, removed[i]].T  # (n_removed, 3)
        assert torch.all(colours == colours[0])
        assert (x[i].flatten(1).T == colours[0]).all(1).any()


def test_box_blur_kernel_is_half_the_width_and_keeps_constants():
    assert BoxBlurImputer().kernel_size(32) == 16 and BoxBlurImputer().kernel_size(16) == 8
    x = torch.full((1, 3, 16, 16), 0.3)
    x[0, :, 8:, :] = 0.7
    blurred = BoxBlurImputer().blurred(x)
    # a pixel far from the edge of the step keeps its value only if the box does not reach the step
    assert blurred[0, 0, 7, 8] == pytest.approx(0.5, abs=0.06)
    assert torch.all(blurred >= 0.3 - 1e-6) and torch.all(blurred <= 0.7 + 1e-6)


def test_max_distance_is_the_farthest_value():
    x = torch.tensor([0.1, 0.49, 0.5, 0.9]).view(1, 1, 2, 2)
    out = MaxDistanceImputer().fill(x, torch.zeros(1, 1, 2, 2), None)
    assert out.flatten().tolist() == [1.0, 1.0, 0.0, 0.0]


def test_gaussian_model_space_is_mean_plus_std_noise():
    x, m = _images(1, 32, 32), torch.zeros(1, 1, 32, 32)
    model = NormalisedModel([0.5, 0.5, 0.5], [0.1, 0.1, 0.1])
    out = GaussianNoiseImputer(1.0, model_space=True).fill(x, m, ImputeContext(classifier=model, seeds=[3]))
    assert float(out.mean()) == pytest.approx(0.5, abs=0.02) and float(out.std()) == pytest.approx(0.1, abs=0.02)


def test_factory_builds_by_name_and_rejects_bad_options(tmp_path):
    assert isinstance(build_imputer("noisy_linear", {"noise": 0.0}), NoisyLinearImputer)
    assert build_imputer("noisy_linear", {"noise": 0.0}).noise == 0.0
    assert build_imputer("mean", {"mean": [0.1, 0.2, 0.3]}).mean == [0.1, 0.2, 0.3]
    with pytest.raises(ValueError, match="allowed: \\['noise'\\]"):
        build_imputer("noisy_linear", {"nois": 0.1})
    with pytest.raises(KeyError, match="unknown imputer"):
        build_imputer("nope")
    with pytest.raises(ValueError, match="reference_images"):
        build_imputer("train_set", {}, None, {})
    with pytest.raises(ValueError, match="score_model"):
        build_imputer("diffusion_plain", {}, None, {})
    refs = np.stack([np.full((3, 4, 4), v, np.uint8) for v in (51, 102, 153)])
    np.savez(tmp_path / "refs.npz", images=refs)
    mean = build_imputer("mean", {}, None, {"reference_images": str(tmp_path / "refs.npz")})
    assert mean.mean == pytest.approx([0.4, 0.4, 0.4])
    assert isinstance(
        build_imputer("train_set", {}, None, {"reference_images": str(tmp_path / "refs.npz")}), TrainSetImputer
    )
    np.savez(tmp_path / "bad.npz", pictures=refs)
    with pytest.raises(ValueError, match="no 'images' array"):
        build_imputer("train_set", {}, None, {"reference_images": str(tmp_path / "bad.npz")})


def test_descriptive_mean_names_fill_as_the_short_ones(tmp_path):
    """`dataset_mean` is `mean` (the reference images' channel mean) and
    `image_mean` is `sample_average` (each image's own): same builder, options
    and fills; the short names keep working."""
    from fudbench.imputers.registry import ALIASES, canonical

    assert ALIASES == {"dataset_mean": "mean", "image_mean": "sample_average"}
    assert canonical("dataset_mean") == "mean" and canonical("telea") == "telea"
    refs = np.stack([np.full((3, 4, 4), v, np.uint8) for v in (51, 102, 153)])
    np.savez(tmp_path / "refs.npz", images=refs)
    assets = {"reference_images": str(tmp_path / "refs.npz")}
    x = torch.rand(2, 3, 4, 4, generator=torch.Generator().manual_seed(0))
    keep = (torch.rand(2, 1, 4, 4, generator=torch.Generator().manual_seed(1)) > 0.5).float()
    for alias, short in ALIASES.items():
        a, b = build_imputer(alias, {}, None, assets), build_imputer(short, {}, None, assets)
        assert type(a) is type(b)
        assert torch.equal(a.fill(x, keep, ImputeContext(seeds=[0, 1])), b.fill(x, keep, ImputeContext(seeds=[0, 1])))
    image_mean = build_imputer("image_mean").fill(x, torch.zeros_like(keep), ImputeContext(seeds=[0, 1]))
    torch.testing.assert_close(image_mean[:, :, 0, 0], x.mean(dim=(2, 3)))


def test_every_registered_imputer_is_in_the_schema(repo):
    """Each registered imputer has its options declared once (fudbench.imputers.settings):
    the config schema is generated from them (so an alias is needed only for new names),
    and the factory's defaults are theirs."""
    from fudbench.config.validate import load_yaml, with_entry_schemas
    from fudbench.imputers.factory import DEFAULTS
    from fudbench.imputers.settings import IMPUTER_SETTINGS
    from fudbench.core.settings import defaults

    schema = with_entry_schemas(load_yaml(repo / "config/schema.yaml"), load_yaml(repo / "config/config.yaml"))[
        "$defs"
    ]["imputer_options"]
    assert set(schema["properties"]) == set(IMPUTERS) == set(IMPUTER_SETTINGS) == set(DEFAULTS)
    assert schema["additionalProperties"]["properties"]["method"]["anyOf"][0]["enum"] == list(IMPUTERS)
    assert all(DEFAULTS[name] == defaults(IMPUTER_SETTINGS[name]) for name in IMPUTERS)
    assert set(schema["properties"]["gaussian"]["properties"]) == {"std", "mean", "around_image", "model_space"}


def test_needed_assets_are_known_from_the_settings():
    from fudbench.evaluators import spec

    def needed(method, settings):
        return spec(method).assets(spec(method).resolve(settings))

    assert needed("srg", {"imputers": ["telea", "noisy_linear"]}) == {"srg_reference"}
    assert needed("srg", {"imputers": ["mean", "diffusion_plain"]}) == {
        "reference_images",
        "score_model",
        "srg_reference",
    }
    assert needed("srg", {"imputers": ["mean"], "imputer_options": {"mean": {"mean": [0.5] * 3}}}) == {"srg_reference"}
    assert needed("road", {"imputer": "train_set"}) == {"reference_images"}
    assert needed("road", {"imputer": "fill", "imputer_options": {"fill": {"method": "train_set"}}}) == {
        "reference_images"
    }
    assert needed("idsds", {"fill": "zero"}) == set()
    assert needed("distill", {"fills": ["blur"]}) == set()
    assert needed("fud", {}) == {"score_model"} and needed("ffid", {}) == {"surrogate"}
