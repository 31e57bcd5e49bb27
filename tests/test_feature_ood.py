"""Feature-based OOD detectors beside Energy (Table 2): Mahalanobis and k-NN on
the penultimate features, the hook that takes them from the logits' forward
pass, their record columns, the sanity corruption (10% of the pixels zeroed)
and the Table 2 rows per detector."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from fudbench.report import sanity
from fudbench.analysis.feature_ood import DETECTORS, SANITY_LABEL, FeatureDetector, fit_reference, zero_pixels
from fudbench.data.synthetic import make_benchmark
from fudbench.core.io import load_npz, write_npz
from fudbench.models.classifiers import Classifier, build_classifier, save_classifier
from fudbench.models.features import FeatureTap, features_of, last_linear, penultimate_features
from fudbench.report.ood_quality import ood_table_tex, table2_ood
from fudbench.report.paper_tables import OOD_TABLES

from numerics_support import RECORDS
from test_paper_profile import _run_script  # noqa: E402  (runs a job script as Snakemake would)

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)

# ------------------------------------------------------------------ detectors by hand


def test_mahalanobis_by_hand():
    """Class 0: (1, 0), (3, 0), mean (2, 0); class 1: (0, 1), (0, 3), mean (0, 2).
    Centred: (-1, 0), (1, 0), (0, -1), (0, 1): tied covariance diag(1/2, 1/2),
    precision diag(2, 2) without ridge. f = (2, 1): 2 * 1 = 2 to class 0,
    2 * (4 + 1) = 10 to class 1 -> 2. f = (3, 3): 2 * (1 + 9) = 20, 2 * (9 + 1) = 20 -> 20.
    Ridge 0.5 relative: lambda = 0.5 * trace / D = 0.25, precision 4/3: 4/3 and 40/3."""
    f = np.array([[1, 0], [3, 0], [0, 1], [0, 3]], float)
    y = np.array([0, 0, 1, 1])
    ref = fit_reference(f, y, ridge=0.0)
    np.testing.assert_allclose(ref["means"], [[2, 0], [0, 2]])
    np.testing.assert_allclose(ref["precision"], np.diag([2.0, 2.0]))
    det = FeatureDetector.from_arrays(ref)
    np.testing.assert_allclose(det.mahalanobis([[2, 1], [3, 3]]), [2.0, 20.0])
    ridged = FeatureDetector.from_arrays(fit_reference(f, y, ridge=0.5))
    np.testing.assert_allclose(ridged.mahalanobis([[2, 1], [3, 3]]), [4 / 3, 40 / 3])
    # the direct formula min_k (f - mu_k)^T P (f - mu_k) on random data, and batch invariance
    rng = np.random.default_rng(0)
    f, y = rng.normal(size=(50, 5)), rng.integers(0, 3, 50)
    ref = fit_reference(f, y)
    q = rng.normal(size=(7, 5))
    direct = [min((r - m) @ ref["precision"] @ (r - m) for m in ref["means"]) for r in q]
    det = FeatureDetector.from_arrays(ref)
    np.testing.assert_allclose(det.mahalanobis(q), direct, rtol=1e-10)
    assert np.array_equal(det.mahalanobis(q)[2:3], det.mahalanobis(q[2:3]))


def test_knn_by_hand():
    """Normalised bank (1, 0), (0, 1), (-1, 0); query (1, 1)/sqrt 2: distances
    sqrt(2 - sqrt 2), sqrt(2 - sqrt 2), sqrt(2 + sqrt 2); k = 2 -> sqrt(2 - sqrt 2)."""
    f = np.array([[2, 0], [0, 3], [-1, 0]], float)
    ref = fit_reference(f, np.array([0, 1, 1]), knn_k=2)
    det = FeatureDetector.from_arrays(ref)
    np.testing.assert_allclose(det.knn([[5, 5]]), [np.sqrt(2 - np.sqrt(2))])
    det.knn_k = 3
    np.testing.assert_allclose(det.knn([[5, 5]]), [np.sqrt(2 + np.sqrt(2))])


def test_unavailable_reference_scores_nan(tmp_path):
    from fudbench.analysis.feature_ood import save_reference, unavailable_reference

    save_reference(tmp_path / "ref.npz", unavailable_reference("no training images"))
    det = FeatureDetector.load(tmp_path / "ref.npz")
    assert not det.available and det.reason == "no training images"
    assert all(np.isnan(v).all() and len(v) == 3 for v in det.score(np.ones((3, 4))).values())


# ------------------------------------------------------------------ the hook


def _models():
    from fudbench.models.classifiers import SmallViT
    from fudbench.models.torchvision_models import build_torchvision_net

    torch.manual_seed(0)
    cnn = build_classifier({"arch": "small_cnn", "width": 4}, 3, 16, [0.5] * 3, [0.25] * 3).eval()
    vit = Classifier(SmallViT(3, 16, 4, 16, 1, 2), [0.5] * 3, [0.25] * 3).eval()
    resnet = Classifier(build_torchvision_net("torchvision_resnet50", 32, 10), [0.5] * 3, [0.25] * 3).eval()
    vit_b = Classifier(build_torchvision_net("torchvision_vit_b_16", 32, 10), [0.5] * 3, [0.25] * 3).eval()
    wrapped = nn.Sequential(
        nn.Identity(), build_classifier({"arch": "small_cnn", "width": 4}, 3, 16, [0.5] * 3, [0.25] * 3)
    ).eval()
    return {
        "cnn": (cnn, 16, "net.head"),
        "vit": (vit, 16, "net.head"),
        "resnet50": (resnet, 32, "net.fc"),
        "vit_b_16": (vit_b, 32, "net.heads.head"),
        "wrapped": (wrapped, 16, "1.net.head"),
    }


def test_hook_takes_the_last_linear_input_and_leaves_the_logits():
    for name, (model, size, layer) in _models().items():
        x = torch.rand(3, 3, size, size, generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            plain = model(x)
        seen = {}
        head = dict(model.named_modules())[layer]
        probe = head.register_forward_hook(lambda m, a, o: seen.update(x=a[0].detach().clone()))
        with FeatureTap(model, name) as tap, torch.no_grad():
            assert tap.layer_name == layer and last_linear(model)[1] is head
            logits = model(x)
        probe.remove()
        assert torch.equal(logits, plain), name  # the hooks change no logit
        f = features_of(logits)
        assert f is not None and torch.equal(f, seen["x"].flatten(1)), name
        assert torch.equal(nn.functional.linear(f, head.weight, head.bias), logits), name
        # hooks removed: no features on a later forward
        with torch.no_grad():
            assert features_of(model(x)) is None and not model._forward_hooks and not head._forward_hooks
        # penultimate_features: the same, from uint8 images too
        lg, ft = penultimate_features(model, (x * 255).round().to(torch.uint8), batch_size=2, name=name)
        assert lg.shape == (3, logits.shape[1]) and ft.shape == (3, f.shape[1])


def test_hook_features_of_the_cnn_by_hand():
    model, size, _ = _models()["cnn"]
    x = torch.rand(2, 3, size, size)
    with FeatureTap(model), torch.no_grad():
        f = features_of(model(x))
        want = model.net.features(model.normalize(x)).mean(dim=(2, 3))
    assert torch.equal(f, want)


def test_model_without_linear_is_named():
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten())
    with pytest.raises(ValueError, match=r"classifier 'convnet' \(Sequential\) has no torch.nn.Linear"):
        FeatureTap(net, "convnet")


def test_energies_and_features_share_the_forward_passes():
    from fudbench.models.energy import energies, energies_and_features

    model, size, _ = _models()["cnn"]
    x = torch.rand(5, 3, size, size, generator=torch.Generator().manual_seed(2))
    e, f = energies_and_features(model, x, batch_size=2, name="cnn")
    # the same forward passes, but the energy of all 5 logit rows at once against batch by batch: float32
    # rounding at most (numerics_support)
    np.testing.assert_allclose(e, energies(model, x, batch_size=2), **RECORDS)
    assert np.array_equal(f, penultimate_features(model, x, batch_size=2)[1])  # the same batches: bit for bit
    # no nn.Linear: the energies still, no features
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten()).eval()
    e, f = energies_and_features(net, x, name="convnet")
    assert f is None and np.array_equal(e, energies(net, x))


# ------------------------------------------------------------------ records


@pytest.fixture(scope="module")
def assets(tmp_path_factory, repo):
    from fudbench.models.score import build_unet, save_score_model

    d = tmp_path_factory.mktemp("ood_assets")
    cfg = {
        "image_size": 16,
        "shapes": ["circle", "square"],
        "dark": 0.1,
        "light": 0.9,
        "object_scale": [0.5, 0.8],
        "n_train": 40,
        "n_val": 4,
        "n_test": 6,
    }
    splits = make_benchmark(cfg, n_eval=6, seed=0)["splits"]
    write_npz(d / "eval.npz", **splits["eval"])
    write_npz(d / "train.npz", **splits["train"])
    torch.manual_seed(0)
    clf_cfg = {"arch": "small_cnn", "width": 4}
    save_classifier(d / "clf.pt", build_classifier(clf_cfg, 4, 16, [0.5] * 3, [0.25] * 3), clf_cfg, 4, 16, {})
    score_cfg = {
        "block_out_channels": [8, 16],
        "attention": [False, True],
        "layers_per_block": 1,
        "num_train_timesteps": 100,
        "beta_schedule": "linear",
    }
    save_score_model(d / "score.pt", build_unet(score_cfg, 16), score_cfg, 16, {})
    reference = {"n_images": 30, "ridge": 1e-3, "knn_k": 5, "batch_size": 16, "images": {"source": "synthetic"}}
    _run_script(
        repo,
        "ood_reference.py",
        d,
        wildcards={"model": "clf"},
        input={"model": str(d / "clf.pt"), "train": str(d / "train.npz")},
        output=[str(d / "ref.npz")],
        params={"reference": reference, "job": {"seed": 0, "device": "cpu"}},
    )
    return d


def test_reference_job(assets):
    ref = load_npz(assets / "ref.npz")
    assert bool(ref["available"]) and int(ref["n_images"]) == 30 and str(ref["layer"]) == "net.head"
    assert ref["means"].shape == (len(ref["classes"]), 16) and ref["precision"].shape == (16, 16)
    assert int(ref["knn_k"]) == 5 and np.isfinite(ref["precision"]).all()


EVALUATORS = {
    "fud": {
        "steps": 3,
        "guidance_scale": 4.0,
        "guidance_start": 0.5,
        "known": "clean",
        "clip_x0": True,
        "batch_size": 7,
    },
    "insdel": {"n_steps": 3, "blur_kernel": 5, "blur_sigma": 1.0, "batch_size": 5},
    "sensn": {"n_subsets": 3, "batch_size": 11},
    "infid": {"perturbation": "authors", "n_perturb": 3, "sigma": 0.2, "batch_size": 8},
    "srg": {
        "segmentation": "squares",
        "n_segments": 4,
        "compactness": 10.0,
        "square_side": 8,
        "n_steps": 4,
        "n_imputations": 1,
        "n_random": 1,
        "reduction": "sum",
        "imputers": ["mean"],
        "imputer_options": {"mean": {"mean": [0.5, 0.5, 0.5]}},
        "batch_size": 64,
    },
}


@pytest.mark.parametrize("evaluator", sorted(EVALUATORS))
def test_records_with_a_reference_differ_only_by_the_detector_columns(assets, tmp_path, evaluator):
    from fudbench.workflow.pipeline import evaluate_shard, explain_shard

    attr = explain_shard(
        assets / "clf.pt", assets / "eval.npz", 0, 6, "random", {}, "predicted", (0, "explain", "clf", "random"), "cpu"
    )
    write_npz(tmp_path / "attr.npz", **attr)
    args = (
        assets / "clf.pt",
        assets / "eval.npz",
        tmp_path / "attr.npz",
        0,
        6,
        evaluator,
        EVALUATORS[evaluator],
        {"ratios": [0.25, 0.5, 0.75], "reduction": "abs_sum"},
        {"score_model": assets / "score.pt"},
        (0, "evaluate", "clf", evaluator),
        "cpu",
    )
    without, s_without = evaluate_shard(*args)
    with_ref, s_with = evaluate_shard(*args, ood_reference=assets / "ref.npz")
    assert list(with_ref.columns) == list(without.columns)
    cols = list(without.columns)
    at = cols.index("energy")
    assert cols[at + 1 : at + 1 + len(DETECTORS)] == list(DETECTORS)
    assert without[list(DETECTORS)].isna().all().all()  # no reference: NaN
    others = [c for c in cols if c not in DETECTORS and c != "seconds"]
    pd.testing.assert_frame_equal(with_ref[others], without[others], check_exact=True)
    for k in s_without:
        assert np.array_equal(s_with[k], s_without[k])
    if evaluator == "srg":  # SRG records no sample response of its own: NaN there (not in Table 2)
        assert with_ref[list(DETECTORS)].isna().all().all()
    else:
        assert np.isfinite(with_ref[list(DETECTORS)].to_numpy()).all(), evaluator
        assert (with_ref["mahalanobis"] >= 0).all() and (with_ref["knn"] >= 0).all()


def test_record_scores_are_the_reference_scores_of_the_samples(assets, tmp_path):
    """FUD's first step kept samples, scored directly, equal the records' columns."""
    from fudbench.models.classifiers import load_classifier
    from fudbench.workflow.pipeline import evaluate_shard, explain_shard

    attr = explain_shard(
        assets / "clf.pt", assets / "eval.npz", 0, 6, "random", {}, "predicted", (0, "explain", "clf", "random"), "cpu"
    )
    write_npz(tmp_path / "attr.npz", **attr)
    rec, samples = evaluate_shard(
        assets / "clf.pt",
        assets / "eval.npz",
        tmp_path / "attr.npz",
        0,
        6,
        "insdel",
        EVALUATORS["insdel"],
        {"ratios": [0.5], "reduction": "abs_sum"},
        {},
        (0, "evaluate", "clf", "insdel"),
        "cpu",
        ood_reference=assets / "ref.npz",
    )
    curve = "deletion_ratios"
    x = torch.from_numpy(samples[curve][:, 0].astype(np.float32))
    model = load_classifier(assets / "clf.pt")
    _, feats = penultimate_features(model, x)
    want = FeatureDetector.load(assets / "ref.npz").score(feats)
    got = rec[(rec.curve == curve) & (rec.step == 0)].sort_values("image")
    # samples are stored as float16: the scores agree to that precision
    np.testing.assert_allclose(got["mahalanobis"], want["mahalanobis"], rtol=2e-2)


def test_api_takes_the_reference_and_removes_its_hooks(assets):
    import fudbench
    from fudbench.models.classifiers import load_classifier

    model = load_classifier(assets / "clf.pt")
    x = torch.from_numpy(load_npz(assets / "eval.npz")["images"][:3]).float().div(255)
    y = model(x).argmax(1)
    a = torch.rand(x.shape, generator=torch.Generator().manual_seed(0))
    plain = fudbench.evaluate(model, x, y, a, "insdel")
    scored = fudbench.evaluate(model, x, y, a, "insdel", assets={"ood_reference": str(assets / "ref.npz")})
    assert plain["mahalanobis"].isna().all() and plain["knn"].isna().all()
    rows = scored["step"] >= 0
    assert np.isfinite(scored.loc[rows, "mahalanobis"]).all()
    assert not model._forward_hooks and not model._forward_pre_hooks and not model.net.head._forward_hooks
    cols = [c for c in plain.columns if c not in DETECTORS and c != "seconds"]
    pd.testing.assert_frame_equal(plain[cols], scored[cols], check_exact=True)


# ------------------------------------------------------------------ sanity images


def test_sanity_images_have_ten_percent_of_their_pixels_zeroed():
    images = np.full((3, 3, 9, 11), 200, np.uint8)  # no zero pixel before
    out, masks = zero_pixels(images, [7, 8, 9], seed=0)
    k = round(0.1 * 9 * 11)
    assert k == 10 and (masks.sum(axis=(1, 2)) == k).all()
    zeroed = out == 0
    assert (zeroed.all(axis=1) == masks).all() and (zeroed.any(axis=1) == masks).all()  # all channels or none
    assert (out[~np.broadcast_to(masks[:, None], out.shape)] == 200).all() and (images == 200).all()
    # seeded per image id, not per position: image 8 alone gets the same pixels
    again, m8 = zero_pixels(images[1:2], [8], seed=0)
    assert np.array_equal(m8[0], masks[1]) and not np.array_equal(masks[0], masks[1])
    assert not np.array_equal(zero_pixels(images[1:2], [8], seed=1)[1][0], masks[1])


def test_clean_energy_job(assets, repo, tmp_path):
    """The clean_energy job: energy as before, the feature scores and the sanity copies' scores."""
    from fudbench.models.energy import energies
    from fudbench.models.classifiers import load_classifier

    out = tmp_path / "clean.parquet"
    _run_script(
        repo,
        "clean_energy.py",
        tmp_path,
        input={
            "images": str(assets / "eval.npz"),
            "classifiers": [str(assets / "clf.pt")],
            "references": [str(assets / "ref.npz")],
        },
        output=[str(out)],
        params={"models": ["clf"], "job": {"seed": 0, "device": "cpu"}},
    )
    frame = pd.read_parquet(out)
    assert list(frame.columns) == [
        "model",
        "image",
        "energy",
        "mahalanobis",
        "knn",
        "sanity_energy",
        "sanity_mahalanobis",
        "sanity_knn",
    ]
    x = torch.from_numpy(load_npz(assets / "eval.npz")["images"]).float().div(255)
    assert np.array_equal(frame["energy"].to_numpy(), energies(load_classifier(assets / "clf.pt"), x))
    assert np.isfinite(frame.drop(columns="model").to_numpy(float)).all()
    assert not np.array_equal(frame["mahalanobis"], frame["sanity_mahalanobis"])


