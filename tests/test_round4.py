"""Round four's statistics (studies/round4/round4_analysis.py) on constructed scores whose answers are known."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "studies" / "round4"))
import round4_analysis as round4  # noqa: E402  (a study-only module: studies/round4)

MEMBERS = {f"cue_t{d}": {"method": "translate", "base": "oracle", "shift": d} for d in (0, 2, 4, 6, 8)}
EXPLAINERS = {"random": {}, **MEMBERS}


def _per_image(curves: dict, models=("cnn",), n=40, seed=0) -> pd.DataFrame:
    """curves: {curve: (slope, noise sd)}; score of member at shift d = -slope * d / 8 + noise (+ 0.5)."""
    rng = np.random.default_rng(seed)
    rows = []
    for model in models:
        for curve, (slope, sd) in curves.items():
            for i in range(n):
                for name, s in EXPLAINERS.items():
                    d = s.get("shift", 8)
                    rows.append(
                        {
                            "model": model,
                            "explainer": name,
                            "curve": curve,
                            "image": i,
                            "score": 0.5 - slope * d / 8 + sd * rng.standard_normal(),
                        }
                    )
    return pd.DataFrame(rows)


def _gate(models=("cnn",), passes=True) -> pd.DataFrame:
    return pd.DataFrame([{"model": m, "family": "oracle_shifted", "passes": passes} for m in models])


def test_avg2_is_the_mean_of_the_two_draws():
    p = _per_image({"fud": (0.2, 0.1), "fud@fud_draw1": (0.2, 0.1)}, n=3)
    out = round4.with_avg2(p)
    avg = out[out["curve"] == round4.AVG2].set_index(["explainer", "image"])["score"]
    a = p[p["curve"] == "fud"].set_index(["explainer", "image"])["score"]
    b = p[p["curve"] == "fud@fud_draw1"].set_index(["explainer", "image"])["score"]
    pd.testing.assert_series_equal(avg.sort_index(), ((a + b) / 2).sort_index(), check_names=False)


def test_kept_cue_share_falls_as_a_compact_map_moves_off_the_cue():
    h = w = 16
    cue = np.zeros((1, h, w), bool)
    cue[0, 6:10, 6:10] = True
    yy, xx = np.mgrid[0:h, 0:w]
    shares = []
    for d in (0, 2, 4, 6):
        dist = np.hypot(yy - 7.5 - d, xx - 7.5)  # a disc-like order centred d px from the cue's centre
        shares.append(round4.kept_cue_share(-dist[None], cue, [0.1, 0.3, 0.5])[0])
    assert shares[0] == pytest.approx(1.0) and all(a > b for a, b in zip(shares, shares[1:]))


def test_gate_needs_the_intervention_and_the_order_on_the_truth():
    rows = []
    for i in range(20):
        for name, s in EXPLAINERS.items():
            rows.append({"model": "cnn", "explainer": name, "image": i, "value": 1 - s.get("shift", 8) / 10 + 0.01 * i})
    truth = pd.DataFrame(rows)
    ok = pd.DataFrame({"model": ["cnn"] * 2, "condition": ["clean", "cue_removed"], "check": ["ok", "ok"]})
    gate = round4.protocol_gate(truth, EXPLAINERS, ok)
    assert bool(gate.set_index("family").loc["oracle_shifted", "passes"])
    bad = ok.assign(check=["ok", "FAIL"])
    assert not bool(round4.protocol_gate(truth, EXPLAINERS, bad).set_index("family").loc["oracle_shifted", "passes"])
    reversed_truth = truth.assign(value=-truth["value"])
    assert not bool(round4.protocol_gate(reversed_truth, EXPLAINERS, ok)["passes"].iloc[0])


def test_primary_cell_prefers_the_less_noisy_recovery_and_holm_is_within_each_comparison():
    p = _per_image(
        {"fud_symmetric": (0.4, 0.05), "fud": (0.4, 0.4), "fud@fud_draw1": (0.4, 0.4), "fud_bottom": (-0.4, 0.05)}
    )
    cells = round4.round4_cells(p, EXPLAINERS, _gate())
    primary = cells[cells["endpoint"] == "primary"].iloc[0]
    assert primary["challenger"] == "fud_symmetric" and primary["paper"] == round4.AVG2
    assert primary["estimate"] > 0 and primary["verdict"] == "challenger better"
    # bottom is lower-is-better: its falling-with-quality scores recover the order
    s1 = cells[cells["endpoint"] == "S1 bottom vs avg2"].iloc[0]
    assert s1["estimate"] > 0
    # averaging two noisy draws beats one draw per image (S3), as the design review said it would
    s3 = cells[cells["endpoint"] == "S3 avg2 vs single"].iloc[0]
    assert s3["estimate"] > 0
    assert set(cells.groupby("endpoint")["n_cells"].first()) == {1}
    # a family that fails the gate gives no cell
    assert round4.round4_cells(p, EXPLAINERS, _gate(passes=False)).empty


def test_replication_labels():
    prim = pd.DataFrame(
        [
            {
                "endpoint": "primary",
                "challenger": "a",
                "paper": "b",
                "model": m,
                "family": "f",
                "estimate": 0.3,
                "ci_low": 0.1,
                "ci_high": 0.5,
                "p_holm": 0.01,
                "verdict": v,
                "n_images": 64,
            }
            for m, v in (("cnn", "challenger better"), ("vit", "challenger better"))
        ]
    )
    rep = prim.assign(model=prim["model"].map(round4.REPLICATES), verdict=["challenger better", "paper better"])
    t = round4.replication_table(prim, rep)
    assert t.set_index("model")["replication"].to_dict() == {"cnn": "replicates", "vit": "fails to replicate"}
    t = round4.replication_table(prim, rep.assign(verdict="undecided"))
    assert set(t["replication"]) == {"not replicated (undecided)"}


def test_equivalence_within_the_margin_only_for_equal_metrics():
    same = _per_image({"fud": (0.3, 0.2), "fud@fud_100": (0.3, 0.2)}, n=64, seed=1)
    eq = round4.equivalence_cells(same, EXPLAINERS, _gate())
    assert bool(eq["equivalent"].iloc[0]) and eq["ci_low_90"].iloc[0] > eq["ci_low"].iloc[0]
    assert round4.equivalence_verdict(eq, expected_cells=1) == "equivalent in every cell"
    differ = _per_image({"fud": (0.6, 0.1), "fud@fud_100": (-0.6, 0.1)}, n=64, seed=2)
    assert not bool(round4.equivalence_cells(differ, EXPLAINERS, _gate())["equivalent"].iloc[0])
    assert round4.equivalence_verdict(eq, expected_cells=4).startswith("not shown")


def test_displaced_cue_never_inverts_the_protocol_truth_even_at_the_border():
    """The design review's finding against torch.roll: cues near the border got the wrapped far side's
    values. `displace` moves the square inward without wrapping: at every ratio the keep-top set holds no
    more of the cue at a larger shift, on every image."""
    import torch

    from fudbench.explainers import build_explainer

    n = 24
    masks = torch.zeros(n, 32, 32)
    rng = np.random.default_rng(0)
    for i in range(n):
        y, x = rng.integers(0, 29, 2) if i % 2 else rng.choice([0, 28], 2)  # half of them in a corner
        masks[i, y : y + 4, x : x + 4] = 1
    x = torch.rand(n, 3, 32, 32)
    seeds = list(range(n))
    ratios = [0.1 * k for k in range(1, 10)]
    shares = []
    for d in (0, 4, 8, 12, 16):
        e = build_explainer(f"d{d}", {"method": "displace", "base": "oracle", "shift": d, "max_shift": 16})
        a = e.explain(None, x, torch.zeros(n, dtype=torch.long), seeds=seeds, masks=masks)[:, 0].numpy()
        per_ratio = np.stack([round4.kept_cue_share(a, masks.bool().numpy(), [r]) for r in ratios], 1)
        shares.append(per_ratio)
    s = np.stack(shares, 1)  # image x member x ratio
    assert (np.diff(s, axis=1) <= 1e-12).all()
    assert (s[:, 0] == 1).all() and s[:, -1, 0].max() < 1  # d = 0 keeps the whole cue at 10%, d = 16 does not
    with pytest.raises(ValueError, match="max_shift"):
        build_explainer("d", {"method": "displace", "base": "oracle", "shift": 20, "max_shift": 16})


def test_pairwise_gate_fails_a_family_with_a_tied_pair():
    rows = []
    for i in range(30):
        for name, s in EXPLAINERS.items():
            d = s.get("shift", 8)
            value = 1 - min(d, 6) / 10 + 0.001 * i  # cue_t6 and cue_t8 tie on every image
            rows.append({"model": "cnn", "explainer": name, "image": i, "value": value})
    ok = pd.DataFrame({"model": ["cnn"], "condition": ["clean"], "check": ["ok"]})
    gate = round4.protocol_gate(pd.DataFrame(rows), EXPLAINERS, ok, completion=pd.DataFrame(rows))
    row = gate.set_index("family").loc["oracle_shifted"]
    assert row["pairs_ordered"] == "3 of 4" and not bool(row["passes"])
    assert row["order_low"] > 0  # the whole-family Spearman alone would have passed it
    assert row["completion_pairs_ordered"] == "3 of 4"


def test_completion_truth_counts_ratios_with_any_cue_pixel_kept():
    cue = np.zeros((1, 10, 10), bool)
    cue[0, 0, :2] = True
    scores = np.arange(100, dtype=float)[::-1].reshape(1, 10, 10)  # raster order: pixel 0 first
    scores[0, 0, 1] = -1.0  # the cue's second pixel last
    assert round4.kept_cue_share(scores, cue, [0.1, 0.5]) == pytest.approx([0.5])
    assert round4.kept_cue_share(scores, cue, [0.1, 0.5], completion=True) == pytest.approx([1.0])


def test_pooled_estimate_and_heterogeneity():
    curves = {"fud_symmetric": (0.4, 0.05), "fud": (0.4, 0.4), "fud@fud_draw1": (0.4, 0.4), "fud_bottom": (-0.4, 0.1)}
    prim = _per_image(curves, models=("cnn",), n=30, seed=3)
    rep = _per_image(curves, models=("cnn_seed1",), n=30, seed=4)
    cells = round4.round4_cells(prim, EXPLAINERS, _gate())
    pooled = round4.pooled_table(prim, rep, cells, EXPLAINERS)
    row = pooled[pooled["endpoint"] == "primary"].iloc[0]
    assert row["n_images"] == 60 and row["pooled_low"] > 0
    assert row["heterogeneity_low"] < 0 < row["heterogeneity_high"]  # same process: no heterogeneity shown
    ties = round4.score_tie_share(prim, EXPLAINERS)
    assert set(ties["curve"]) >= {"fud", round4.AVG2} and (ties["tie_share"] == 0).all()


def test_equivalence_needs_the_same_order_of_means():
    a = _per_image({"fud": (0.3, 0.05)}, n=64, seed=5)
    b = a[a["curve"] == "fud"].assign(curve="fud@fud_100")
    swap = {"cue_t6": "cue_t8", "cue_t8": "cue_t6"}  # the paper setting orders the last two members the other way
    b = b.assign(explainer=b["explainer"].map(lambda e: swap.get(e, e)))
    eq = round4.equivalence_cells(pd.concat([a, b]), EXPLAINERS, _gate())
    assert not bool(eq["same_macro_order"].iloc[0]) and not bool(eq["equivalent"].iloc[0])


def test_keep_top_boundary_is_small_for_a_compact_set_and_large_for_the_same_values_scattered():
    h = w = 16
    yy, xx = np.mgrid[0:h, 0:w]
    compact = -np.hypot(yy - 7.5, xx - 7.5)[None]
    scattered = np.random.default_rng(0).permutation(compact.ravel()).reshape(1, h, w)
    ratios = [0.1, 0.3, 0.5]
    a, b = round4.keep_top_boundary(compact, ratios)[0], round4.keep_top_boundary(scattered, ratios)[0]
    assert 0 < a < 0.15 < b < 1
    checker = ((yy + xx) % 2).astype(float)[None]  # keep-top at 0.5: every pair straddles the edge
    assert round4.keep_top_boundary(checker, [0.5])[0] == pytest.approx(1.0)


def test_block_shuffling_a_compact_cue_map_scatters_its_kept_sets():
    """Why a scatter-only metric orders the block family (studies/round4/README.md, "A scatter-only metric"):
    moving 2x2 tiles of a compact map spreads its keep-top set, more at larger fractions."""
    import torch

    from fudbench.explainers.controlled import block_shuffle

    yy, xx = np.mgrid[0:32, 0:32]
    base = torch.tensor(-np.hypot(yy - 12.5, xx - 18.5), dtype=torch.float32).expand(4, 32, 32).contiguous()
    share = [
        round4.keep_top_boundary(block_shuffle(base, p, 2, [1, 2, 3, 4]).numpy(), [0.1, 0.2, 0.3]).mean()
        for p in (0.0, 0.25, 0.5, 1.0)
    ]
    assert all(x < y for x, y in zip(share, share[1:])) and share[-1] > 3 * share[0]


def test_family_recovery_of_a_metric_that_follows_the_order_exactly():
    p = _per_image({"fud": (0.2, 0.1), "fud@fud_draw1": (0.2, 0.1), round4.SCATTER_ONLY: (0.5, 0.0)}, n=10)
    rec = round4.family_recovery(p, EXPLAINERS, (round4.SCATTER_ONLY, "fud")).set_index("curve")
    assert rec.loc[round4.SCATTER_ONLY, "recovery"] == pytest.approx(1.0)
    assert rec.loc[round4.SCATTER_ONLY, "perfect_share"] == 1.0
    assert rec.loc["fud", "recovery"] < 1.0


def test_equal_share_reactions_find_a_curve_that_rewards_compact_sets():
    """Members with equal kept cue share but growing scatter: a curve that scores compactness favours the
    less degraded member in every pair and gets a positive boundary coefficient; one that scores the
    share alone is tied at equal share."""
    rows, truth, boundary = [], [], []
    for i in range(6):
        for name, s in MEMBERS.items():
            d = s["shift"]
            share, spread = (1.0 if d <= 4 else 1.0 - d / 16), 0.02 + d / 100
            truth.append({"model": "cnn", "explainer": name, "image": i, "value": share})
            boundary.append({"model": "cnn", "explainer": name, "image": i, "value": spread})
            rows += [
                {"model": "cnn", "explainer": name, "image": i, "curve": "fud", "score": -spread},
                {"model": "cnn", "explainer": name, "image": i, "curve": "fud_symmetric", "score": share},
            ]
    out = round4.equal_share_reactions(
        pd.DataFrame(rows), pd.DataFrame(truth), pd.DataFrame(boundary), EXPLAINERS, curves=("fud", "fud_symmetric")
    ).set_index("curve")
    assert out.loc["fud", "equal_pairs"] == 3 * 6  # d = 0, 2, 4: three pairs per image
    assert out.loc["fud", "compact_higher_share"] == 1.0 and out.loc["fud", "ols_boundary"] > 0
    assert out.loc["fud_symmetric", "compact_higher_share"] == 0.0  # tied at equal share


def test_scatter_pair_reactions_orient_each_curve_and_adjust_over_models():
    """insertion (higher better) scores the compact member higher, deletion (lower better) scores it lower:
    both favour compact sets; a curve that cannot tell the pair apart reacts 0."""
    rows = []
    for model in ("cnn", "vit"):
        for i in range(12):
            for name, ins, dele in (("c", 0.8, 0.2), ("s", 0.6, 0.4)):
                rows += [
                    {"model": model, "explainer": name, "image": i, "curve": "insertion", "score": ins + 0.01 * i},
                    {"model": model, "explainer": name, "image": i, "curve": "deletion", "score": dele},
                    {"model": model, "explainer": name, "image": i, "curve": "fud", "score": 0.5},
                ]
    out = round4.scatter_pair_reactions(pd.DataFrame(rows), ("c", "s"), ("insertion", "deletion", "fud"))
    r = out.set_index(["model", "curve"])
    assert r.loc[("cnn", "insertion"), "reaction"] == pytest.approx(0.2)
    assert r.loc[("vit", "deletion"), "reaction"] == pytest.approx(0.2) and r.loc[("vit", "deletion"), "p_holm"] < 0.05
    assert r.loc[("cnn", "fud"), "reaction"] == 0 and r.loc[("cnn", "fud"), "compact_higher_share"] == 0
