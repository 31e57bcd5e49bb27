"""Boundary / adversarial-path explainers: BIG, AGI, MFABA.

Generic checks run on the `tiny_cnn` fixture (random weights: its outputs
barely depend on the input, so attacks mostly fail) and on a small random tanh
MLP whose labels flip within small budgets, so early stopping, success masks
and fallbacks are all exercised.
"""

import pytest
import torch

from fudbench.explainers.agi import AGI
from fudbench.explainers.boundary_ig import BoundaryIG
from fudbench.explainers.mfaba import MFABA

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)

SMALL = {
    "big": lambda: BoundaryIG(epsilons=[0.02, 0.05, 0.1, 0.3], num_steps=8, ig_steps=16, batch_size=64),
    "agi": lambda: AGI(k=3, epsilon=0.01, max_iter=10, batch_size=5),
    "mfaba": lambda: MFABA(epsilon=0.3, num_steps=30, step_size=0.005),
}


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Flatten(), torch.nn.Linear(192, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4)
    ).eval()


@pytest.fixture(scope="module")
def mlp_batch():
    model = _mlp()
    torch.manual_seed(1)
    x = torch.rand(4, 3, 8, 8)
    with torch.no_grad():
        return model, x, model(x).argmax(1)


def _score(model, x, target, softmax):
    with torch.no_grad():
        out = model(x)
        out = out.softmax(1) if softmax else out
        return out.gather(1, target.view(-1, 1)).squeeze(1)


@pytest.mark.parametrize("which", ["cnn", "mlp"])
@pytest.mark.parametrize("name", sorted(SMALL))
def test_shape_finite_batched_and_deterministic(name, which, request):
    model, x, target = request.getfixturevalue(f"{which}_batch")
    method = SMALL[name]()
    assert method.name == name
    seeds = list(range(11, 11 + len(x)))
    a = method.explain(model, x, target, seeds=seeds)
    assert a.shape == x.shape and a.device == x.device and not a.requires_grad
    assert torch.isfinite(a).all() and a.abs().sum() > 0
    single = torch.cat(
        [method.explain(model, x[i : i + 1], target[i : i + 1], seeds=[seeds[i]]) for i in range(len(x))]
    )
    torch.testing.assert_close(a, single, atol=1e-6, rtol=1e-4)
    torch.testing.assert_close(a, method.explain(model, x, target, seeds=seeds), atol=0, rtol=0)


# ---------------------------------------------------------------- BIG


def test_big_boundary_points_are_misclassified_and_closest(mlp_batch):
    model, x, target = mlp_batch
    eps = [0.02, 0.05, 0.1, 0.3]
    big = BoundaryIG(epsilons=eps, num_steps=8)
    points, found = big.boundary_points(model, x, target)
    assert found.all()  # the property below is not vacuous
    with torch.no_grad():
        assert (model(points).argmax(1) != target).all()
    assert points.min() >= 0 and points.max() <= 1
    assert ((points - x).abs().flatten(1).amax(1) <= max(eps) + 1e-6).all()
    dist = (points - x).flatten(1).norm(dim=1)
    for e in eps:  # no single successful attack is closer than the kept point
        p, ok = BoundaryIG(epsilons=[e], num_steps=8).boundary_points(model, x, target)
        d = (p - x).flatten(1).norm(dim=1)
        assert (dist[ok] <= d[ok] + 1e-6).all()


def test_big_l2_attacks(mlp_batch):
    model, x, target = mlp_batch
    eps = [0.5, 1.0, 3.0]
    points, found = BoundaryIG(epsilons=eps, num_steps=8, norm="l2").boundary_points(model, x, target)
    assert found.all()
    with torch.no_grad():
        assert (model(points).argmax(1) != target).all()
    assert ((points - x).flatten(1).norm(dim=1) <= max(eps) + 1e-5).all()
    assert points.min() >= 0 and points.max() <= 1


def test_big_completeness_from_the_boundary_point(mlp_batch):
    model, x, target = mlp_batch
    big = BoundaryIG(epsilons=[0.05, 0.1, 0.3], num_steps=8, ig_steps=200, batch_size=800)
    a = big.explain(model, x, target)
    points, _ = big.boundary_points(model, x, target)
    gap = _score(model, x, target, False) - _score(model, points, target, False)
    assert (gap > 0).all()
    torch.testing.assert_close(a.flatten(1).sum(1), gap, atol=2e-3 * gap.abs().max().item(), rtol=0.01)


def test_big_attacks_reach_their_own_budget(cnn_batch):
    # the tiny CNN is hard to flip: without early stop the attack should use its whole budget
    # (the reference code's fixed step 0.001 would cap it at 10 x 0.001)
    model, x, target = cnn_batch
    points, found = BoundaryIG(epsilons=[0.1], num_steps=10, early_stop=False).boundary_points(model, x, target)
    assert not found.any()
    torch.testing.assert_close((points - x).abs().flatten(1).amax(1), torch.full((len(x),), 0.1))
    capped, _ = BoundaryIG(epsilons=[0.1], num_steps=10, step_size=0.001).boundary_points(model, x, target)
    assert ((capped - x).abs().flatten(1).amax(1) <= 0.01 + 1e-6).all()


