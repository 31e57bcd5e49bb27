"""The fill audit's detector and keep-top sets (studies/round4/round4_fill_audit.py) on images whose answer is known."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "studies" / "round4"))
from round4_fill_audit import cue_coloured, keep_top_sets, reversed_map  # noqa: E402  (the tool's imports)


def test_cue_colour_detector_finds_the_noisy_cue_and_nothing_grey():
    rng = np.random.default_rng(0)
    img = np.full((1, 3, 8, 8), 0.5)
    img[0, :, 2:4, 2:4] = np.clip(np.array([1.0, 0.0, 0.0])[:, None, None] + 0.1 * rng.standard_normal((3, 2, 2)), 0, 1)
    found = cue_coloured(img, np.array([[1.0, 0.0, 0.0]]), 0.3)[0]
    assert found[2:4, 2:4].all() and found.sum() == 4
    assert not cue_coloured(img, np.array([[0.0, 0.0, 1.0]]), 0.3).any()  # another image's colour: nothing


def test_keep_top_sets_are_the_protocols_nested_top_pixels():
    scores = np.arange(16, dtype=float).reshape(1, 4, 4)
    sets = keep_top_sets(scores, [0.25, 0.5])
    assert sets.shape == (1, 2, 4, 4)
    assert sets[0, 0].sum() == 4 and sets[0, 0, 3].all()  # the four highest: the last row
    assert sets[0, 1].sum() == 8 and (sets[0, 0] <= sets[0, 1]).all()  # nested


def test_reversed_map_keeps_the_bottom_sets_under_the_abs_sum_reduction():
    from fudbench.meta.cue import reduce_map

    scores = np.random.default_rng(1).permutation(64).astype(float).reshape(1, 8, 8)
    flipped = reversed_map(scores, 3)
    assert flipped.shape == (1, 3, 8, 8) and (flipped >= 0).all()
    top_of_flipped = keep_top_sets(reduce_map(flipped, "abs_sum"), [0.25])
    assert (top_of_flipped == keep_top_sets(-scores, [0.25])).all()  # the bottom quarter of `scores`
