"""Round five's graded cue family (explainers.graded; studies/round5/README.md): the order of its members is
known for every protocol from the maps alone (kept cue pixels at every kept count, no metric), the main
arm's kept sets have the same outline at every count, and the opposing arm's outline grows with the cue
kept. Checked per image on cue squares at random places and at every border."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fudbench.core.masks import n_pixels
from fudbench.explainers import build_explainer
from fudbench.explainers.graded import graded_ranking
from fudbench.meta.families import degraded_explainers, family_members
from fudbench.meta.graded import graded_gate, protocol_counts

HW = 32
RATIOS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
# every kept count a protocol of the default profile uses: FUD / ROAD ratios (keep-top, keep-bottom =
# the complement), Insertion / Deletion's 32 steps of 32 pixels
COUNTS = sorted(
    {n_pixels(r, HW * HW) for r in RATIOS}
    | {HW * HW - n_pixels(r, HW * HW) for r in RATIOS}
    | set(range(0, HW * HW + 1, 32))
)
CUT = n_pixels(0.5, HW * HW)
# two gradings: whole lines of the cue (round five's first registration) and pixel steps whose windows are
# never whole lines (every member's window then has the notch-and-step outline)
GRADINGS = {"lines": [0, 4, 8, 12, 16], "pixels": [1, 3, 5, 7, 9]}
OPPOSING_MODULES = [64, 48, 32, 24, 16]


def cue_mask(y: int, x: int) -> np.ndarray:
    m = np.zeros((HW, HW), bool)
    m[y : y + 4, x : x + 4] = True
    return m


def cue_places(n: int = 10, seed: int = 0) -> list[tuple[int, int]]:
    rng = np.random.default_rng(seed)
    corners = [(0, 0), (0, HW - 4), (HW - 4, 0), (HW - 4, HW - 4), (0, 14), (14, 0), (14, 14)]
    return corners + [tuple(int(v) for v in rng.integers(0, HW - 3, 2)) for _ in range(n)]


def top_k(values: np.ndarray, k: int) -> np.ndarray:
    """The protocol's keep-top set of k pixels (descending, stable), as an (H, W) bool."""
    kept = np.zeros(values.size, bool)
    kept[np.argsort(-values.ravel(), kind="stable")[:k]] = True
    return kept.reshape(values.shape)


def outline(kept: np.ndarray) -> int:
    """4-neighbour pixel pairs inside the image with one pixel kept and the other not."""
    return int((kept[1:] != kept[:-1]).sum() + (kept[:, 1:] != kept[:, :-1]).sum())


def members(y, x, arm, seed=7, grading="lines"):
    modules = OPPOSING_MODULES if arm == "opposing" else [32] * 5
    return [graded_ranking(cue_mask(y, x), s, 0.5, m, seed) for s, m in zip(GRADINGS[grading], modules)]


@pytest.mark.parametrize("place", cue_places())
def test_every_member_is_a_strict_ranking(place):
    for values in members(*place, "equal") + members(*place, "opposing", grading="pixels"):
        assert len(np.unique(values)) == HW * HW


@pytest.mark.parametrize("grading", sorted(GRADINGS))
@pytest.mark.parametrize("place", cue_places())
def test_the_members_differ_only_at_the_cut_by_the_cue_they_keep(place, grading):
    cue = cue_mask(*place)
    for arm in ("equal", "opposing"):
        maps = members(*place, arm, grading=grading)
        for k in COUNTS:
            kept_cue = [int((top_k(v, k) & cue).sum()) for v in maps]
            if k == CUT:
                # keep-top: 16 - shift cue pixels; keep-bottom (the complement) the shift
                assert kept_cue == [16 - s for s in GRADINGS[grading]], (arm, k)
            else:
                assert len(set(kept_cue)) == 1, (arm, k, kept_cue)
                sets = [top_k(v, k) for v in maps]
                assert all((s == sets[0]).all() for s in sets), f"{arm}: the kept sets differ at {k} pixels"


CORNERS = [(0, 0), (0, HW - 4), (HW - 4, 0), (HW - 4, HW - 4)]