# ------------------------------------------------------------------ Table 2


def _table2_inputs(n=40, seed=0):
    """Clean scores ~ N(0, 1) for each detector; FUD samples alike; INS/DEL
    samples far out for energy and mahalanobis, alike for knn; sanity copies far out."""
    rng = np.random.default_rng(seed)
    rows = []
    for model in ("cnn", "vit"):
        for curve, shift in (("fud", 0.0), ("deletion_ratios", 20.0)):
            for step in range(2):
                rows.append(
                    pd.DataFrame(
                        {
                            "model": model,
                            "explainer": "ig",
                            "curve": curve,
                            "image": np.arange(n),
                            "step": step,
                            "energy": rng.normal(shift, 1, n),
                            "mahalanobis": rng.normal(shift, 1, n),
                            "knn": rng.normal(0, 1, n),
                        }
                    )
                )
    clean = pd.concat(
        [
            pd.DataFrame(
                {
                    "model": m,
                    "image": np.arange(n),
                    **{d: rng.normal(0, 1, n) for d in ("energy", "mahalanobis", "knn")},
                    **{f"sanity_{d}": rng.normal(10, 1, n) for d in ("energy", "mahalanobis", "knn")},
                }
            )
            for m in ("cnn", "vit")
        ],
        ignore_index=True,
    )
    return pd.concat(rows, ignore_index=True), clean


