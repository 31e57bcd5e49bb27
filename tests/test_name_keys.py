"""Keys built from several names. The gallery joined
<model>__<explainer>__<curve>, so the valid names model `cnn_` + explainer `ig`
and model `cnn` + explainer `_ig` gave one key (one overwrote the other) and the
qualitative figure's split("__") dropped the `cnn_` rows. The keys now join with
a character no name may hold. Every test fails on 6c8cba0."""

import numpy as np
import pytest

from fudbench.core.io import load_npz, write_npz
from fudbench.config.names import name_problem
from fudbench.report.figures import qualitative_grid
from fudbench.report.gallery import (
    FORMAT,
    SEP,
    build_gallery,
    check_gallery,
    gallery_key,
    gallery_pairs,
    parse_key,
)

PAIRS = [("cnn_", "ig"), ("cnn", "_ig"), ("a", "b_"), ("a_", "b")]


def test_the_adversarial_names_are_valid_names_and_cannot_hold_the_separator():
    for model, explainer in PAIRS:
        assert name_problem("models.classifiers.x", model) is None and name_problem("explainers.x", explainer) is None
    assert name_problem("explainers.x", f"ig{SEP}x") is not None
    with pytest.raises(ValueError, match=r"explainer name 'ig\.x' is empty or contains '\.'"):
        gallery_key("cnn", f"ig{SEP}x", "attributions")


def _gallery(tmp_path, pairs, n=3, steps=2):
    rng = np.random.default_rng(0)
    write_npz(
        tmp_path / "eval.npz",
        images=rng.integers(0, 256, (4, 3, 8, 8), dtype=np.uint8),
        masks=np.zeros((4, 8, 8), np.uint8),
        labels=np.zeros(4, np.int64),
    )
    attributions, samples = {}, {}
    for k, (model, explainer) in enumerate(pairs):
        write_npz(tmp_path / f"attr{k}.npz", attributions=np.full((4, 3, 8, 8), k, np.float32))
        write_npz(
            tmp_path / f"samples{k}.npz",
            ids=np.arange(4),
            fud=np.full((4, steps, 3, 8, 8), (k + 1) / 10, np.float32),
            removed_fud=np.linspace(0.2, 0.8, steps),
            gevaert_del__blur=np.full((4, steps, 3, 8, 8), k, np.float32),
            removed_gevaert_del__blur=np.full((4, steps), 0.5),
        )
        attributions[(model, explainer)] = tmp_path / f"attr{k}.npz"
        samples[(model, explainer, "fud")] = tmp_path / f"samples{k}.npz"
    return build_gallery(tmp_path / "eval.npz", attributions, samples, n)


def test_gallery_keys_of_adversarial_names_are_distinct_and_split_back(tmp_path):
    g = _gallery(tmp_path, PAIRS)
    assert gallery_pairs(g) == PAIRS
    for k, (model, explainer) in enumerate(PAIRS):  # each pair keeps its own arrays
        assert (g[gallery_key(model, explainer, "attributions")] == k).all()
        assert (g[gallery_key(model, explainer, "samples", "gevaert_del__blur")] == k).all()
        assert g[gallery_key(model, explainer, "removed", "gevaert_del__blur")].shape == (3, 2)
    assert parse_key("cnn_.ig.samples.gevaert_del__blur") == ("cnn_", "ig", "samples", "gevaert_del__blur")
    assert parse_key("cnn._ig.attributions") == ("cnn", "_ig", "attributions", None)
    assert parse_key("images") is None and parse_key("format") is None
    # through the npz file the job writes
    write_npz(tmp_path / "gallery.npz", **g)
    back = load_npz(tmp_path / "gallery.npz")
    assert gallery_pairs(back) == PAIRS and int(back["format"]) == FORMAT
    check_gallery(back)


def test_qualitative_grid_keeps_every_pair_of_adversarial_names(tmp_path):
    """6c8cba0: `cnn___ig` split into ('cnn', '_ig'), so explainers=['ig'] dropped model cnn_'s rows."""
    g = _gallery(tmp_path, PAIRS[:2])
    labels = {"fud": "FUD"}
    fig = qualitative_grid(g, labels, explainers=["ig"])
    titles = [ax.get_title(loc="left") for ax in fig.axes if ax.get_title(loc="left")]
    assert titles == ["cnn_/ig FUD"]
    fig = qualitative_grid(g, labels, explainers=["ig", "_ig"])
    assert [ax.get_title(loc="left") for ax in fig.axes if ax.get_title(loc="left")] == ["cnn_/ig FUD", "cnn/_ig FUD"]


def test_fig4_reads_its_pair_and_not_the_neighbours(tmp_path):
    from fudbench.report.figures import fig4_qualitative

    g = _gallery(tmp_path, PAIRS[:2], n=1)
    fig = fig4_qualitative(g, {"fud": "FUD"}, "cnn_", "ig")
    sample = np.asarray(fig.axes[2].images[0].get_array())
    assert np.allclose(sample, 0.1)  # cnn_/ig's own samples (0.1), not cnn/_ig's (0.2) written under the same key
    with pytest.raises(KeyError, match="cnn_/_ig"):
        fig4_qualitative(g, {"fud": "FUD"}, "cnn_", "_ig")


def test_an_old_layout_gallery_is_refused_with_the_fix(tmp_path):
    with pytest.raises(ValueError, match=r"old\.npz: gallery format 1, expected 2 .*delete the file"):
        check_gallery({"ids": np.arange(2), "cnn__ig__attributions": np.zeros(2)}, "old.npz")
