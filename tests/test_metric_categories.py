"""The robustness, randomisation and complexity metrics on cases whose answer is known: a constant map is
perfectly robust and maximally non-sparse, a one-hot map maximally sparse, a map computed from the model
loses its similarity when the model is randomised while a map that ignores the model keeps it."""

import math

import pytest
import torch

from fudbench.evaluators import build_evaluator
from fudbench.explainers import build_explainer
from fudbench.explainers.again import ExplainAgain
from fudbench.explainers.base import Explainer
from fudbench.models.classifiers import build_classifier
from fudbench.protocols.complexity.statistic import entropy, gini
from fudbench.protocols.randomisation.similarity import spearman, ssim

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)

EVALUATION = {"ratios": [0.25, 0.5, 0.75], "reduction": "abs_sum"}
N, SIZE = 4, 16


class Constant(Explainer):
    """1 everywhere: ignores input, model and class."""

    def explain(self, model, x, target, seeds=None):
        return torch.ones_like(x)


class Edges(Explainer):
    """An edge detector: |horizontal + vertical differences| of the input, blind to model and class."""

    def explain(self, model, x, target, seeds=None):
        g = x.mean(1, keepdim=True)
        dx = torch.nn.functional.pad(g[..., :, 1:] - g[..., :, :-1], (0, 1)).abs()
        dy = torch.nn.functional.pad(g[..., 1:, :] - g[..., :-1, :], (0, 0, 0, 1)).abs()
        return (dx + dy).expand_as(x).contiguous()


class ScaledInput(Explainer):
    """The input itself times `scale`: its change under a perturbation is the perturbation, scaled."""

    def __init__(self, scale: float):
        self.scale = scale

    def explain(self, model, x, target, seeds=None):
        return self.scale * x


def case_data():
    torch.manual_seed(0)
    model = build_classifier({"arch": "small_cnn", "width": 4}, 4, SIZE, [0.5] * 3, [0.25] * 3).eval()
    x = torch.rand(N, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(1))
    y = model(x).argmax(1)
    return model, x, y


@pytest.fixture(scope="module")
def case():
    return case_data()


def _scores(case, method, settings, explainer) -> torch.Tensor:
    """Per-image scores of the metric's first curve with the maps `explainer` gives."""
    model, x, y = case
    again = ExplainAgain("test", explainer, {i: i for i in range(N)})
    a = again(model, x, y, list(range(N)))
    ev = build_evaluator(method, settings, EVALUATION, {}, "cpu")
    records, _ = ev.run(model, x, y, a, list(range(N)), (0, "evaluate", "m", method), explainer=again)
    first = records[records["curve"] == records["curve"].iloc[0]]
    column = "similarity" if "similarity" in first else "value"
    return torch.tensor(first.groupby("image")[column].mean().to_numpy())


def test_gini_and_entropy_of_a_constant_and_a_one_hot_map():
    d = 64
    constant, one_hot = torch.ones(1, d), torch.zeros(1, d)
    one_hot[0, 5] = 3.0
    assert gini(constant).item() == pytest.approx(0.0, abs=1e-12)
    assert gini(one_hot).item() == pytest.approx((d - 1) / d)
    assert entropy(constant).item() == pytest.approx(math.log(d))
    assert entropy(one_hot).item() == pytest.approx(0.0, abs=1e-12)
    assert torch.isnan(gini(torch.zeros(1, d))) and torch.isnan(entropy(torch.zeros(1, d)))