def _write(d, name, summary, tex):
    summary.to_csv(d / f"{name}.csv", index=False, float_format="%.6g")
    (d / f"{name}.tex").write_text(tex)


def test_table2_rows_per_detector_and_the_sanity_row(tmp_path):
    records, clean = _table2_inputs()
    evals = {"deletion_ratios": "INS/DEL", "fud": "FUD"}
    summary, tex = table2_ood(
        records, clean, evals, ["cnn", "vit"], n_boot=50, ci=0.95, seed=0, **OOD_TABLES["table2_ood"]
    )
    assert list(summary.columns[:4]) == ["evaluator", "detector", "model", "metric"]
    assert len(summary) == 3 * 3 * 2 * 4  # (2 evaluators + sanity) x 3 detectors x 2 models x 4 metrics
    v = summary.set_index(["evaluator", "detector", "model", "metric"])["value"]
    for m in ("cnn", "vit"):
        assert v["INS/DEL", "energy", m, "AUROC"] == 1.0 and v["INS/DEL", "mahalanobis", m, "AUROC"] == 1.0
        assert abs(v["INS/DEL", "knn", m, "AUROC"] - 0.5) < 0.15
        for det in ("energy", "mahalanobis", "knn"):
            assert v[SANITY_LABEL, det, m, "AUROC"] == 1.0
            assert abs(v["FUD", det, m, "AUROC"] - 0.5) < 0.15
    sane = summary[summary.evaluator == SANITY_LABEL]
    assert (sane["n_ood"] == 40).all() and (sane["n_runs"] == 1).all()
    # the energy rows are those of the energy-only layout (same numbers, same bootstrap)
    energy_only = {m: g.set_index("image")["energy"] for m, g in clean.groupby("model")}
    old, old_tex = table2_ood(
        records, energy_only, evals, ["cnn", "vit"], n_boot=50, ci=0.95, seed=0, **OOD_TABLES["table2_ood"]
    )
    assert "detector" not in old.columns and "Detector" not in old_tex
    new = summary[(summary.detector == "energy") & (summary.evaluator != SANITY_LABEL)]
    pd.testing.assert_frame_equal(new.drop(columns="detector").reset_index(drop=True), old, check_exact=True)
    assert "Eval & Detector &" in tex and "Sanity: 10\\% pixels zeroed & Mahalanobis &" in tex
    assert "k-NN" in tex and "\\cmidrule(lr){3-5}" in tex
    # the .tex shows the CSV, with Table 8 rendered from the CSV (as the workflow does)
    _write(tmp_path, "table2_ood", summary, tex)
    csv = pd.read_csv(tmp_path / "table2_ood.csv")
    _write(
        tmp_path,
        "table8_ood",
        csv,
        ood_table_tex(csv, list(dict.fromkeys(csv["evaluator"])), ["cnn", "vit"], **OOD_TABLES["table8_ood"]),
    )
    assert sanity.tex_matches_csv(tmp_path) == []
    assert sanity.values_in_range(tmp_path) == [] and sanity.shared_rows_agree(tmp_path) == []
    shown = sanity.tex_cells("ood", tex)
    assert shown[SANITY_LABEL, "knn", "cnn", "AUROC"][0].mean == 1.0
    assert shown["INS/DEL", "energy", "vit", "FPR95"][1] is True  # arrow of FPR95: up


