"""Scatter controls (issue 38): the scatter pairs, the scatter-matched families,
the family gate and the pre-registered endpoint, each on a case whose answer is
known by construction."""

import numpy as np
import pandas as pd
import pytest
import torch

from fudbench.meta.endpoint import endpoint_table, joint_holm, scatter_matched
from fudbench.meta.gate import family_gate, passing
from fudbench.meta.families import degraded_explainers, family_order, scatter_pairs
from fudbench.explainers import build_explainer
from fudbench.explainers.controlled import block_shuffle, histogram_match, shift_offsets
from fudbench.explainers.seeds import explainer_seed_name

SEEDS = [11, 12, 13, 14]


def _images(n=4, size=32):
    x = torch.rand(n, 3, size, size, generator=torch.Generator().manual_seed(0))
    masks = torch.zeros(n, size, size)
    masks[:, 10:20, 8:22] = 1
    return x, masks


def _map(name, settings, x, masks=None):
    e = build_explainer(name, settings)
    kwargs = {"masks": masks} if e.uses_masks else {}
    return e.explain(None, x, None, seeds=SEEDS, **kwargs)[:, 0]


def top_nn_distance(a: torch.Tensor, share: float, torus: bool = False) -> float:
    """Mean nearest-neighbour distance (px) among each map's top `share` pixels."""
    out = []
    for m in a:
        h, w = m.shape
        k = max(2, int(share * m.numel()))
        idx = m.flatten().argsort(descending=True, stable=True)[:k]
        yx = torch.stack([idx // w, idx % w], 1).float()
        d = (yx[:, None] - yx[None]).abs()
        if torus:
            d = torch.minimum(d, torch.tensor([h, w], dtype=torch.float32) - d)
        d = d.pow(2).sum(-1).sqrt()
        d.fill_diagonal_(float("inf"))
        out.append(d.min(1).values.mean())
    return float(torch.stack(out).mean())


# ------------------------------------------------------------------ scatter pairs


def test_random_smooth_is_the_random_map_smoothed_with_its_values():
    x, _ = _images()
    r = _map("random", {}, x)
    s = _map("random_smooth", {"method": "random_smooth", "sigma": 2.0}, x)
    assert torch.equal(r.flatten(1).sort(1).values, s.flatten(1).sort(1).values)  # same values
    assert not torch.equal(r, s)
    assert top_nn_distance(s, 0.1) < 0.75 * top_nn_distance(r, 0.1)  # compact top set
    # seeded as `random` (the same noise), so the pair differs by the smoothing only
    assert explainer_seed_name("random_smooth", {"method": "random_smooth"}) == "random"


def test_histogram_match_keeps_reference_values_and_own_order():
    a = torch.tensor([[[3.0, 1.0], [2.0, 0.0]]])
    ref = torch.tensor([[[10.0, 20.0], [30.0, 40.0]]])
    out = histogram_match(a, ref)
    assert out.tolist() == [[[40.0, 20.0], [30.0, 10.0]]]


@pytest.mark.parametrize("base", ["oracle", "background"])
def test_reorder_pair_holds_the_same_set_and_differs_in_scatter(base):
    x, masks = _images()
    inside = masks.bool() if base == "oracle" else ~masks.bool()
    maps = {
        o: _map(f"{base}_{o}", {"method": "reorder", "base": base, "order": o}, x, masks)
        for o in ("compact", "scattered")
    }
    n_set = int(inside[0].sum())
    for a in maps.values():
        top = a.flatten(1).argsort(1, descending=True)[:, :n_set]
        assert bool(inside.flatten(1).gather(1, top).all())  # the base's set ranks first, in full
        for img, ins in zip(a, inside):  # ties: compact, each image's rest is strict, within 1e-3 of its range
            rest = img.masked_select(~ins)
            assert len(torch.unique(rest)) == rest.numel() and float(rest.max() - rest.min()) <= 1e-3 * float(img.max())
    # outside the set both members hold the same strict order: the pair differs inside it only
    for c, sc, ins in zip(maps["compact"], maps["scattered"], inside):
        assert torch.equal(c.masked_select(~ins).argsort(), sc.masked_select(~ins).argsort())
    old = _map(
        f"{base}_protocol", {"method": "reorder", "base": base, "order": "compact", "ties": "protocol"}, x, masks
    ).masked_select(~inside)
    assert torch.allclose(old, old[:1].expand_as(old))  # ties: protocol keeps the base's ties
    share = 0.4 * n_set / masks[0].numel()
    assert top_nn_distance(maps["compact"], share) < top_nn_distance(maps["scattered"], share)
    assert scatter_pairs(
        {
            f"{base}_compact": {"method": "reorder", "base": base, "order": "compact"},
            f"{base}_scattered": {"method": "reorder", "base": base, "order": "scattered"},
        }
    ) == {base: (f"{base}_compact", f"{base}_scattered")}


# ------------------------------------------------------------------ scatter-matched families


def test_translate_keeps_values_and_scatter_and_moves_evidence_off_the_object():
    x, masks = _images()
    t0 = _map("r_t0", {"method": "translate", "base": "random_smooth", "shift": 0}, x)
    inside = []
    for d in (0, 2, 4, 6, 8):
        a = _map(f"r_t{d}", {"method": "translate", "base": "random_smooth", "shift": d}, x)
        # values kept exactly (circular shift: no invented border values)
        assert torch.equal(a.flatten(1).sort(1).values, t0.flatten(1).sort(1).values)
        # no edge added: the top set's scatter on the torus is unchanged
        assert top_nn_distance(a, 0.1, torus=True) == pytest.approx(top_nn_distance(t0, 0.1, torus=True))
        oracle = _map(f"o{d}", {"method": "translate", "base": "oracle", "shift": d}, x, masks)
        inside.append(float((oracle * masks).sum() / oracle.sum()))
    assert inside[0] == pytest.approx(1.0, abs=5e-3)  # the background's tie order adds at most 1e-3 per pixel
    assert all(a > b for a, b in zip(inside, inside[1:]))  # monotone: less evidence under the map


def test_shift_direction_is_shared_by_a_family_and_scales_with_the_level():
    small, large = shift_offsets(2, SEEDS), shift_offsets(8, SEEDS)
    for (dy2, dx2), (dy8, dx8) in zip(small, large):
        assert np.hypot(dy8, dx8) == pytest.approx(8, abs=0.8)
        assert np.sign(dy2) in (np.sign(dy8), 0) and np.sign(dx2) in (np.sign(dx8), 0)


def test_block_shuffle_moves_whole_tiles_nested_across_fractions():
    a = torch.arange(2 * 16 * 16, dtype=torch.float32).view(2, 16, 16)
    tiles = lambda m: {tuple(t.flatten().tolist()) for t in m.unfold(0, 4, 4).unfold(1, 4, 4).reshape(-1, 16)}  # noqa: E731
    moved = {}
    for p in (0.0, 0.25, 0.5, 1.0):
        out = block_shuffle(a, p, 4, [1, 2])
        for i in range(2):
            assert tiles(out[i]) == tiles(a[i])  # every tile kept whole
        moved[p] = (out != a).view(2, 4, 4, 4, 4).permute(0, 1, 3, 2, 4).reshape(2, 16, 16).any(-1)
    assert not moved[0.0].any()
    assert moved[0.25].sum(1).tolist() == [4, 4] and moved[1.0].all()
    assert bool((moved[0.25] <= moved[0.5]).all())  # nested levels
    with pytest.raises(ValueError, match="must divide"):
        block_shuffle(torch.zeros(1, 10, 10), 0.5, 4, [1])


def test_new_families_are_known_orders_of_their_own():
    explainers = {
        "t0": {"method": "translate", "base": "sm", "shift": 0},
        "t4": {"method": "translate", "base": "sm", "shift": 4},
        "b0": {"method": "block_shuffle", "base": "sm", "fraction": 0.0},
        "b5": {"method": "block_shuffle", "base": "sm", "fraction": 0.5},
        "d5": {"method": "degrade", "base": "sm", "fraction": 0.5},
    }
    d = degraded_explainers(explainers)
    assert d == {
        "t0": ("sm_shifted", 0.0),
        "t4": ("sm_shifted", 4.0),
        "b0": ("sm_blocks", 0.0),
        "b5": ("sm_blocks", 0.5),
        "d5": ("sm", 0.5),
    }
    assert family_order("sm_shifted") == family_order("sm_blocks") == "total"
    assert scatter_matched("sm_shifted") and scatter_matched("sm_blocks") and not scatter_matched("sm")
    with pytest.raises(ValueError, match="explainers.t9.shift"):
        degraded_explainers({"t9": {"method": "translate", "base": "sm"}})


# ------------------------------------------------------------------ gate


def _truth(means: dict, n=24, sd=0.05, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        [
            {"model": "m", "explainer": e, "image": i, "value": float(np.clip(mu + sd * rng.normal(), 0, 1))}
            for e, mu in means.items()
            for i in range(n)
        ]
    )


def test_gate_passes_a_base_above_random_and_fails_one_below():
    degraded = {
        "good_t0": ("good_shifted", 0.0),
        "good_t4": ("good_shifted", 4.0),
        "bad_t0": ("bad_shifted", 0.0),
        "bad_t4": ("bad_shifted", 4.0),
        "flat_t0": ("flat_shifted", 0.0),
        "flat_t4": ("flat_shifted", 4.0),
    }
    # good: above random and ordered; bad: below random; flat: above random but its members are not ordered
    gate = family_gate(
        _truth(
            {
                "random": 0.2,
                "good_t0": 0.6,
                "good_t4": 0.4,
                "bad_t0": 0.1,
                "bad_t4": 0.05,
                "flat_t0": 0.5,
                "flat_t4": 0.5,
            },
            seed=1,
        ),
        degraded,
        "random",
    )
    ok = passing(gate)
    assert ok == {("m", "good_shifted"): True, ("m", "bad_shifted"): False, ("m", "flat_shifted"): False}
    rows = gate.set_index("family")
    assert rows.loc["good_shifted", "ci_low"] > 0 and rows.loc["good_shifted", "estimate"] == pytest.approx(
        0.4, abs=0.05
    )
    assert rows.loc["good_shifted", "order_low"] > 0.5
    assert (
        rows.loc["flat_shifted", "ci_low"] > 0
        and rows.loc["flat_shifted", "order_low"] < 0 < rows.loc["flat_shifted", "order_high"]
    )


# ------------------------------------------------------------------ endpoint


def _family_frame(rng, n_images, challenger_gain, scatter=None):
    """Per-image scores of a translate family (5 members, less is better) under
    paper FUD and FUD symmetric: the true order with equal signal for both, plus
    `challenger_gain` more signal for the challenger; `scatter` adds the same
    offset to every member (a translate family has equal scatter)."""
    rows = []
    members = [f"f_t{d}" for d in (0, 2, 4, 6, 8)]
    for i in range(n_images):
        for k, e in enumerate(members):
            base = -0.1 * k
            for curve, gain in (("fud", 0.0), ("fud_symmetric", challenger_gain)):
                s = base * (1 + gain) + (scatter or 0.0) + 0.15 * rng.normal()
                rows.append({"model": "m", "explainer": e, "curve": curve, "image": i, "score": s})
    explainers = {e: {"method": "translate", "base": "f", "shift": d} for e, d in zip(members, (0, 2, 4, 6, 8))}
    gate = pd.DataFrame([{"model": "m", "family": "f_shifted", "passes": True}])
    return pd.DataFrame(rows), explainers, gate


CURVES = {"fud": ("FUD", True, None), "fud_symmetric": ("FUD symmetric", True, None)}


def test_endpoint_detects_a_better_challenger_and_stays_quiet_without_one():
    rng = np.random.default_rng(0)
    per_image, explainers, gate = _family_frame(rng, 64, challenger_gain=2.0)
    better = endpoint_table(per_image, explainers, CURVES, gate)
    assert better.iloc[0]["verdict"] == "challenger better" and better.iloc[0]["p_holm"] < 0.05
    # no difference in faithfulness, a large scatter offset shared by the family: no false verdicts
    false_calls = 0
    for seed in range(40):
        per_image, explainers, gate = _family_frame(np.random.default_rng(100 + seed), 32, 0.0, scatter=0.5)
        false_calls += endpoint_table(per_image, explainers, CURVES, gate).iloc[0]["verdict"] != "undecided"
    assert false_calls <= 4  # 5% nominal; 40 repetitions: P(> 4 calls) < 0.05 at the nominal rate


def test_endpoint_skips_families_the_gate_fails_and_holm_spans_the_cells():
    rng = np.random.default_rng(1)
    per_image, explainers, _ = _family_frame(rng, 16, 1.0)
    failed = pd.DataFrame([{"model": "m", "family": "f_shifted", "passes": False}])
    assert endpoint_table(per_image, explainers, CURVES, failed).empty
    cells = pd.DataFrame({"endpoint": ["primary"] * 3, "estimate": [0.3, -0.2, 0.1], "p": [0.01, 0.02, 0.5]})
    out = joint_holm(cells)
    assert out["p_holm"].round(6).tolist() == [0.03, 0.04, 0.5]
    assert out["verdict"].tolist() == ["challenger better", "paper better", "undecided"]
    assert (out["n_cells"] == 3).all()


def test_optional_input_gives_the_one_path_or_none():
    """The claims and report-card jobs read the gate table through jobs.optional_input."""
    from types import SimpleNamespace

    from fudbench.workflow.jobs import optional_input

    assert (
        optional_input(SimpleNamespace(input=SimpleNamespace(gate="t/family_gate.csv")), "gate") == "t/family_gate.csv"
    )
    assert optional_input(SimpleNamespace(input=SimpleNamespace(gate=["t/g.csv"])), "gate") == "t/g.csv"
    assert optional_input(SimpleNamespace(input=SimpleNamespace(gate=[])), "gate") is None
    assert optional_input(SimpleNamespace(input=SimpleNamespace()), "gate") is None


def test_scatter_check_flags_a_family_whose_members_differ_in_scatter_only():
    """A family of compact -> scattered copies of one map is ordered by the scatter-only metric; a family
    of equally compact maps (moved, not spread) is not."""
    from fudbench.meta.gate import keep_top_boundary, scatter_check

    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:16, 0:16]
    rows = []
    for image in range(12):
        base = -np.hypot(yy - 7.5, xx - 7.5)
        for level in range(4):
            spread = base.copy().ravel()
            pick = rng.choice(spread.size, 40 * level, replace=False)  # scatter more pixels at higher levels
            spread[pick] = rng.permutation(spread[pick])
            moved = np.roll(base, (level, rng.integers(0, 3)), (0, 1))  # same blob, moved: equal scatter
            for name, m in ((f"sp_{level}", spread.reshape(16, 16)), (f"mv_{level}", moved)):
                rows.append(
                    {
                        "model": "m",
                        "explainer": name,
                        "image": image,
                        "value": float(keep_top_boundary(m[None], [0.1, 0.3])[0]),
                    }
                )
    degraded = {**{f"sp_{k}": ("sp", k) for k in range(4)}, **{f"mv_{k}": ("mv", k) for k in range(4)}}
    check = scatter_check(pd.DataFrame(rows), degraded).set_index("family")
    assert check.loc["sp", "scatter_ordered"] and check.loc["sp", "scatter_order_estimate"] > 0.8
    assert not check.loc["mv", "scatter_ordered"]


def test_family_gate_job_reports_the_scatter_only_order(tmp_path):
    """scripts/family_gate.py on a tiny family (compact vs block-shuffled copies of one blob, and `random`):
    the table gains the scatter-only columns and the block family is flagged."""
    import runpy
    import sys
    from pathlib import Path
    from types import SimpleNamespace

    from fudbench.core.io import write_npz

    repo = Path(__file__).resolve().parents[1]
    yy, xx = np.mgrid[0:16, 0:16]
    blob = torch.tensor(-np.hypot(yy - 5.5, xx - 9.5), dtype=torch.float32).expand(6, 16, 16).contiguous()
    masks = np.zeros((6, 16, 16), np.uint8)
    masks[:, 3:8, 7:12] = 1
    write_npz(
        tmp_path / "eval.npz", images=np.zeros((6, 3, 16, 16), np.uint8), masks=masks, labels=np.zeros(6, np.int64)
    )
    paths = []
    maps = {f"b{int(p * 100)}": block_shuffle(blob, p, 2, list(range(1, 7))) for p in (0.0, 0.5, 1.0)}
    maps["random"] = torch.rand(6, 16, 16, generator=torch.Generator().manual_seed(0))
    for name, a in maps.items():
        path = tmp_path / "attributions" / "m" / name / "shard0.npz"
        path.parent.mkdir(parents=True)
        write_npz(path, attributions=a[:, None].expand(6, 3, 16, 16).numpy(), ids=np.arange(6))
        paths.append(str(path))
    out = tmp_path / "tables"
    out.mkdir()
    job = SimpleNamespace(
        input=SimpleNamespace(attributions=paths, images=str(tmp_path / "eval.npz")),
        output=SimpleNamespace(csv=str(out / "family_gate.csv"), tex=str(out / "family_gate.tex")),
        params=SimpleNamespace(
            degraded={"b0": ["blk", 0.0], "b50": ["blk", 0.5], "b100": ["blk", 1.0]},
            random_entry="random",
            reduction="abs_sum",
            ratios=[0.1, 0.2, 0.3],
            ci=0.95,
        ),
        log=[str(tmp_path / "gate.log")],
        threads=1,
        rule="family_gate",
    )
    sys.path.insert(0, str(repo / "scripts"))
    try:
        runpy.run_path(str(repo / "scripts" / "family_gate.py"), init_globals={"snakemake": job}, run_name="__main__")
    finally:
        sys.path.remove(str(repo / "scripts"))
    gate = pd.read_csv(out / "family_gate.csv")
    assert bool(gate.loc[0, "scatter_ordered"]) and gate.loc[0, "scatter_order_estimate"] > 0.8
    assert "scatter-only order" in (out / "family_gate.tex").read_text()