def test_big_fallbacks(cnn_batch):
    model, x, target = cnn_batch
    points, found = BoundaryIG(epsilons=[0.01], num_steps=2, fallback="zero").boundary_points(model, x, target)
    assert not found.any() and (points == 0).all()
    strong, _ = BoundaryIG(epsilons=[0.01, 0.03], num_steps=2).boundary_points(model, x, target)
    big_eps, _ = BoundaryIG(epsilons=[0.03], num_steps=2).boundary_points(model, x, target)
    # the larger attack lowers the target probability more, so it is the one kept
    torch.testing.assert_close(strong, big_eps)


# ---------------------------------------------------------------- AGI


def test_agi_samples_only_false_classes_and_depends_on_seeds():
    agi = AGI(k=5)
    target = torch.tensor([0, 3, 99, 42, 42])
    c1 = agi.sample_classes(target, 100, seeds=[1, 2, 3, 4, 4])
    assert c1.shape == (5, 5)
    assert (c1 != target.view(-1, 1)).all() and ((c1 >= 0) & (c1 < 100)).all()
    assert all(len(set(row.tolist())) == 5 for row in c1)
    assert torch.equal(c1[3], c1[4])  # same seed, same target -> same classes
    assert torch.equal(c1, agi.sample_classes(target, 100, seeds=[1, 2, 3, 4, 4]))
    c2 = agi.sample_classes(target, 100, seeds=[5, 6, 7, 8, 9])
    assert not torch.equal(c1, c2)
    # fewer classes than k: every other class once
    few = agi.sample_classes(torch.tensor([2, 0]), 4, seeds=[1, 2])
    assert [sorted(r) for r in few.tolist()] == [[0, 1, 3], [1, 2, 3]]


def test_agi_with_all_classes_ignores_seeds(mlp_batch):
    model, x, target = mlp_batch
    agi = AGI(k=20, epsilon=0.01, max_iter=10)
    torch.testing.assert_close(
        agi.explain(model, x, target, seeds=[1, 2, 3, 4]),
        agi.explain(model, x, target, seeds=[9, 8, 7, 6]),
        atol=1e-7,
        rtol=1e-5,
    )
    some = AGI(k=1, epsilon=0.01, max_iter=10)
    assert not torch.allclose(
        some.explain(model, x, target, seeds=[1, 2, 3, 4]), some.explain(model, x, target, seeds=[5, 6, 7, 8])
    )


def test_agi_paths_reach_the_false_class_and_integrate_the_target(mlp_batch):
    model, x, target = mlp_batch
    agi = AGI(k=3, epsilon=0.002, max_iter=150)
    classes = agi.sample_classes(target, 4, seeds=[1, 2, 3, 4])
    maps, ends = agi.paths(model, x, target, classes)
    with torch.no_grad():
        pred_end = model(ends.flatten(0, 1)).argmax(1).view(classes.shape)
    assert (pred_end == classes).float().mean() > 0.5  # most paths reach their class
    # first-order path integral of p_y: sum of AGI_j ~ p_y(x) - p_y(end_j)
    p0 = _score(model, x, target, True).view(-1, 1)
    p_end = _score(model, ends.flatten(0, 1), target.repeat_interleave(3), True).view(classes.shape)
    torch.testing.assert_close(maps.flatten(2).sum(2), p0 - p_end, atol=2e-3, rtol=0.03)
    torch.testing.assert_close(agi.explain(model, x, target, seeds=[1, 2, 3, 4]), maps.mean(1))


# ---------------------------------------------------------------- MFABA


def test_mfaba_stops_when_the_label_flips(mlp_batch):
    model, x, target = mlp_batch
    mfaba = MFABA(num_steps=30, step_size=0.005)
    a, end, steps = mfaba.run(model, x, target)
    assert ((steps >= 1) & (steps < 30)).all()  # every image flips within the budget
    with torch.no_grad():
        assert (model(end).argmax(1) != target).all()
    # one step fewer: still the target class, so the flip happened exactly at the last step
    for i in range(len(x)):
        if steps[i] > 1:
            _, before, _ = MFABA(num_steps=int(steps[i]) - 1, step_size=0.005).run(
                model, x[i : i + 1], target[i : i + 1]
            )
            with torch.no_grad():
                assert model(before).argmax(1).item() == target[i].item()
    # a larger budget changes nothing once the label has flipped
    torch.testing.assert_close(MFABA(num_steps=60, step_size=0.005).explain(model, x, target), a, atol=0, rtol=0)
    # without early stopping the path goes on
    assert (MFABA(num_steps=30, step_size=0.005, early_stop=False).run(model, x, target)[2] == 30).all()


def test_mfaba_attribution_sums_to_the_probability_drop(mlp_batch):
    model, x, target = mlp_batch
    a, end, _ = MFABA(num_steps=30, step_size=0.005).run(model, x, target)
    drop = _score(model, x, target, True) - _score(model, end, target, True)
    assert (drop > 0).all()
    torch.testing.assert_close(a.flatten(1).sum(1), drop, atol=1e-3, rtol=0.03)


def test_mfaba_path_stays_in_the_eps_ball(mlp_batch):
    model, x, target = mlp_batch
    _, end, _ = MFABA(epsilon=0.02, num_steps=30, step_size=0.005, early_stop=False).run(model, x, target)
    assert ((end - x).abs().amax() <= 0.02 + 1e-6) and end.min() >= 0 and end.max() <= 1