@pytest.mark.parametrize("grading", sorted(GRADINGS))
@pytest.mark.parametrize("place", [p for p in cue_places() if p not in CORNERS])
def test_the_main_arm_keeps_sets_of_one_outline_and_the_opposing_arm_scatters_the_better_members(place, grading):
    for k in COUNTS:
        equal = [outline(top_k(v, k)) for v in members(*place, "equal", grading=grading)]
        assert len(set(equal)) == 1, (k, equal)
    equal = [outline(top_k(v, CUT)) for v in members(*place, "equal", grading=grading)]
    opposing = [outline(top_k(v, CUT)) for v in members(*place, "opposing", grading=grading)]
    assert all(a > b for a, b in zip(opposing, opposing[1:])), opposing  # more cue kept, more outline
    # the opposing arm's scatter is the module's alone: 64, 48, 32, 24, 16 against the main arm's 32
    assert [o - equal[0] for o in opposing] == [32, 16, 0, -8, -16]


def test_a_window_of_whole_lines_and_a_partial_one_differ_in_outline_so_a_family_uses_one_kind():
    place = (14, 14)
    lines, partial = (outline(top_k(graded_ranking(cue_mask(*place), s, 0.5, 32, 7), CUT)) for s in (4, 5))
    assert partial - lines == 2  # the notch keeps the outline, the step adds two pairs


def test_the_overlay_entries_form_two_families_of_known_order_and_the_explainer_runs():
    shifts = GRADINGS["pixels"]
    explainers = {
        **{f"cue_g{m}": {"method": "graded_cue", "base": "oracle", "shift": s} for m, s in enumerate(shifts)},
        **{
            f"cue_o{m}": {"method": "graded_cue_opposing", "base": "oracle", "shift": s, "module": o}
            for m, (s, o) in enumerate(zip(shifts, OPPOSING_MODULES))
        },
    }
    families = family_members(degraded_explainers(explainers))
    assert families == {
        "oracle_graded": [f"cue_g{m}" for m in range(5)],
        "oracle_graded_opposing": [f"cue_o{m}" for m in range(5)],
    }
    masks = torch.from_numpy(np.stack([cue_mask(3, 5), cue_mask(20, 26)])).float()
    x = torch.rand(2, 3, HW, HW)
    for name, settings in explainers.items():
        a = build_explainer(name, settings).explain(
            None, x, torch.zeros(2, dtype=torch.long), seeds=[1, 2], masks=masks
        )
        assert a.shape == x.shape
        expected = graded_ranking(cue_mask(3, 5), settings["shift"], 0.5, settings.get("module", 32), 1)
        assert np.allclose(a[0, 0].numpy(), expected, atol=1e-6)


def test_bad_settings_are_refused_with_the_setting_named():
    with pytest.raises(ValueError, match="shift"):
        build_explainer("g", {"method": "graded_cue", "base": "oracle", "shift": -1})
    with pytest.raises(ValueError, match="module"):
        build_explainer("g", {"method": "graded_cue", "base": "oracle", "shift": 1, "module": 30})
    with pytest.raises(ValueError, match="shift must be in"):
        graded_ranking(cue_mask(3, 3), 17, 0.5, 32, 0)
    with pytest.raises(ValueError, match="one filled rectangle"):
        graded_ranking(cue_mask(3, 3) | cue_mask(20, 20), 0, 0.5, 32, 0)


@pytest.mark.parametrize("grading", sorted(GRADINGS))
@pytest.mark.parametrize("arm", ["equal", "opposing"])
def test_the_gate_passes_every_image_but_a_cue_in_a_corner_whose_outline_it_catches(arm, grading):
    places = cue_places()
    cue = np.stack([cue_mask(*p) for p in places])
    modules = OPPOSING_MODULES if arm == "opposing" else [32] * 5
    maps = [np.stack([graded_ranking(c, s, 0.5, m, 3) for c in cue]) for s, m in zip(GRADINGS[grading], modules)]
    counts = protocol_counts(HW * HW, RATIOS, 32)
    assert CUT in counts and set(counts) <= set(COUNTS)
    gate = graded_gate(maps, cue, counts, CUT, arm)
    assert gate["ordered"].all() and gate["same_elsewhere"].all()
    assert list(gate["kept_cue_at_cut"].iloc[-1]) == [16 - s for s in GRADINGS[grading]]
    corner = [p in CORNERS for p in places]
    if arm == "equal":  # a corner cue's windows touch the border differently: their outlines differ
        assert (gate["passes"] == ~np.array(corner)).all()
    else:
        assert gate["passes"].all()
    with pytest.raises(ValueError, match="not among the protocols' kept counts"):
        graded_gate(maps, cue, counts, CUT + 1, arm)
