"""F-Fidelity: surrogate fine-tuning, stochastic capped removal, Fid / R-Fid / F-Fid
scores on a hand-made model whose relevant pixels are known."""

import numpy as np
import pytest
import torch

from fudbench.analysis.curves import CURVE_SCORES
from fudbench.evaluators import build_evaluator
from fudbench.evaluators.faithfulness.ffid import FFID_CURVES

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)

FFID_CURVE_SCORES = {curve: CURVE_SCORES[curve] for curve, *_ in FFID_CURVES}


def build_ffid(settings, evaluation, assets, device):
    return build_evaluator("ffid", settings, evaluation, assets, device)


from fudbench.models.classifiers import Classifier, save_classifier
from fudbench.models.surrogate import finetune_surrogate, random_removal_masks
from fudbench.protocols.faithfulness.ffidelity import ClassifierMeanImputer, FidelityCurve, sample_removals

from numerics_support import assert_records_close


class LeftHalfNet(torch.nn.Module):
    """On normalised input z: class 0 iff the mean of z over the left half > 0.8.
    A left half at 0.9 (z = 1.6) is class 0 until more than half of it is
    removed (set to the mean, z = 0); the right half is ignored."""

    def forward(self, z):
        w = z.shape[-1]
        s = z[..., : w // 2].mean(dim=(1, 2, 3))
        return torch.stack([s - 0.8, torch.zeros_like(s)], 1)


def _left_half_model():
    return Classifier(LeftHalfNet(), [0.5] * 3, [0.25] * 3).eval()


def _left_bright(n=2, h=8):
    x = torch.full((n, 3, h, h), 0.5)
    x[..., : h // 2] = 0.9
    return x


def _halves(n=2, h=8, left=True):
    a = torch.zeros(n, 3, h, h)
    if left:
        a[..., : h // 2] = 1.0
    else:
        a[..., h // 2 :] = 1.0
    return a + 0.01 * torch.rand(n, 3, h, h, generator=torch.Generator().manual_seed(0))


# ---------------------------------------------------------------- removal sampling


@pytest.mark.parametrize("n_cand,alpha,beta", [(64, 0.5, 0.1), (10, 1.0, 0.1), (60, 1.0, 0.25), (3, 0.5, 0.5)])
def test_removal_cap_never_exceeded_and_only_candidates_removed(n_cand, alpha, beta):
    total = 64
    cap = int(beta * total)
    candidates = torch.zeros(total, dtype=torch.bool)
    candidates[torch.randperm(total, generator=torch.Generator().manual_seed(1))[:n_cand]] = True
    drop = sample_removals(candidates, alpha, cap, 500, torch.Generator().manual_seed(2))
    counts = drop.sum(1)
    assert int(counts.max()) <= cap
    assert not (drop & ~candidates).any()
    # eq. 6: the removal rate is truncated to cap / |candidates|, so the mean stays near min(alpha*n, cap)
    expected = min(alpha * n_cand, cap)
    assert abs(float(counts.float().mean()) - expected) <= 0.15 * expected + 0.5


def test_removal_without_cap_alpha_one_removes_the_whole_set():
    candidates = torch.tensor([True, False, True, True, False])
    drop = sample_removals(candidates, 1.0, None, 3, torch.Generator().manual_seed(0))
    assert (drop == candidates).all()


def test_fine_tuning_masks_respect_beta():
    keep = random_removal_masks(200, 8, 8, 0.1, torch.Generator().manual_seed(0))
    removed = (keep == 0).flatten(1).sum(1)
    assert int(removed.max()) <= 6 and int(removed.min()) == 0
    assert len(set(removed.tolist())) > 3  # a random fraction in [0, beta], not a constant one


def test_fine_tuning_removal_is_zero_in_normalised_space_on_every_channel():
    from fudbench.models.surrogate import remove_pixels, removal_value

    model = Classifier(LeftHalfNet(), [0.2, 0.5, 0.7], [0.25] * 3)
    x = torch.rand(4, 3, 8, 8)
    keep = random_removal_masks(4, 8, 8, 0.5, torch.Generator().manual_seed(1))
    z = model.normalize(remove_pixels(x, keep, removal_value(model)))
    gone = (keep == 0).expand_as(x)
    assert gone.any() and z[gone].abs().max() < 1e-6
    assert torch.equal(remove_pixels(x, keep, removal_value(model))[~gone], x[~gone])


def test_classifier_mean_imputer_fills_every_channel_with_the_dataset_mean():
    from fudbench.imputers.base import ImputeContext

    model = Classifier(LeftHalfNet(), [0.2, 0.5, 0.7], [0.25] * 3)
    x = torch.rand(2, 3, 4, 4)
    keep = torch.ones(2, 1, 4, 4)
    keep[:, :, 0, 0] = 0
    filled = ClassifierMeanImputer().fill(x, keep, ImputeContext(classifier=model))
    # (numpy, not torch.testing: its first call imports seconds of torch internals)
    np.testing.assert_allclose(filled[:, :, 0, 0].numpy(), [[0.2, 0.5, 0.7]] * 2, rtol=1e-6)
    assert torch.equal(filled[:, :, 1:], x[:, :, 1:])
    # zero in the classifier's normalised space, on all three channels (the reference code: channel 0 only)
    assert model.normalize(filled)[:, :, 0, 0].abs().max() < 1e-6


# ---------------------------------------------------------------- protocol


def _run(curve, x, y, a, ids, key=("t",)):
    return curve.run(_left_half_model(), x, y, a, ClassifierMeanImputer(), ids, key).records


def test_batched_equals_per_image_and_seeded():
    g = torch.Generator().manual_seed(3)
    x = 0.05 + 0.9 * torch.rand(3, 3, 8, 8, generator=g)
    x[..., :4] = 0.9
    a = torch.rand(3, 3, 8, 8, generator=g)
    y = torch.tensor([0, 0, 1])
    ids = [7, 11, 20]
    curve = FidelityCurve(
        "rfid_plus", "plus", sparsities=(0.25, 0.5, 0.75), alpha=0.5, beta=0.3, n_samples=6, batch_size=64
    )
    batched = _run(curve, x, y, a, ids)
    single = FidelityCurve(
        "rfid_plus", "plus", sparsities=(0.25, 0.5, 0.75), alpha=0.5, beta=0.3, n_samples=6, batch_size=5
    )
    per_image = [_run(single, x[i : i + 1], y[i : i + 1], a[i : i + 1], ids[i : i + 1]) for i in range(3)]
    import pandas as pd

    per_image = pd.concat(per_image, ignore_index=True)
    cols = ["image", "step", "removed", "sparsity", "fidelity", "confidence", "prediction"]
    # 54 fills in one batch against 18 per image in batches of 5: the same removals (seeded per image), the
    # confidences to float32 rounding (a CPU's kernels may round by batch size: numerics_support)
    assert_records_close(batched[cols], per_image[cols])
    again = _run(curve, x, y, a, ids)
    pd.testing.assert_frame_equal(batched[cols], again[cols], check_exact=True)  # the same batches: bit for bit
    other = _run(curve, x, y, a, ids, key=("other",))
    assert not np.allclose(batched["confidence"], other["confidence"])
    # the cap floor(0.3 * 64) = 19 pixels bounds the mean removed fraction too
    assert batched["removed"].max() <= 19 / 64 + 1e-12


def test_fid_plus_prefers_the_pixels_the_model_uses():
    x, y = _left_bright(), torch.tensor([0, 0])
    fid = dict(sparsities=(0.25, 0.5, 0.75), alpha=1.0, beta=None, n_samples=1)
    good, bad = _halves(left=True), _halves(left=False)
    plus = FidelityCurve("fid_plus", "plus", **fid)
    minus = FidelityCurve("fid_minus", "minus", **fid)
    auc = FFID_CURVE_SCORES["fid_plus"][2]
    good_plus, bad_plus = _run(plus, x, y, good, [0, 1]), _run(plus, x, y, bad, [0, 1])
    # at s = 0.5 the good set is the whole left half: removing it flips the class; the bad one never does
    assert good_plus.loc[good_plus.step == 1, "fidelity"].tolist() == [1.0, 1.0]
    assert (bad_plus.loc[bad_plus.step <= 1, "fidelity"] == 0).all()
    assert auc(good_plus[good_plus.image == 0]) > auc(bad_plus[bad_plus.image == 0])
    # Fid-: keeping the used pixels (removing the rest) keeps the class; lower is better
    good_minus, bad_minus = _run(minus, x, y, good, [0, 1]), _run(minus, x, y, bad, [0, 1])
    assert auc(good_minus[good_minus.image == 0]) < auc(bad_minus[bad_minus.image == 0])
    assert FFID_CURVE_SCORES["fid_plus"][1] and not FFID_CURVE_SCORES["fid_minus"][1]
    # stochastic R-Fidelity ranks them the same way
    rfid = FidelityCurve("rfid_plus", "plus", sparsities=(0.5, 0.75), alpha=0.8, n_samples=20)
    assert _run(rfid, x, y, good, [0, 1])["fidelity"].mean() > _run(rfid, x, y, bad, [0, 1])["fidelity"].mean()


def test_score_sign_is_clean_correct_minus_masked_accuracy():
    x = _left_bright(1)
    curve = FidelityCurve("fid_plus", "plus", sparsities=(0.5,), alpha=1.0, n_samples=1)
    a = _halves(1, left=True)
    # correct on the clean image, wrong once the left half is removed: 1 - 0 = +1
    assert _run(curve, x, torch.tensor([0]), a, [0])["fidelity"].item() == 1.0
    # target 1: wrong on the clean image, "right" after removal: 0 - 1 = -1 (the paper allows negative values)
    assert _run(curve, x, torch.tensor([1]), a, [0])["fidelity"].item() == -1.0


def test_ffid_cap_limits_what_removal_can_do():
    """With beta = 0.1 at most 6 of 64 pixels go: never enough to flip the hand-made model."""
    x, y = _left_bright(), torch.tensor([0, 0])
    curve = FidelityCurve("ffid_plus", "plus", sparsities=(0.25, 0.5, 0.75), alpha=0.5, beta=0.1, n_samples=10)
    rec = _run(curve, x, y, _halves(left=True), [0, 1])
    assert (rec["fidelity"] == 0).all()
    assert rec["removed"].max() <= 6 / 64


# ---------------------------------------------------------------- surrogate and evaluator


def _tiny_data(n=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, 3, 8, 8, generator=g), torch.randint(0, 4, (n,), generator=g)


def test_surrogate_finetuning_changes_weights_deterministically(tiny_cnn):
    x, y = _tiny_data()
    before = {k: v.clone() for k, v in tiny_cnn.state_dict().items()}
    kw = dict(beta=0.1, epochs=1, lr=1e-2, batch_size=8)
    a, info = finetune_surrogate(tiny_cnn, x, y, seed=5, **kw)
    b, _ = finetune_surrogate(tiny_cnn, x, y, seed=5, **kw)
    c, _ = finetune_surrogate(tiny_cnn, x, y, seed=6, **kw)
    for k, v in tiny_cnn.state_dict().items():
        assert torch.equal(v, before[k]), f"the original classifier changed ({k})"
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert any(not torch.equal(sa[k], before[k]) for k in sa if sa[k].is_floating_point())
    assert any(not torch.equal(sa[k], sc[k]) for k in sa if sa[k].is_floating_point())
    assert not a.training and not any(p.requires_grad for p in a.parameters())
    assert len(info["history"]) == 1 and np.isfinite(info["history"][0]["loss"])


def test_build_ffid_runs_six_curves_and_checks_inputs(tiny_cnn, tmp_path):
    settings = {
        "beta": 0.1,
        "alpha": 0.5,
        "n_samples": 3,
        "sparsities": [0.25, 0.75],
        "finetune": {"epochs": 1, "lr": 1e-3, "batch_size": 8, "weight_decay": 0.0},
        "batch_size": 64,
    }
    evaluation = {"reduction": "abs_sum"}
    with pytest.raises(ValueError, match="surrogate"):
        build_ffid(settings, evaluation, {}, "cpu")
    with pytest.raises(ValueError, match="evaluators.ffid.sparsities"):
        build_ffid({**settings, "sparsities": [0.5, 0.25]}, evaluation, {"surrogate": "x.pt"}, "cpu")
    path = tmp_path / "cnn_surrogate.pt"
    save_classifier(path, tiny_cnn, {"arch": "small_cnn", "width": 4}, 4, 8, {})
    ev = build_ffid(settings, evaluation, {"surrogate": str(path)}, "cpu")
    x, _ = _tiny_data(3)
    with torch.no_grad():
        y = tiny_cnn(x).argmax(1)
    records, samples = ev.run(tiny_cnn, x, y, torch.rand(3, 3, 8, 8), [0, 1, 2], ("t", "ffid"))
    assert sorted(records["curve"].unique()) == sorted(FFID_CURVE_SCORES)
    assert len(records) == 6 * 3 * 2
    assert set(samples) == {"ffid_plus", "removed_ffid_plus"} and samples["ffid_plus"].shape == (3, 2, 3, 8, 8)
    fid = records[records.curve == "fid_plus"]
    np.testing.assert_allclose(fid["removed"], fid["sparsity"])  # Fidelity removes the whole set
    assert records.loc[records.curve.str.startswith("ffid"), "removed"].max() <= 6 / 64
    for curve, (_, _, score) in FFID_CURVE_SCORES.items():
        for _, g in records[records.curve == curve].groupby("image"):
            assert np.isfinite(score(g))
