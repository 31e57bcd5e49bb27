"""Sensitivity-N and Infidelity: cases with known answers, captum agreement,
batching and seeding."""

import numpy as np
import pandas as pd
import pytest
import torch

from fudbench.evaluators.base import Evaluator
from fudbench.imputers import ZeroImputer
from fudbench.protocols.faithfulness.infidelity import Infidelity
from fudbench.protocols.faithfulness.sensitivity_n import SensitivityN, pearson
from fudbench.core.seeding import derive_seed

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)

NUMERIC = ["kept", "removed", "confidence", "energy", "l2"]


class LinearModel(torch.nn.Module):
    """logits = [w . x, -w . x, 0]: f_0(x) - f_0(x - I) = w . I exactly."""

    def __init__(self, weight):
        super().__init__()
        self.register_buffer("weight", weight)

    def forward(self, x):
        s = (x * self.weight).flatten(1).sum(1)
        return torch.stack([s, -s, torch.zeros_like(s)], 1)


class ConstantModel(torch.nn.Module):
    def forward(self, x):
        return torch.zeros(x.shape[0], 2) + x.sum() * 0


def _data(n=3, c=3, h=8, w=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = 0.05 + 0.9 * torch.rand(n, c, h, w, generator=g)
    attribution = torch.randn(n, c, h, w, generator=g)
    return x, attribution


# ---------------------------------------------------------------- Sensitivity-N


def test_sensitivity_n_linear_model_exact_attribution_correlates_perfectly():
    torch.manual_seed(0)
    x, random_attr = _data(2)
    weight = torch.randn(3, 8, 8)
    model = LinearModel(weight)
    y = torch.tensor([0, 0])
    proto = SensitivityN(fractions=(0.1, 0.5, 0.9), n_subsets=40, batch_size=50)
    # Zero fill removes exactly sum_{removed} w * x from the logit: attribution w * x is exact.
    good = proto.run(model, x, y, weight * x, ZeroImputer(), [0, 1], ("t",)).records
    np.testing.assert_allclose(good["correlation"], 1.0, atol=1e-5)
    assert not good["degenerate"].any()
    bad = proto.run(model, x, y, random_attr, ZeroImputer(), [0, 1], ("t",)).records
    assert bad["correlation"].abs().mean() < 0.5
    # Class 1's logit is -w.x: the same attribution anti-correlates perfectly.
    neg = proto.run(model, x, torch.tensor([1, 1]), weight * x, ZeroImputer(), [0, 1], ("t",)).records
    np.testing.assert_allclose(neg["correlation"], -1.0, atol=1e-5)


def test_sensitivity_n_brightness_model_and_intermediate_sample(brightness_classifier):
    x, _ = _data(1, h=6, w=6)
    proto = SensitivityN(fractions=(0.25, 0.5), n_subsets=30, keep_samples=True)
    res = proto.run(brightness_classifier, x, torch.tensor([0]), x.clone(), ZeroImputer(), [7], ("t",))
    rec = res.records
    np.testing.assert_allclose(rec["correlation"], 1.0, atol=1e-5)
    np.testing.assert_allclose(rec["removed"], [9 / 36, 18 / 36])
    np.testing.assert_allclose(rec["kept"], [27 / 36, 18 / 36])
    assert list(rec["image"]) == [7, 7] and list(rec["step"]) == [0, 1]
    assert res.samples.shape == (1, 2, 3, 6, 6) and res.samples.dtype == np.float16
    for j, k in enumerate([9, 18]):
        s = torch.from_numpy(res.samples[0, j].astype(np.float32))
        removed = (s == 0).all(0)
        assert int(removed.sum()) == k  # the first subset, shared by the channels
        logits = brightness_classifier(s[None])
        assert rec["confidence"][j] == pytest.approx(float(torch.softmax(logits, 1)[0, 0]), abs=1e-3)
        assert rec["l2"][j] == pytest.approx(float((x[0] * removed).norm()), rel=1e-3)
    assert (rec["seconds"] >= 0).all()


def test_sensitivity_n_degenerate_cases_count_as_zero(brightness_classifier):
    x, attr = _data(1)
    proto = SensitivityN(fractions=(0.5,), n_subsets=10)
    flat = ConstantModel()
    rec = proto.run(flat, x, torch.tensor([0]), attr, ZeroImputer(), [0], ("t",)).records
    assert rec["correlation"].tolist() == [0.0] and rec["degenerate"].tolist() == [True]
    const_attr = torch.ones_like(x)  # equal sums over equal-size subsets
    rec = proto.run(brightness_classifier, x, torch.tensor([0]), const_attr, ZeroImputer(), [0], ("t",)).records
    assert rec["correlation"].tolist() == [0.0] and rec["degenerate"].tolist() == [True]
    assert pearson([1, 2, 3], [2, 4, 6.5])[0] == pytest.approx(np.corrcoef([1, 2, 3], [2, 4, 6.5])[0, 1])


def test_sensitivity_n_batched_equals_per_image_and_seeding(tiny_cnn):
    x, attr = _data(3)
    y = torch.tensor([0, 1, 2])
    ids = [10, 11, 12]
    proto = SensitivityN(fractions=(0.25, 0.5), n_subsets=12, batch_size=7, keep_samples=True)
    full = proto.run(tiny_cnn, x, y, attr, ZeroImputer(), ids, ("s", 1))
    single = SensitivityN(fractions=(0.25, 0.5), n_subsets=12, batch_size=64, keep_samples=True)
    for i in range(3):
        one = single.run(tiny_cnn, x[i : i + 1], y[i : i + 1], attr[i : i + 1], ZeroImputer(), [ids[i]], ("s", 1))
        part = full.records[full.records.image == ids[i]].reset_index(drop=True)
        np.testing.assert_allclose(part["correlation"], one.records["correlation"], rtol=1e-5, atol=1e-6)
        for col in NUMERIC:
            np.testing.assert_allclose(part[col], one.records[col], rtol=1e-5, atol=1e-6)
        assert (part["prediction"] == one.records["prediction"]).all()
        np.testing.assert_array_equal(full.samples[i], one.samples[0])
    again = proto.run(tiny_cnn, x, y, attr, ZeroImputer(), ids, ("s", 1))
    np.testing.assert_array_equal(again.records["correlation"], full.records["correlation"])
    other = proto.run(tiny_cnn, x, y, attr, ZeroImputer(), ids, ("s", 2))
    assert not np.allclose(other.records["correlation"], full.records["correlation"])
    rec = full.records
    assert list(rec.columns) == [
        "curve",
        "image",
        "step",
        "kept",
        "removed",
        "target",
        "correlation",
        "degenerate",
        "confidence",
        "prediction",
        "energy",
        "l2",
        "seconds",
    ]
    assert (rec.curve == "sensitivity_n").all() and len(rec) == 6
    assert np.isfinite(rec[["correlation"] + NUMERIC + ["seconds"]].to_numpy(float)).all()


def test_sensitivity_n_defaults_and_evaluator_composition(tiny_cnn):
    x, attr = _data(2)
    y = torch.tensor([1, 3])
    ev = Evaluator(
        "attr",
        [(SensitivityN(keep_samples=True), ZeroImputer()), (Infidelity(n_perturb=8, keep_samples=True), ZeroImputer())],
    )
    records, samples = ev.run(tiny_cnn, x, y, attr, [0, 1], ("seed",))
    sens = records[records.curve == "sensitivity_n"]
    assert len(sens) == 18 and sens["correlation"].between(-1, 1).all()
    np.testing.assert_allclose(
        samples["removed_sensitivity_n"],
        [6 / 64, 13 / 64, 19 / 64, 26 / 64, 32 / 64, 38 / 64, 45 / 64, 51 / 64, 58 / 64],
    )
    assert samples["sensitivity_n"].shape == (2, 9, 3, 8, 8)
    assert samples["infidelity"].shape == (2, 1, 3, 8, 8) and samples["infidelity"].dtype == np.float16
    np.testing.assert_allclose(samples["removed_infidelity"], [1 / 3])


# ------------------------------------------------------------------- Infidelity


@pytest.mark.parametrize("perturbation", ["authors", "gaussian", "blur"])
def test_infidelity_zero_for_the_linear_model_weights(perturbation):
    torch.manual_seed(1)
    x, random_attr = _data(2)
    weight = torch.randn(3, 8, 8)
    model = LinearModel(weight)
    y = torch.tensor([0, 1])
    proto = Infidelity(perturbation=perturbation, n_perturb=20)
    # f_y(x) - f_y(x - I) = +-w . I: attribution +-w (any scale, normalize=True) is exact.
    exact = torch.stack([weight, -weight]) * 3.0
    good = proto.run(model, x, y, exact, None, [0, 1], ("t",)).records["infidelity"].to_numpy()
    bad = proto.run(model, x, y, random_attr, None, [0, 1], ("t",)).records["infidelity"].to_numpy()
    assert (bad > 1e-3).all()
    assert (good < 1e-5 * bad).all()


def _captum_reference(proto, model, x, y, attr, ids, key):
    from captum.metrics import infidelity

    out = []
    for i in range(x.shape[0]):
        pert = proto.perturbations(x[i], derive_seed(*key, ids[i]))

        def perturb_func(inputs, pert=pert):
            return pert, inputs - pert

        out.append(
            float(
                infidelity(
                    model,
                    perturb_func,
                    x[i : i + 1],
                    attr[i : i + 1],
                    target=int(y[i]),
                    n_perturb_samples=proto.n_perturb,
                    normalize=True,
                )
            )
        )
    return np.array(out)


def _by_hand(proto, model, x, y, attr, ids, key):
    out = []
    with torch.no_grad():
        for i in range(x.shape[0]):
            pert = proto.perturbations(x[i], derive_seed(*key, ids[i])).double()
            f0 = model(x[i : i + 1]).double()[0, y[i]]
            diff = (f0 - model((x[i] - pert.float())).double()[:, y[i]]).numpy()
            a_dot_i = (pert * attr[i].double()).flatten(1).sum(1).numpy()
            beta = (a_dot_i * diff).mean() / (a_dot_i**2).mean()
            out.append(((beta * a_dot_i - diff) ** 2).mean())
    return np.array(out)


def test_infidelity_agrees_with_captum_and_by_hand(tiny_cnn):
    x, attr = _data(3)
    y = torch.tensor([0, 2, 3])
    ids, key = [4, 5, 6], ("inf", "k")
    for perturbation in ["authors", "gaussian"]:
        proto = Infidelity(perturbation=perturbation, n_perturb=16, batch_size=40)
        rec = proto.run(tiny_cnn, x, y, attr, None, ids, key).records
        np.testing.assert_allclose(
            rec["infidelity"], _captum_reference(proto, tiny_cnn, x, y, attr, ids, key), rtol=1e-4, atol=1e-8
        )
        np.testing.assert_allclose(
            rec["infidelity"], _by_hand(proto, tiny_cnn, x, y, attr, ids, key), rtol=1e-3, atol=1e-7
        )


def test_infidelity_batched_chunked_per_image_and_seeding(tiny_cnn):
    x, attr = _data(3)
    y = torch.tensor([1, 0, 2])
    ids = [20, 21, 22]
    base = Infidelity(n_perturb=10, batch_size=64, keep_samples=True)  # 3 images (30 inputs) per captum call
    full = base.run(tiny_cnn, x, y, attr, None, ids, ("a",))
    chunked = Infidelity(n_perturb=10, batch_size=4, keep_samples=True)  # 1 image, captum chunks of 4, 4, 2
    part = chunked.run(tiny_cnn, x, y, attr, None, ids, ("a",))
    for col in ["infidelity"] + NUMERIC:
        np.testing.assert_allclose(full.records[col], part.records[col], rtol=1e-4, atol=1e-7)
    np.testing.assert_array_equal(full.samples, part.samples)
    for i in range(3):
        one = base.run(tiny_cnn, x[i : i + 1], y[i : i + 1], attr[i : i + 1], None, [ids[i]], ("a",))
        np.testing.assert_allclose(one.records["infidelity"], full.records["infidelity"][i : i + 1], rtol=1e-4)
        np.testing.assert_array_equal(one.samples[0], full.samples[i])
    again = base.run(tiny_cnn, x, y, attr, None, ids, ("a",))
    np.testing.assert_array_equal(again.records["infidelity"], full.records["infidelity"])
    other = base.run(tiny_cnn, x, y, attr, None, ids, ("b",))
    assert not np.allclose(other.records["infidelity"], full.records["infidelity"])
    rec = full.records
    assert list(rec.columns) == [
        "curve",
        "image",
        "step",
        "kept",
        "removed",
        "target",
        "infidelity",
        "confidence",
        "prediction",
        "energy",
        "l2",
        "seconds",
    ]
    assert (rec.curve == "infidelity").all() and (rec.step == 0).all() and list(rec.image) == ids
    assert np.isfinite(rec[["infidelity"] + NUMERIC + ["seconds"]].to_numpy(float)).all()
    assert full.samples.shape == (3, 1, 3, 8, 8) and full.samples.dtype == np.float16


class CountingModel(torch.nn.Module):
    """The wrapped model, counting the inputs it classifies."""

    def __init__(self, inner):
        super().__init__()
        self.inner, self.rows = inner, 0

    def forward(self, x):
        self.rows += x.shape[0]
        return self.inner(x)


def test_infidelity_reuses_its_model_responses_across_attributions(tiny_cnn):
    """Later explainers of a shard (same model, images, ids, targets, seed key) replay the responses:
    their scores are bit for bit those of a fresh protocol, without a forward pass of the model."""
    x, attr = _data(3)
    _, attr2 = _data(3, seed=1)
    y = torch.tensor([1, 0, 2])
    ids, key = [20, 21, 22], ("a",)
    model = CountingModel(tiny_cnn)
    shared = Infidelity(n_perturb=10, batch_size=8, keep_samples=True)  # 1 image per group, captum chunks 8 + 2
    first = shared.run(model, x, y, attr, None, ids, key)
    rows = model.rows
    assert rows == 3 * (10 + 2 + 1)  # perturbed inputs, clean input per captum chunk, the kept sample
    second = shared.run(model, x, y, attr2, None, ids, key)
    assert model.rows == rows  # replayed
    fresh = Infidelity(n_perturb=10, batch_size=8, keep_samples=True).run(model, x, y, attr2, None, ids, key)
    cols = [c for c in fresh.records.columns if c != "seconds"]
    pd.testing.assert_frame_equal(second.records[cols], fresh.records[cols])
    np.testing.assert_array_equal(second.samples, fresh.samples)
    assert not np.allclose(second.records["infidelity"], first.records["infidelity"])
    np.testing.assert_array_equal(second.records["seconds"], first.records["seconds"])
    # anything else that changes the responses makes it compute them again
    for args in [
        (model, x.clone(), y, ids, key),
        (model, x, y, ids, ("b",)),
        (model, x, y.flip(0), ids, key),
        (model, x, y, [7, 8, 9], key),
    ]:
        before = model.rows
        shared.run(args[0], args[1], args[2], attr, None, args[3], args[4])
        assert model.rows > before, args[2:]


def test_infidelity_perturbations_match_their_definitions():
    x, _ = _data(1, h=10, w=10)
    x = x[0]
    pert = Infidelity(perturbation="authors", n_perturb=30).perturbations(x, 3)
    perturbed = x - pert
    assert pert.shape == (30, 3, 10, 10)
    assert ((pert != 0).flatten(1).sum(1) == 100).all()  # H*W of the 3*H*W entries
    assert perturbed.min() >= 0 and perturbed.max() <= 1
    changed = perturbed[pert != 0]
    assert 0.4 < float((changed == 0).float().mean()) < 0.6  # r clipped at x half of the time: black
    assert float(changed[changed > 0].mean()) == pytest.approx(0.2 * np.sqrt(2 / np.pi), rel=0.15)
    g = Infidelity(perturbation="gaussian", n_perturb=30).perturbations(x, 3)
    assert (x - g).min() >= 0 and (x - g).max() <= 1 and (g != 0).float().mean() > 0.9
    b = Infidelity(perturbation="blur", n_perturb=30, blur_kernel=5, blur_sigma=2.0).perturbations(x, 3)
    pix = (b != 0).any(1).float().mean()
    assert 0.35 < float(pix) < 0.65  # blur_fraction 0.5 of the pixels, all channels together
    assert torch.equal(Infidelity(n_perturb=5).perturbations(x, 1), Infidelity(n_perturb=5).perturbations(x, 1))
    with pytest.raises(ValueError):
        Infidelity(perturbation="nope")


def test_infidelity_memo_survives_an_out_of_memory_back_off(tiny_cnn):
    """A forward that runs out of memory part-way through the first explainer's group: the batch is cut
    again (fudbench.core.batching), the part-filled responses are not kept, and the next explainer replays
    the groups as cut then; its scores equal a fresh protocol's with those groups."""
    x, attr = _data(3)
    _, attr2 = _data(3, seed=1)
    y = torch.tensor([1, 0, 2])
    ids, key = [20, 21, 22], ("a",)

    class FailsOnce(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner, self.calls, self.failed = inner, 0, False

        def forward(self, inp):
            self.calls += 1
            if self.calls == 2 and not self.failed:  # the second call of the first group (2 images)
                self.failed = True
                raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
            return self.inner(inp)

    model = FailsOnce(tiny_cnn)
    shared = Infidelity(n_perturb=10, batch_size=20)  # 2 images per group until the back-off, then 1
    shared.run(model, x, y, attr, None, ids, key)
    assert model.failed and shared.batch_state.size == 1
    calls = model.calls
    second = shared.run(model, x, y, attr2, None, ids, key)
    assert model.calls == calls  # replayed, group by group as cut after the back-off
    fresh = Infidelity(n_perturb=10, batch_size=10).run(tiny_cnn, x, y, attr2, None, ids, key)
    np.testing.assert_array_equal(second.records["infidelity"], fresh.records["infidelity"])