def test_table2_leaves_out_a_detector_without_clean_scores():
    records, clean = _table2_inputs()
    clean["knn"] = np.nan
    clean["sanity_knn"] = np.nan
    summary, tex = table2_ood(records.drop(columns="knn"), clean, {"fud": "FUD"}, ["cnn"], n_boot=0, seed=0)
    assert set(summary["detector"]) == {"energy", "mahalanobis"} and "& k-NN &" not in tex
    # a detector column missing from the records: its rows are empty (--), counted non-finite
    summary, tex = table2_ood(
        records.drop(columns="mahalanobis"), clean.assign(knn=0.0), {"fud": "FUD"}, ["cnn"], n_boot=0, seed=0
    )
    fud = summary[(summary.evaluator == "FUD") & (summary.detector == "mahalanobis")]
    assert fud["value"].isna().all() and (fud["n_nonfinite"] == 2 * 40).all() and (fud["n_ood"] == 0).all()


def test_table_ood_script(repo, tmp_path):
    records, clean = _table2_inputs()
    records.to_parquet(tmp_path / "records.parquet")
    clean.to_parquet(tmp_path / "clean.parquet")
    out = {"tex": str(tmp_path / "table2_ood.tex"), "csv": str(tmp_path / "table2_ood.csv")}
    _run_script(
        repo,
        "table_ood.py",
        tmp_path,
        wildcards={"table": "table2_ood"},
        input={"records": str(tmp_path / "records.parquet"), "clean_energy": str(tmp_path / "clean.parquet")},
        output=out,
        params={
            "analysis": {"bootstrap": 20, "ci": 0.95, "ood_pooling": "run"},
            "seed": 0,
            "models": ["cnn", "vit"],
            "explainers": ["ig"],
        },
    )
    _run_script(
        repo,
        "table8_ood.py",
        tmp_path,
        input=[out["csv"]],
        output={"tex": str(tmp_path / "table8_ood.tex"), "csv": str(tmp_path / "table8_ood.csv")},
        params={"models": ["cnn", "vit"]},
    )
    assert sanity.tex_matches_csv(tmp_path) == [] and sanity.shared_rows_agree(tmp_path) == []
    assert set(pd.read_csv(out["csv"])["detector"]) == {"energy", "mahalanobis", "knn"}


