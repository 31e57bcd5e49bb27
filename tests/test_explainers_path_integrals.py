"""Fast IG, Expected Gradients and Guided IG: shape, batching, determinism and
a method-specific property each."""

import numpy as np
import pytest
import torch
from captum.attr import IntegratedGradients as CaptumIG

from fudbench.explainers.expected_gradients import ExpectedGradients
from fudbench.explainers.fast_ig import FastIG
from fudbench.explainers.guided_ig import GuidedIG

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)

SEEDS = [11, 12, 13]


@pytest.fixture
def batch(tiny_cnn):
    torch.manual_seed(1)
    x = torch.rand(3, 3, 8, 8)
    return tiny_cnn, x, tiny_cnn(x).argmax(1)


@pytest.fixture
def references():
    return torch.rand(6, 3, 8, 8, generator=torch.Generator().manual_seed(5))


def _target(model, x, target):
    with torch.no_grad():
        return model(x).gather(1, target.view(-1, 1)).squeeze(1)


def _check_common(method, model, x, target):
    """Shape, finiteness, batched == per image, same seeds -> same result."""
    a = method.explain(model, x, target, seeds=SEEDS)
    assert a.shape == x.shape and a.dtype == x.dtype and torch.isfinite(a).all()
    assert a.abs().sum() > 0
    single = torch.cat(
        [method.explain(model, x[i : i + 1], target[i : i + 1], seeds=SEEDS[i : i + 1]) for i in range(len(x))]
    )
    torch.testing.assert_close(a, single, rtol=1e-4, atol=1e-6 * a.abs().max().item())
    torch.testing.assert_close(a, method.explain(model, x, target, seeds=SEEDS), rtol=0, atol=0)
    return a


# --- FIG -------------------------------------------------------------------


def test_fig_common(batch):
    _check_common(FastIG(), *batch)


def test_fig_is_input_times_grad_log_prob(batch):
    model, x, target = batch
    a = FastIG().explain(model, x, target)
    for i in range(len(x)):  # one image at a time, through the cross-entropy loss of the authors' code
        xi = x[i : i + 1].clone().requires_grad_(True)
        (grad,) = torch.autograd.grad(torch.nn.functional.cross_entropy(model(xi), target[i : i + 1]), xi)
        torch.testing.assert_close(a[i : i + 1], -x[i : i + 1] * grad, rtol=1e-5, atol=1e-7 * a.abs().max().item())


def test_fig_sign_supports_target(brightness_classifier):
    # class 0 grows with brightness, class 1 shrinks: every (positive) pixel supports 0, opposes 1
    x = torch.rand(4, 3, 8, 8, generator=torch.Generator().manual_seed(2)) * 0.98 + 0.01
    a = FastIG().explain(brightness_classifier, x, torch.tensor([0, 0, 1, 1]))
    assert (a[:2] > 0).all() and (a[2:] < 0).all()


# --- EG --------------------------------------------------------------------


def test_eg_common(batch, references):
    for k in (1, 3):
        method = ExpectedGradients(k=k, batch_size=4)
        method.prepare(references)
        _check_common(method, *batch)


def test_eg_seeds_matter_and_prepare_required(batch, references):
    model, x, target = batch
    with pytest.raises(RuntimeError, match="prepare"):
        ExpectedGradients().explain(model, x, target, seeds=SEEDS)
    method = ExpectedGradients(k=2)
    method.prepare(references)
    a = method.explain(model, x, target, seeds=SEEDS)
    assert not torch.allclose(a, method.explain(model, x, target, seeds=[s + 100 for s in SEEDS]))


def test_eg_linear_model_is_exact(brightness_classifier, references):
    # logit_0 = 8 (mean(x) - 0.5): whatever alpha, each draw gives (x - r) * 8 / D, so
    # EG = (x - mean of the drawn references) * 8 / D; with a single reference it is exact
    x = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(3))
    target = torch.tensor([0, 1])
    method = ExpectedGradients(k=5)
    method.prepare(references[2:3])
    w = 8 / x[0].numel()
    expected = (x - references[2:3]) * w * torch.tensor([1.0, -1.0]).view(-1, 1, 1, 1)
    torch.testing.assert_close(method.explain(brightness_classifier, x, target, seeds=[1, 2]), expected)


def test_eg_completeness_in_expectation(batch, references):
    # E[sum of one draw's attribution] = f(x) - mean over references of f(r): M single-draw
    # estimates per image (one seed each) must agree within 4 standard errors
    model, x, target = batch
    m = 1500
    method = ExpectedGradients(k=1, batch_size=len(x) * m)
    method.prepare(references)
    sums = (
        method.explain(model, x.repeat_interleave(m, 0), target.repeat_interleave(m), seeds=list(range(len(x) * m)))
        .flatten(1)
        .sum(1)
        .view(len(x), m)
    )
    expected = _target(model, x, target) - torch.stack(
        [_target(model, references, t.repeat(len(references))).mean() for t in target]
    )
    assert ((sums.mean(1) - expected).abs() <= 4 * sums.std(1) / m**0.5).all()


