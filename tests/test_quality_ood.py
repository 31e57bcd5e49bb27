"""Image-quality metrics (piq, small-size adaptations), Table 2 (energy OOD), Table 3, Fig. 2."""

import matplotlib.figure
import numpy as np
import pandas as pd
import pytest
import torch

from fudbench.models.energy import ood_metrics
from fudbench.analysis.quality import (
    HIGHER_IS_BETTER,
    PERFECT,
    QUALITY_METRICS,
    adaptation,
    msssim_levels,
    quality_metrics,
)
from fudbench.report.ood_quality import fig2_radar, radar_normalise, table2_ood, table3_quality, weighted_ood_metrics


def _images(n, size, seed=0):
    """Smooth structured images in [0, 1]: ramps plus bilinear-upsampled random blobs."""
    g = torch.Generator().manual_seed(seed)
    lin = torch.linspace(0, 1, size)
    ramps = torch.stack([lin[None, :].expand(size, size), lin[:, None].expand(size, size), lin[:, None] * lin])
    blobs = torch.rand(n, 3, max(2, size // 4), max(2, size // 4), generator=g)
    blobs = torch.nn.functional.interpolate(blobs, size=(size, size), mode="bilinear", align_corners=False)
    return (0.5 * ramps + 0.5 * blobs).clamp(0, 1)


def _noisy(x, sigma, seed):
    g = torch.Generator().manual_seed(seed)
    return (x + sigma * torch.randn(x.shape, generator=g)).clamp(0, 1)


# ------------------------------------------------------------------ quality


@pytest.mark.numerics
@pytest.mark.parametrize("size", [16, 32, 64])
def test_identical_images_give_perfect_scores(size):
    x = _images(3, size)
    q = quality_metrics(x, x.clone(), batch_size=2)
    assert list(q) == list(QUALITY_METRICS)
    for m in QUALITY_METRICS:
        assert q[m].shape == (3,)
        np.testing.assert_allclose(q[m], PERFECT[m], atol=1e-4, err_msg=m)


@pytest.mark.parametrize("size", [16, 32, 64])
def test_noisier_scores_worse_on_every_metric(size):
    x = _images(4, size, seed=1)
    mild = quality_metrics(_noisy(x, 0.03, 2), x)
    strong = quality_metrics(_noisy(x, 0.25, 3), x)
    for m in QUALITY_METRICS:
        a, b = mild[m], strong[m]
        better = a > b if HIGHER_IS_BETTER[m] else a < b
        assert better.all(), (m, a, b)


def test_small_sizes_and_adaptations():
    for size in (3, 5, 8, 11, 15, 20):  # below every piq minimum: no crash, finite values
        x = _images(2, size, seed=size)
        q = quality_metrics(_noisy(x, 0.1, 0), x)
        for m in QUALITY_METRICS:
            assert np.isfinite(q[m]).all(), (size, m)
    x = _images(2, 48)[..., :24, :]  # non-square: the shorter side decides
    q = quality_metrics(_noisy(x, 0.1, 0), x)
    assert all(np.isfinite(q[m]).all() for m in QUALITY_METRICS)
    assert adaptation(24, 48)["MS-SSIM"].startswith("2 scale")
    assert [msssim_levels(s) for s in (16, 21, 32, 41, 81, 160, 161, 224)] == [1, 2, 2, 3, 4, 4, 5, 5]
    assert set(adaptation(224, 224).values()) == {"piq defaults"}
    a32 = adaptation(32, 32)
    assert a32["MS-SSIM"].startswith("2 scale") and a32["SSIM"] == a32["HaarPSI"] == "piq defaults"
    assert adaptation(8, 8)["HaarPSI"] == "nearest-neighbour x2"
    with pytest.raises(ValueError):
        quality_metrics(torch.zeros(1, 3, 2, 2), torch.zeros(1, 3, 2, 2))


@pytest.mark.numerics
def test_quality_batching_broadcast_and_flat_images():
    x = _images(5, 32, seed=4)
    y = _noisy(x, 0.1, 5)
    full = quality_metrics(y, x, batch_size=64)
    chunked = quality_metrics(y.numpy(), x.numpy(), batch_size=2)  # numpy input, chunks of 2
    for m in QUALITY_METRICS:
        np.testing.assert_allclose(full[m], chunked[m], rtol=1e-5, atol=1e-6)
    one = quality_metrics(y, x[:1], metrics=("PSNR", "GMSD"))  # one original for all samples
    assert list(one) == ["PSNR", "GMSD"]
    np.testing.assert_allclose(one["PSNR"][0], full["PSNR"][0], rtol=1e-6)
    flat = torch.full((1, 3, 16, 16), 0.3)
    q = quality_metrics(flat, flat)
    for m in QUALITY_METRICS:
        np.testing.assert_allclose(q[m], PERFECT[m], atol=1e-4, err_msg=m)


# ------------------------------------------------------------------ Table 2


def test_weighted_ood_metrics_equal_sklearn_on_duplicated_data():
    rng = np.random.default_rng(0)
    for _ in range(60):
        e_in = np.round(rng.normal(0, 1, rng.integers(2, 25)), 1)  # rounded: many ties
        e_out = np.round(rng.normal(0.5, 1, rng.integers(2, 40)), 1)
        w = rng.integers(0, 3, len(e_in) + len(e_out))
        if w[: len(e_in)].sum() == 0 or w[len(e_in) :].sum() == 0:
            continue
        ref = ood_metrics(np.repeat(e_in, w[: len(e_in)]), np.repeat(e_out, w[len(e_in) :]))
        score, is_in = -np.r_[e_in, e_out], np.r_[np.ones(len(e_in)), np.zeros(len(e_out))]
        o = np.argsort(-score, kind="mergesort")
        got = weighted_ood_metrics(score[o], is_in[o], w[o])
        for k in ref:
            assert got[k] == pytest.approx(ref[k], abs=1e-12), k


def _ood_records(shift, n_images=60, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for model in ("cnn", "vit"):
        for ex in ("sm", "ig"):
            for curve in ("fud", "deletion_ratios"):
                for step in range(3):
                    e = rng.normal(shift[curve], 1, n_images)
                    rows.append(
                        pd.DataFrame(
                            {
                                "model": model,
                                "explainer": ex,
                                "curve": curve,
                                "image": np.arange(n_images),
                                "step": step,
                                "energy": e,
                            }
                        )
                    )
    clean = {m: rng.normal(0, 1, n_images) for m in ("cnn", "vit")}
    return pd.concat(rows, ignore_index=True), clean


def test_table2_separated_and_indistinguishable():
    records, clean = _ood_records({"fud": 0.0, "deletion_ratios": 25.0})
    evals = {"deletion_ratios": "INS/DEL", "fud": "FUD"}
    summary, tex = table2_ood(records, clean, evals, ["cnn", "vit"], n_boot=100, ci=0.95, seed=0)
    assert len(summary) == 2 * 2 * 4 and (summary["n_ood"] == 2 * 2 * 3 * 60 / 2).all()
    v = summary.set_index(["evaluator", "model", "metric"])["value"]
    assert v["INS/DEL", "cnn", "AUROC"] == pytest.approx(1.0) and v["INS/DEL", "vit", "FPR95"] == 0.0
    assert abs(v["FUD", "cnn", "AUROC"] - 0.5) < 0.1 and abs(v["FUD", "vit", "AUROC"] - 0.5) < 0.1
    assert (summary["ci_low"] <= summary["value"] + 1e-12).all()
    assert (summary["value"] <= summary["ci_high"] + 1e-12).all()
    fud = summary[(summary.evaluator == "FUD") & (summary.metric == "AUROC")]
    assert (fud["ci_high"] - fud["ci_low"] > 0).all()
    for rule in ("\\toprule", "\\midrule", "\\bottomrule", "\\cmidrule(lr){2-5}", "\\cmidrule(lr){6-9}"):
        assert rule in tex
    assert "\\multicolumn{4}{c}{cnn}" in tex and "INS/DEL &" in tex and "AUROC $\\downarrow$" in tex
    assert tex.index("INS/DEL &") < tex.index("FUD &")  # rows in the order of `evaluators`
    again, _ = table2_ood(records, clean, evals, ["cnn", "vit"], n_boot=100, ci=0.95, seed=0)
    pd.testing.assert_frame_equal(summary, again)  # seeded bootstrap


def test_table2_per_run_pooling_is_balanced():
    records, clean = _ood_records({"fud": 0.0, "deletion_ratios": 25.0})
    s_all, _ = table2_ood(records, clean, {"deletion_ratios": "INS/DEL"}, ["cnn"], n_boot=20, seed=1)
    s_run, _ = table2_ood(records, clean, {"deletion_ratios": "INS/DEL"}, ["cnn"], n_boot=20, seed=1, pooling="run")
    a, r = (s.set_index("metric")["value"] for s in (s_all, s_run))
    assert a["AUROC"] == pytest.approx(1.0) and r["AUROC"] == pytest.approx(1.0)
    assert int(s_run["n_runs"].iloc[0]) == 2 * 3 and int(s_all["n_runs"].iloc[0]) == 1
    # a perfect separation gives AP = 1 either way; imbalance shows with overlap
    records, clean = _ood_records({"fud": 0.0, "deletion_ratios": 0.0})
    s_all, _ = table2_ood(records, clean, {"fud": "FUD"}, ["cnn"], n_boot=0, seed=1)
    s_run, _ = table2_ood(records, clean, {"fud": "FUD"}, ["cnn"], n_boot=0, seed=1, pooling="run")
    a, r = (s.set_index("metric")["value"] for s in (s_all, s_run))
    assert a["AUPR-In"] < 0.3 and abs(r["AUPR-In"] - 0.5) < 0.15
    assert s_all[["ci_low", "ci_high"]].isna().all().all()  # n_boot = 0: no interval


def _irof_samples(model: str, n: int, step: int, kept: float, **scores) -> pd.DataFrame:
    """One IROF step's records of images 0 .. n-1: unchanged (l2 = 0) at kept = 1, else changed."""
    return pd.DataFrame(
        {
            "model": model,
            "explainer": "ig",
            "curve": "irof",
            "image": np.arange(n),
            "step": step,
            "kept": kept,
            "l2": 0.0 if kept == 1.0 else 0.3,
            **scores,
        }
    )


def test_table2_unchanged_samples_tie_exactly_with_their_clean_images(caplog):
    """A step that leaves the image unchanged (l2 = 0) is the clean image: whatever the classifier gave
    it in its batch (here clean +- 1e-6, as oneDNN's batch-size-dependent kernels did for the ViT), it
    scores as an exact tie, per model and detector; a changed sample (l2 > 0) keeps its own score,
    however close. n_unchanged counts them; an unchanged sample that removed pixels is logged."""
    rng = np.random.default_rng(3)
    n, dets = 40, ("energy", "mahalanobis", "knn")
    clean = pd.concat(
        [
            pd.DataFrame(
                {"model": m, "image": np.arange(n), **{d: rng.normal(5 * k, 1, n) for k, d in enumerate(dets)}}
            )
            for m in ("cnn", "vit")
        ],
        ignore_index=True,
    )
    rows = []
    for m, g in clean.groupby("model"):
        for step, kept in enumerate((1.0, 0.5)):
            shift = 0.0 if kept == 1.0 else 1.0
            rows.append(_irof_samples(m, n, step, kept, **{d: g[d].to_numpy() + shift for d in dets}))
    exact = pd.concat(rows, ignore_index=True)
    unchanged = exact["l2"] == 0

    def jittered(signs):
        out = exact.copy()
        for d in dets:
            out.loc[unchanged, d] += 1e-6 * signs[unchanged.to_numpy()]
        return out

    def table(records, **kw):
        return table2_ood(records, clean, {"irof": "IROF"}, ["cnn", "vit"], seed=2, **kw)[0]

    alternating = jittered(np.where(np.arange(len(exact)) % 2, 1.0, -1.0))
    upward = jittered(np.ones(len(exact)))
    for pooling in ("all", "run"):
        want = table(exact, n_boot=50, pooling=pooling)
        assert (want["n_unchanged"] == n).all() and (want["n_ood"] == 2 * n).all()
        for noisy in (alternating, upward):
            pd.testing.assert_frame_equal(table(noisy, n_boot=50, pooling=pooling), want)
            without_l2 = table(noisy.drop(columns="l2"), n_boot=50, pooling=pooling)
            assert not without_l2["value"].equals(want["value"])  # the jitter alone breaks the ties
    # the unchanged run alone: all ties, for every model and detector (with upward jitter and no fix,
    # every image's own pair would be ordered: AUROC 0.5 + 1 / (2n))
    only = table(upward[unchanged], n_boot=0, pooling="run")
    assert (only[only.metric == "AUROC"]["value"] == 0.5).all() and len(only) == 2 * 3 * 4
    # a changed sample keeps its own score even 1e-6 from its clean image
    near = exact[~unchanged].copy()
    for d in dets:
        near[d] = clean[d].to_numpy() + 1e-6
    s = table(near, n_boot=0)
    assert np.allclose(s[s.metric == "AUROC"]["value"], 0.5 + 1 / (2 * n)) and (s["n_unchanged"] == 0).all()
    # unchanged although it removed pixels: a tie too, and said in the log
    odd = exact.copy()
    odd.loc[~unchanged, "l2"] = 0.0
    with caplog.at_level("WARNING"):
        table(odd, n_boot=0)
    assert "removed pixels but are bitwise their clean images (curves irof)" in caplog.text
    # a detector without scores (NaN: no OOD reference) gets no cell from the unchanged samples
    missing = exact.assign(knn=np.nan)
    s = table(missing, n_boot=0)
    knn = s[s.detector == "knn"]
    assert knn["value"].isna().all() and (knn["n_ood"] == 0).all() and (knn["n_nonfinite"] == 2 * n).all()


# ------------------------------------------------------------- Table 3, Fig. 2


def _quality_frame(seed=0):
    rng = np.random.default_rng(seed)
    centre = {"INS/DEL": 0.3, "FUD": 0.8, "INFID": 0.5}
    rows = []
    for ev, c in centre.items():
        for model in ("cnn", "vit"):
            for ex in ("sm", "ig"):
                for image in range(20):
                    for step in range(3):
                        row = {"evaluator": ev, "model": model, "explainer": ex, "image": image, "step": step}
                        for m in QUALITY_METRICS:
                            noise = rng.normal(0, 0.05)
                            row[m] = (
                                (1 - c + noise) if not HIGHER_IS_BETTER[m] else (c + noise) * (40 if m == "PSNR" else 1)
                            )
                        rows.append(row)
    return pd.DataFrame(rows)


def test_table3_means_cis_latex():
    q = _quality_frame()
    q.loc[0, "SSIM"] = np.nan  # dropped and counted
    summary, tex = table3_quality(q, n_boot=200, ci=0.95, seed=0)
    assert len(summary) == 3 * len(QUALITY_METRICS)
    s = summary.set_index(["evaluator", "metric"])
    ref = q[q.evaluator == "FUD"]["VSI"].mean()
    assert s.loc[("FUD", "VSI"), "mean"] == pytest.approx(ref)
    assert s.loc[("INS/DEL", "SSIM"), "n_nonfinite"] == 1 and s.loc[("INS/DEL", "SSIM"), "n_samples"] == 239
    assert (summary["ci_low"] <= summary["mean"]).all() and (summary["mean"] <= summary["ci_high"]).all()
    assert (summary["ci_high"] > summary["ci_low"]).all()
    for rule in ("\\toprule", "\\midrule", "\\bottomrule"):
        assert rule in tex
    assert "GMSD $\\downarrow$" in tex and "PSNR $\\uparrow$" in tex and "MS-SSIM $\\uparrow$" in tex
    fud_line = next(line for line in tex.splitlines() if line.startswith("FUD &"))
    assert fud_line.count("\\textbf{") == len(QUALITY_METRICS)  # FUD best on every metric here
    only_cnn, _ = table3_quality(q, n_boot=0, models=["cnn"], evaluators=["FUD", "INS/DEL"])
    assert list(dict.fromkeys(only_cnn.evaluator)) == ["FUD", "INS/DEL"]
    assert only_cnn["ci_low"].isna().all()


def test_radar_normalisation_and_figure():
    summary, _ = table3_quality(_quality_frame(1), n_boot=0)
    norm = radar_normalise(summary)
    assert list(norm.columns) == list(QUALITY_METRICS) and list(norm.index) == ["INS/DEL", "FUD", "INFID"]
    assert (norm.loc["FUD"] == 1).all() and (norm.loc["INS/DEL"] == 0).all()  # GMSD inverted: outward = better
    assert ((norm >= 0) & (norm <= 1)).all().all()
    tied = pd.DataFrame({"PSNR": [20.0, 20.0], "GMSD": [0.1, 0.2]}, index=["a", "b"])
    n = radar_normalise(tied)
    assert (n["PSNR"] == 0.5).all() and n.loc["a", "GMSD"] == 1 and n.loc["b", "GMSD"] == 0
    fig = fig2_radar(summary)
    assert isinstance(fig, matplotlib.figure.Figure)
    import matplotlib.pyplot as plt

    plt.close(fig)


@pytest.mark.parametrize("seed", range(40))
def test_batched_bootstrap_metrics_equal_sklearn_per_resample(seed):
    """The vectorised bootstrap (all resamples at once) gives, for every
    resample, sklearn's metrics on the resampled (duplicated) data: ties in the
    scores, images drawn 0 or several times, resamples without ID or OOD rows (NaN)."""
    from fudbench.report.ood_quality import weighted_ood_metrics_batch

    rng = np.random.default_rng(seed)
    n_in, n_out = rng.integers(1, 12), rng.integers(1, 40)
    score = -np.r_[rng.integers(0, 6, n_in), rng.integers(0, 6, n_out)].astype(float)  # few values: ties
    is_in = np.r_[np.ones(n_in), np.zeros(n_out)]
    order = np.argsort(-score, kind="mergesort")
    score, is_in = score[order], is_in[order]
    weights = rng.integers(0, 3, size=(30, len(score)))
    weights[0] = 0
    weights[1, is_in == 1] = 0  # no ID row
    batch = weighted_ood_metrics_batch(score, is_in, weights)
    for b, w in enumerate(weights):
        if w[is_in == 1].sum() == 0 or w[is_in == 0].sum() == 0:
            assert all(np.isnan(batch[k][b]) for k in batch)
            continue
        ref = ood_metrics(np.repeat(-score[is_in == 1], w[is_in == 1]), np.repeat(-score[is_in == 0], w[is_in == 0]))
        for k, v in ref.items():
            assert batch[k][b] == pytest.approx(v, abs=1e-12), (k, b)


def test_batched_fpr95_drops_equally_spaced_points_as_sklearn():
    """A diagonal ROC (every score shared by one ID and one OOD entry): sklearn
    keeps only the ends of the straight run, so FPR95 is read at its end
    (1.0), not at the point where tpr first reaches 0.95 (0.95)."""
    from fudbench.report.ood_quality import weighted_ood_metrics_batch

    score = -np.repeat(np.arange(20.0), 2)
    is_in = np.tile([1.0, 0.0], 20)
    labels = is_in.astype(int)
    assert ood_metrics(-score[labels == 1], -score[labels == 0])["fpr95"] == 1.0  # sklearn itself
    weights = np.ones((3, len(score)), int)
    weights[1, :4] = 0  # the run without its first two groups: still one straight run
    weights[2, 36:] = 0  # ... and without its last two
    batch = weighted_ood_metrics_batch(score, is_in, weights)
    for b, w in enumerate(weights):
        ref = ood_metrics(
            np.repeat(-score[labels == 1], w[labels == 1]), np.repeat(-score[labels == 0], w[labels == 0])
        )
        assert batch["fpr95"][b] == ref["fpr95"] == 1.0


def test_sample_quality_skips_the_steps_an_image_does_not_have(tmp_path):
    """Samples of a curve with a different number of steps per image are NaN
    past each image's last step (protocols.base.Points): those are not measured."""
    from fudbench.core.io import write_npz
    from fudbench.workflow.pipeline import sample_quality

    g = np.random.default_rng(0)
    images = g.integers(0, 256, (2, 3, 16, 16), dtype=np.uint8)
    write_npz(tmp_path / "eval.npz", images=images, labels=np.zeros(2, np.int64), masks=np.zeros((2, 16, 16), bool))
    samples = np.full((2, 3, 3, 16, 16), np.nan, np.float16)
    samples[0, :1] = images[0] / 255
    samples[1, :3] = images[1] / 255
    write_npz(
        tmp_path / "samples.npz",
        ids=np.arange(2),
        ragged=samples,
        removed_ragged=np.array([[1, np.nan, np.nan], [0.3, 0.6, 1]]),
    )
    q = sample_quality(tmp_path / "eval.npz", {("m", "e"): tmp_path / "samples.npz"}, 0, 2, ["PSNR"])
    assert list(zip(q["image"], q["step"])) == [(0, 0), (1, 0), (1, 1), (1, 2)]
    assert np.isfinite(q["PSNR"]).all()


def test_table2_n_unchanged_counts_each_detectors_own_ood_samples():
    """n_unchanged is 'of the n_ood samples' (the docstring), per detector: an unchanged sample a
    detector has no finite score for is in that detector's n_nonfinite, not its n_unchanged. On
    13c472e it was one count for every detector (knn: n_unchanged 10 of n_ood 0)."""
    n = 10
    clean = pd.DataFrame(
        {"model": "cnn", "image": np.arange(n), "energy": np.arange(n, dtype=float), "knn": np.arange(n, dtype=float)}
    )
    ids = np.arange(n)
    rows = pd.concat(
        [
            # knn scores the changed samples and only the first 4 unchanged ones
            _irof_samples("cnn", n, 0, 1.0, energy=ids + 0.0, knn=np.where(ids < 4, ids, np.nan)),
            _irof_samples("cnn", n, 1, 0.5, energy=ids + 1.0, knn=ids + 1.0),
        ],
        ignore_index=True,
    )
    for pooling in ("all", "run"):
        s = table2_ood(rows, clean, {"irof": "IROF"}, ["cnn"], n_boot=0, pooling=pooling)[0]
        per = s.groupby("detector")[["n_ood", "n_nonfinite", "n_unchanged"]].first()
        assert per.loc["energy"].tolist() == [2 * n, 0, n]
        assert per.loc["knn"].tolist() == [n + 4, n - 4, 4]
        assert (per["n_unchanged"] <= per["n_ood"]).all()