# ------------------------------------------------------------------ reference images per data source


def test_reference_images_of_imagenet_and_folder(tmp_path):
    """ImageNet: validation images outside the evaluated sample's manifest;
    folder: the labels file's rows after the first n_eval."""
    from PIL import Image

    from fudbench.analysis.feature_ood import reference_images

    rng = np.random.default_rng(0)
    root = tmp_path / "val"
    for k in range(1000):
        (root / f"n{k:08d}").mkdir(parents=True)
    files = []
    for i in range(6):
        f = f"n{i % 2:08d}/ILSVRC2012_val_{i + 1:08d}.JPEG"
        Image.fromarray(rng.integers(0, 256, (40, 48, 3), dtype=np.uint8)).save(root / f)
        files.append(f)
    pd.DataFrame({"file": files[:4]}).to_csv(tmp_path / "manifest.csv", index=False)
    imagenet = {"root": str(root), "layout": "auto", "labels": None, "synsets": None, "resize": 36, "crop": 32}
    spec = {"source": "imagenet", "imagenet": imagenet, "manifest": str(tmp_path / "manifest.csv")}
    images, labels, what = reference_images(spec, seed=0, n=10)
    assert images.shape == (2, 3, 32, 32) and images.dtype == np.uint8 and sorted(labels) == [0, 1]
    assert "2 ImageNet validation images outside the evaluated sample" in what
    # folder: 6 listed, 4 evaluated -> 2 reference images; none left -> unavailable
    (tmp_path / "labels.csv").write_text("file,label\n" + "".join(f"{f},{i % 2}\n" for i, f in enumerate(files)))
    folder = {"root": str(root), "labels": str(tmp_path / "labels.csv"), "resize": 20, "crop": 16}
    images, labels, _ = reference_images({"source": "folder", "folder": folder, "n_eval": 4}, seed=0)
    assert images.shape == (2, 3, 16, 16) and sorted(labels) == [1, 1]  # rows sorted by file: _4 and _6 left
    images, labels, why = reference_images({"source": "folder", "folder": folder, "n_eval": 6}, seed=0)
    assert images is None and "0 listed images after the evaluated ones" in why