# --- GIG -------------------------------------------------------------------


def test_gig_common_with_input_equal_to_baseline(batch):
    model, x, target = batch
    x = x.clone()
    x[1] = 0  # input == baseline: zero attribution, and the other images are unaffected
    x[2, :, :3] = 0  # some features already at the baseline
    for output in ("prob", "logit"):
        a = _check_common(GuidedIG(n_steps=8, output=output), model, x, target)
        assert (a[1] == 0).all() and (a[2, :, :3] == 0).all()


def test_gig_without_deviation_is_left_riemann_ig(batch):
    model, x, target = batch
    a = GuidedIG(n_steps=10, max_dist=0.0, output="logit").explain(model, x, target)
    ig = CaptumIG(model).attribute(x, baselines=torch.zeros_like(x), target=target, n_steps=10, method="riemann_left")
    torch.testing.assert_close(a, ig, rtol=1e-4, atol=1e-6 * ig.abs().max().item())
    guided = GuidedIG(n_steps=10, max_dist=0.5, output="logit").explain(model, x, target)
    assert (guided - ig).abs().max() > 0.05 * ig.abs().max()  # the guided path differs


class RecordingLinear(torch.nn.Module):
    """logits = W x + b, remembering every input it is evaluated at."""

    def __init__(self, n_features, n_classes=3):
        super().__init__()
        g = torch.Generator().manual_seed(4)
        self.w = torch.randn(n_classes, n_features, generator=g)
        self.b = torch.randn(n_classes, generator=g)
        self.seen = []

    def forward(self, x):
        self.seen.append(x.detach().clone())
        return x.flatten(1) @ self.w.T + self.b


def test_gig_path_on_linear_model():
    """Constant gradient w: the attribution telescopes to w * x; the recorded path keeps
    every feature within max_dist of the straight line, reduces the L1 distance to x by
    1 / n_steps per step, and moves low-|w| features first (position non-increasing in |w|)."""
    n_steps, max_dist = 8, 0.1
    x = torch.rand(2, 3, 4, 4, generator=torch.Generator().manual_seed(6)) * 0.9 + 0.05
    model, target = RecordingLinear(x[0].numel()), torch.tensor([0, 2])
    a = GuidedIG(n_steps=n_steps, max_dist=max_dist, output="logit").explain(model, x, target)
    w = model.w[target]
    torch.testing.assert_close(a.flatten(1), w * x.flatten(1), rtol=1e-5, atol=1e-6)
    assert len(model.seen) == n_steps and (model.seen[0] == 0).all()
    away = 0.0
    for t, point in enumerate(model.seen):
        pos = (point / x).flatten(1)  # each feature's position on its own straight line
        alpha = t / n_steps
        assert (pos >= max(alpha - max_dist, 0) - 1e-5).all() and (pos <= min(alpha + max_dist, 1) + 1e-5).all()
        torch.testing.assert_close((x - point).abs().flatten(1).sum(1), (1 - alpha) * x.flatten(1).sum(1))
        for i in range(len(x)):
            ranked = pos[i][w[i].abs().argsort()]
            assert (ranked[1:] <= ranked[:-1] + 1e-5).all()
        away = max(away, (pos - alpha).abs().max().item())
    assert away > max_dist / 2  # the path is not the straight line


def test_gig_matches_pair_saliency(batch, monkeypatch):
    """Same numbers as PAIR's guided_ig (float64 numpy) when the `saliency` package is installed."""
    pair = pytest.importorskip("saliency.core.guided_ig")
    quantile = np.quantile  # PAIR passes `interpolation=`, renamed `method=` in numpy 2
    monkeypatch.setattr(np, "quantile", lambda a, q, interpolation="linear": quantile(a, q, method=interpolation))
    model, x, target = batch
    ours = GuidedIG().explain(model, x, target)
    for i in range(len(x)):

        def grads(images, call_model_args=None, expected_keys=None):
            z = torch.from_numpy(images).float().requires_grad_(True)
            (g,) = torch.autograd.grad(torch.softmax(model(z), 1)[:, target[i]].sum(), z)
            return {"INPUT_OUTPUT_GRADIENTS": g.numpy()}

        ref = pair.GuidedIG().GetMask(
            x[i].numpy(), grads, x_steps=15, fraction=0.25, max_dist=0.02, x_baseline=np.zeros(x[i].shape)
        )
        torch.testing.assert_close(
            ours[i].double(), torch.from_numpy(ref), rtol=1e-4, atol=1e-6 * float(np.abs(ref).max())
        )