def test_a_uniform_random_map_scores_the_documented_sparseness_and_complexity():
    u = torch.rand(1, 200_000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert gini(u).item() == pytest.approx(1 / 3, abs=0.01)
    assert entropy(u).item() == pytest.approx(math.log(u.shape[1]) - (math.log(2) - 0.5), abs=0.01)


@pytest.mark.parametrize("method", ["max_sensitivity", "avg_sensitivity", "local_lipschitz"])
def test_a_constant_map_is_perfectly_robust_and_a_gradient_map_is_not(case, method):
    settings = {"n_samples": 3}
    assert (_scores(case, method, settings, Constant()) == 0).all()
    assert (_scores(case, method, settings, build_explainer("sm", {})) > 0).all()


def test_the_maximum_over_perturbations_bounds_their_mean(case):
    sm = build_explainer("sm", {})
    worst, mean = (_scores(case, m, {"n_samples": 3}, sm) for m in ("max_sensitivity", "avg_sensitivity"))
    assert (worst >= mean - 1e-12).all()


def test_local_lipschitz_of_the_input_times_c_is_c():
    """||c x' - c x|| / ||x' - x|| = c exactly (the estimate divides by the input's change, not the map's)."""
    for c in (1.0, 10.0):
        scores = _scores(case_data(), "local_lipschitz", {"n_samples": 3}, ScaledInput(c))
        assert torch.allclose(scores, torch.full((N,), c, dtype=torch.float64), rtol=1e-5)


@pytest.mark.parametrize("method", ["max_sensitivity", "avg_sensitivity"])
def test_sensitivity_is_relative_to_the_map_so_its_scale_does_not_matter(method):
    """||c(x' - x)|| / ||c x|| does not depend on c (Quantus' norm_denominator; the map's own size)."""
    one, ten = (_scores(case_data(), method, {"n_samples": 3}, ScaledInput(c)) for c in (1.0, 10.0))
    assert (one > 0).all() and torch.allclose(one, ten, rtol=1e-5)


def test_similarities_are_one_for_identical_maps_and_low_for_unrelated_ones():
    a = torch.rand(3, 16, 16, generator=torch.Generator().manual_seed(2))
    b = torch.rand(3, 16, 16, generator=torch.Generator().manual_seed(3))
    one = torch.ones(3, dtype=torch.float64)
    assert torch.allclose(spearman(a, a), one) and torch.allclose(ssim(a, a), one)
    assert (spearman(a, b).abs() < 0.2).all() and (ssim(a, b).abs() < 0.2).all()
    assert (spearman(a, -a) < -0.99).all()  # ranks reversed
    ones = torch.ones(1, 16, 16)
    assert spearman(ones, ones).item() == 1 and ssim(ones, ones).item() == 1
    assert spearman(a[:1], ones).item() == 0  # the pattern was lost: a pass


def test_a_dead_reference_map_is_undefined_not_a_pass():
    """An all-zero map of the trained model has no pattern to lose: NaN, not a similarity of 0."""
    zero, varying = torch.zeros(1, 16, 16), torch.rand(1, 16, 16, generator=torch.Generator().manual_seed(6))
    assert spearman(zero, varying).isnan().all() and ssim(zero, varying).isnan().all()


def test_ssim_reads_the_pattern_not_the_scale():
    """A map whose pattern is kept and whose scale shrinks 1000x (a randomised layer's gradients) is the same
    map to SSIM, as to Spearman."""
    a = torch.rand(2, 16, 16, generator=torch.Generator().manual_seed(7))
    assert torch.allclose(ssim(a, a / 1000), torch.ones(2, dtype=torch.float64), atol=1e-9)
    assert torch.allclose(spearman(a, a / 1000), torch.ones(2, dtype=torch.float64))


def test_ssim_agrees_with_scikit_image():
    metrics = pytest.importorskip("skimage.metrics")
    a = torch.rand(2, 16, 16, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    b = a + 0.3 * torch.rand(2, 16, 16, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    ours = ssim(a, b)
    for i in range(2):
        ai, bi = a[i] / a[i].abs().max(), b[i] / b[i].abs().max()  # each by its largest |value|, as ours
        lo, hi = min(ai.min(), bi.min()), max(ai.max(), bi.max())
        theirs = metrics.structural_similarity(ai.numpy(), bi.numpy(), data_range=float(hi - lo))
        assert ours[i].item() == pytest.approx(theirs, abs=1e-9)


@pytest.mark.parametrize("method", ["mprt", "random_logit"])
def test_a_map_from_the_model_scores_as_randomised_and_a_blind_map_does_not(case, method):
    settings = {"max_layers": 3} if method == "mprt" else {}
    for blind in (Constant(), Edges()):
        assert torch.allclose(_scores(case, method, settings, blind), torch.ones(N, dtype=torch.float64))
    saliency = _scores(case, method, settings, build_explainer("sm", {}))
    assert (saliency < 0.9).all(), saliency


def test_the_random_control_fails_the_randomisation_checks(case):
    """Re-seeded per image, the `random` map ignores model and class: similarity 1, the check fails."""
    for method, settings in (("mprt", {"max_layers": 2}), ("random_logit", {})):
        scores = _scores(case, method, settings, build_explainer("random", {}))
        assert torch.allclose(scores, torch.ones(N, dtype=torch.float64)), method


def test_the_cascade_randomises_the_top_layers_and_is_paired_across_explainers(case):
    """The same randomised models for every explainer: two runs with other maps see the same layer count
    per step, and more randomised layers do not raise saliency's similarity on average."""
    model, x, y = case
    sm = build_explainer("sm", {})
    again = ExplainAgain("sm", sm, {i: i for i in range(N)})
    a = again(model, x, y, list(range(N)))
    ev = build_evaluator("mprt", {"max_layers": 4}, EVALUATION, {}, "cpu")
    records, _ = ev.run(model, x, y, a, list(range(N)), (0, "evaluate", "m", "mprt"), explainer=again)
    rank = records[records["curve"] == "mprt"].groupby("layers")["similarity"].mean()
    assert list(rank.index) == [1, 2, 3, 4]
    assert rank.iloc[-1] <= rank.iloc[0] + 0.05, rank.tolist()
    renamed = ExplainAgain("another_entry", sm, {i: i for i in range(N)})  # the entry's name draws no noise
    again_records, _ = ev.run(model, x, y, a, list(range(N)), (0, "evaluate", "m", "mprt"), explainer=renamed)
    assert torch.allclose(
        torch.tensor(records["similarity"].to_numpy()), torch.tensor(again_records["similarity"].to_numpy())
    )