def test_reference_job_without_linear_is_unavailable(repo, tmp_path, assets):
    """A classifier with no nn.Linear: the job writes an unavailable reference
    naming it; evaluate jobs then give NaN."""
    from fudbench.models import classifiers

    class ConvHead(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)

        def forward(self, x):
            return self.conv(x).mean(dim=(2, 3))

    model = Classifier(ConvHead(), [0.5] * 3, [0.25] * 3).eval()
    orig = classifiers.load_classifier
    try:
        classifiers.load_classifier = lambda path, device="cpu": model  # the script imports it at run time
        _run_script(
            repo,
            "ood_reference.py",
            tmp_path,
            wildcards={"model": "conv"},
            input={"model": "unused.pt", "train": str(assets / "train.npz")},
            output=[str(tmp_path / "ref.npz")],
            params={
                "reference": {
                    "n_images": 10,
                    "ridge": 1e-3,
                    "knn_k": 3,
                    "batch_size": 8,
                    "images": {"source": "synthetic"},
                },
                "job": {"seed": 0, "device": "cpu"},
            },
        )
    finally:
        classifiers.load_classifier = orig
    det = FeatureDetector.load(tmp_path / "ref.npz")
    assert not det.available and "classifier 'conv' (Classifier) has no torch.nn.Linear" in det.reason
