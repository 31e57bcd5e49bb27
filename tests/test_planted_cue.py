"""The planted-cue ground truth (issue 27 item 2; docs/meta_evaluation.md, "Planted cue"):
the generator's cue option, the intervention check, the cue coverage of maps, the
metric verdicts, the config's checks and the profile's DAG."""

from __future__ import annotations

import copy
import hashlib

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.ndimage import binary_dilation

from fudbench.meta.cue import (
    CueCheck,
    control_explainers,
    coverage_frame,
    cue_coverage,
    cue_verdicts,
    failed_checks,
    intervention_check,
    intervention_rows,
    per_image_spearman,
    reduce_map,
    wilson_interval,
)
from fudbench.config.validate import ConfigError, validate_config
from fudbench.config.files import resolve_config
from fudbench.data.synthetic import SyntheticSpec, generate_cue_split, generate_split, make_benchmark

COLOURS = {"red": [1.0, 0.0, 0.0], "green": [0.0, 1.0, 0.0], "blue": [0.0, 0.0, 1.0], "yellow": [1.0, 1.0, 0.0]}
CFG32 = {
    "image_size": 32,
    "shapes": ["circle", "square", "triangle", "cross"],
    "dark": 0.1,
    "light": 0.9,
    "object_scale": [0.45, 0.75],
    "cue": {"size": 4, "margin": 1, "colours": COLOURS},
}
TINY = {
    "image_size": 16,
    "shapes": ["circle", "square"],
    "dark": 0.1,
    "light": 0.9,
    "object_scale": [0.4, 0.6],
    "cue": {"size": 3, "colours": {k: COLOURS[k] for k in ("red", "green", "blue")}},
}


def _digest(arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


# ------------------------------------------------------------------ generator


def test_without_a_cue_the_benchmark_is_byte_for_byte_what_it_was():
    """Digests computed with the generator of main (fce69b4), before the cue existed."""
    spec = SyntheticSpec(32, ("circle", "square", "triangle", "cross"), 0.1, 0.9, (0.45, 0.75))
    assert (
        _digest(generate_split(spec, 24, 0, "test"))
        == "86d65c5d28843bf360014b09b0ceda6d619e538d6558b8892a82c8fa8b0e5e3e"
    )
    cfg = {
        "image_size": 16,
        "shapes": ["circle", "square"],
        "dark": 0.1,
        "light": 0.9,
        "object_scale": [0.5, 0.8],
        "n_train": 8,
        "n_val": 4,
        "n_test": 10,
    }
    for cfg in (cfg, {**cfg, "cue": None}):  # null = absent
        bench = make_benchmark(cfg, 7, 3)
        splits = bench["splits"]
        assert (
            _digest([splits[s][k] for s in ("train", "val", "test", "eval") for k in ("images", "labels", "masks")])
            == "2787bf4493266da95a90112129415289af7fe15fe5d5a96dd10c12703d4eb9d7"
        )
        assert set(splits["test"]) == {"images", "labels", "masks"}
        assert bench["class_names"] == ["dark_circle", "light_circle", "dark_square", "light_square"]


def test_the_label_is_the_cue_colour_and_the_object_is_crossed_with_it():
    spec = SyntheticSpec.from_config(CFG32)
    k, n_objects = 4, 8
    d = generate_cue_split(spec, 2 * k * n_objects, seed=0, split="train")
    # every (label, object class) cell equally often: the object carries no information about the label
    counts = pd.crosstab(d["labels"], d["object_labels"]).to_numpy()
    assert counts.shape == (k, n_objects) and (counts == 2).all()
    x = d["images"].astype(float) / 255
    colours = np.array(list(COLOURS.values()))
    for i in range(len(x)):
        cue = d["masks"][i].astype(bool)
        ys, xs = np.nonzero(cue)
        assert cue.sum() == 16 and np.ptp(ys) == 3 and np.ptp(xs) == 3  # a 4 x 4 square
        mean = x[i][:, cue].mean(1)
        # the cue's colour decodes the label (nearest colour), and nothing else is that colour
        assert np.argmin(((colours - mean) ** 2).sum(1)) == d["labels"][i]
        # clear of the object by the margin
        assert not (
            binary_dilation(cue, iterations=1, structure=np.ones((3, 3))) & d["object_masks"][i].astype(bool)
        ).any()
    # the object's tone is that of its class, whatever the label
    tone = np.array([x[i][:, d["object_masks"][i] == 1].mean() for i in range(len(x))])
    assert (tone[d["object_labels"] % 2 == 0] < 0.25).all() and (tone[d["object_labels"] % 2 == 1] > 0.75).all()


def test_counterfactuals_change_only_their_part_and_are_reproducible():
    spec = SyntheticSpec.from_config(CFG32)
    d = generate_cue_split(spec, 40, seed=3, split="test", counterfactuals=True)
    again = generate_cue_split(spec, 40, seed=3, split="test")
    for key in ("images", "labels", "masks", "object_labels", "object_masks"):
        assert np.array_equal(d[key], again[key])  # the counterfactuals take no draws of their own
    assert not np.array_equal(d["images"], generate_cue_split(spec, 40, seed=3, split="val")["images"])
    cue = d["masks"].astype(bool)[:, None].repeat(3, 1)
    # the object's anti-aliased edge reaches a pixel past its mask (coverage < 1/2 there)
    grown = np.stack([binary_dilation(m, structure=np.ones((3, 3))) for m in d["object_masks"].astype(bool)])
    obj = grown[:, None].repeat(3, 1)
    assert np.array_equal(d["no_cue"][~cue], d["images"][~cue]) and not np.array_equal(
        d["no_cue"][cue], d["images"][cue]
    )
    assert np.array_equal(d["no_object"][~obj], d["images"][~obj]) and not np.array_equal(
        d["no_object"][obj], d["images"][obj]
    )
    assert np.array_equal(d["swapped"][~cue], d["images"][~cue])
    assert (d["swapped_labels"] != d["labels"]).all() and set(d["swapped_labels"]) == {0, 1, 2, 3}


def test_make_benchmark_with_a_cue_names_the_colours_and_keeps_the_object():
    bench = make_benchmark({**TINY, "n_train": 12, "n_val": 6, "n_test": 9}, n_eval=5, seed=0)
    assert bench["class_names"] == ["cue_red", "cue_green", "cue_blue"]
    ev = bench["splits"]["eval"]
    assert len(ev["images"]) == 5 and {"object_labels", "object_masks"} <= set(ev)
    images, labels, masks = generate_split(SyntheticSpec.from_config(TINY), 9, 0, "test")
    assert np.array_equal(images, bench["splits"]["test"]["images"]) and np.array_equal(
        masks, bench["splits"]["test"]["masks"]
    )


def test_no_room_for_the_cue_is_a_clear_error():
    cfg = {**TINY, "object_scale": [0.99, 1.0], "cue": {**TINY["cue"], "size": 5}}
    with pytest.raises(ValueError, match=r"data\.synthetic\.cue\.size.*no place"):
        generate_cue_split(SyntheticSpec.from_config(cfg), 4, 0, "train")


# ------------------------------------------------------------------ intervention


def test_intervention_rows_flag_a_model_that_ignores_the_cue():
    labels = np.arange(40) % 4
    swapped = (labels + 1) % 4
    good = {"clean": labels, "cue_removed": np.zeros(40, int), "object_removed": labels, "cue_swapped": swapped}
    rows = pd.DataFrame(intervention_rows("good", good, labels, swapped, 4))
    assert (rows["check"] == "ok").all()
    assert rows.set_index("condition").loc["cue_removed", "accuracy"] == 0.25
    objects = np.arange(40) // 4 % 4  # a model that reads the object: right on none of the cue's tests
    bad = {"clean": objects, "cue_removed": objects, "object_removed": (objects + 1) % 4, "cue_swapped": objects}
    rows = pd.DataFrame(intervention_rows("bad", bad, labels, swapped, 4))
    assert failed_checks(rows) == {"bad": ["clean", "object_removed", "cue_swapped"]}
    leak = {**good, "cue_removed": labels}  # right without the cue: the label leaks
    assert failed_checks(pd.DataFrame(intervention_rows("leak", leak, labels, swapped, 4))) == {"leak": ["cue_removed"]}
    lo, hi = wilson_interval(10, 40)
    assert lo < 0.25 < hi and wilson_interval(0, 5)[0] == 0.0


def test_a_briefly_trained_classifier_uses_the_cue():
    """Seconds of training on the tiny cue benchmark: removing the cue takes it to chance,
    removing the object changes nothing, recolouring the cue moves the prediction."""
    from fudbench.models.classifiers import build_classifier
    from fudbench.models.training import train_classifier

    spec = SyntheticSpec.from_config(TINY)
    train, val = generate_cue_split(spec, 480, 0, "train"), generate_cue_split(spec, 60, 0, "val")
    test = generate_cue_split(spec, 120, 0, "test", counterfactuals=True)

    def f(a):
        return torch.from_numpy(a).float() / 255

    x = f(train["images"])
    torch.manual_seed(0)
    model = build_classifier(
        {"arch": "small_cnn", "width": 8}, 3, 16, x.mean((0, 2, 3)).tolist(), x.std((0, 2, 3)).tolist()
    )
    train_classifier(
        model,
        x,
        torch.from_numpy(train["labels"]),
        f(val["images"]),
        torch.from_numpy(val["labels"]),
        {"epochs": 4, "batch_size": 32, "lr": 0.005, "weight_decay": 0.0},
        0,
        "cpu",
    )

    @torch.no_grad()
    def predict(images):
        return model(f(images)).argmax(1).numpy()

    check = CueCheck(min_accuracy=0.8, min_unchanged=0.8, chance_margin=0.2)
    rows = pd.DataFrame(intervention_check("cnn", predict, test, 3, check)).set_index("condition")
    assert (rows["check"] == "ok").all(), rows
    assert rows.loc["clean", "accuracy"] >= 0.8 and rows.loc["cue_swapped", "accuracy"] >= 0.8
    assert rows.loc["cue_removed", "accuracy"] <= 1 / 3 + 0.2
    assert rows.loc["object_removed", "unchanged"] >= 0.8


# ------------------------------------------------------------------ coverage


def _square_masks(n=64, size=16, side=3, seed=0):
    rng = np.random.default_rng(seed)
    masks = np.zeros((n, size, size), dtype=bool)
    for i in range(n):
        y, x = rng.integers(0, size - side + 1, size=2)
        masks[i, y : y + side, x : x + side] = True
    return masks


def test_cue_coverage_of_hand_made_maps():
    masks = _square_masks()
    share = masks[0].sum() / masks[0].size
    oracle = cue_coverage(masks.astype(float), masks)
    background = cue_coverage(1.0 - masks, masks)
    constant = cue_coverage(np.full(masks.shape, 2.0), masks)
    noise = cue_coverage(np.random.default_rng(1).random(masks.shape), masks)
    for t in ("precision", "auroc", "mass"):
        assert np.allclose(oracle[t], 1) and np.allclose(background[t], 0)
    assert np.allclose(constant["precision"], share) and np.allclose(constant["auroc"], 0.5)
    assert np.allclose(constant["mass"], share)
    assert abs(noise["precision"].mean() - share) < 0.03 and abs(noise["auroc"].mean() - 0.5) < 0.03
    assert abs(noise["mass"].mean() - share) < 0.01
    # half the cue on top, the rest at the bottom: precision 1/2, the other statistics follow the ranks
    half = masks[:1].astype(float).copy()
    ys, xs = np.nonzero(masks[0])
    half[0, ys[5:], xs[5:]] = -1.0  # 4 of 9 cue pixels ranked last
    cov = cue_coverage(half, masks[:1])
    assert cov["precision"][0] == pytest.approx(5 / 9)
    # non-finite scores rank last, as in the metrics (fudbench.core.masks)
    nan_top = masks[:1].astype(float).copy()
    nan_top[0, ~masks[0]] = np.nan
    assert cue_coverage(nan_top, masks[:1])["precision"][0] == 1.0
    with pytest.raises(ValueError, match="cue mask"):
        cue_coverage(np.ones((1, 4, 4)), np.zeros((1, 4, 4), bool))


def test_reduce_map_is_the_metrics_reduction():
    from fudbench.core.masks import REDUCTIONS, reduce_attribution

    a = np.random.default_rng(0).normal(size=(2, 3, 5, 5)).astype(np.float32)
    for r in REDUCTIONS:
        assert np.allclose(reduce_map(a, r), reduce_attribution(torch.from_numpy(a), r).numpy(), atol=1e-5)
    frame = coverage_frame(
        "cnn", "oracle", [3, 4], np.repeat(_square_masks(2)[:, None], 3, 1).astype(np.float32), _square_masks(2)
    )
    assert frame["image"].tolist() == [3, 4] and (frame["precision"] == 1).all()


# ------------------------------------------------------------------ verdicts


def _per_image(coverage: pd.DataFrame, curves: dict) -> pd.DataFrame:
    """Synthetic per-image scores: each curve's score a function of the image's precision."""
    rows = []
    for curve, fn in curves.items():
        for _, r in coverage.iterrows():
            rows.append(
                {
                    "model": r["model"],
                    "explainer": r["explainer"],
                    "curve": curve,
                    "image": r["image"],
                    "score": fn(r["precision"], r["image"]),
                }
            )
    return pd.DataFrame(rows)


def test_verdicts_on_synthetic_scores():
    rng = np.random.default_rng(0)
    explainers = {
        "ig": {},
        "sm": {},
        "gig": {},
        "agi": {},
        "oracle": {},
        "random": {},
        "background": {},
        "ig_d50": {"method": "degrade", "base": "ig", "fraction": 0.5},
    }
    assert control_explainers(explainers) == ["oracle", "random", "background", "ig_d50"]
    coverage = pd.DataFrame(
        [
            {"model": "cnn", "explainer": e, "image": i, "precision": p, "auroc": p, "mass": p}
            for i in range(12)
            for e, p in zip(explainers, rng.permutation(8) / 8)
        ]
    )
    curves = {
        "up": lambda p, i: 3 * p + 1,
        "down": lambda p, i: -p,
        "lower_better": lambda p, i: 1 - p,
        "flat": lambda p, i: 0.5,
        "noise": lambda p, i: rng.random(),
    }
    scores = {
        "up": ("Up", True),
        "down": ("Down", True),
        "lower_better": ("Lower", False),
        "flat": ("Flat", True),
        "noise": ("Noise", True),
    }
    v = cue_verdicts(_per_image(coverage, curves), coverage, explainers, scores, n_boot=200, seed=0)
    v = v.set_index(["curve", "explainers"])
    assert v.loc[("up", "all"), "spearman"] == 1 and v.loc[("up", "all"), "verdict"] == "recovers"
    assert v.loc[("up", "all"), "macro_spearman"] == pytest.approx(1)
    assert v.loc[("down", "all"), "spearman"] == -1 and v.loc[("down", "all"), "verdict"] == "reverses"
    assert v.loc[("lower_better", "all"), "spearman"] == 1  # oriented by the metric's direction
    assert v.loc[("flat", "all"), "spearman"] == 0 and v.loc[("flat", "all"), "verdict"].startswith("undecided")
    assert v.loc[("up", "no_controls"), "n_explainers"] == 4 and v.loc[("up", "all"), "n_explainers"] == 8
    assert (v["n_images"] == 12).all() and (v["intervention"] == "ok").all()
    flagged = cue_verdicts(
        _per_image(coverage, {"up": curves["up"]}),
        coverage,
        explainers,
        {"up": ("Up", True)},
        n_boot=50,
        failed={"cnn": ["cue_swapped"]},
    )
    assert (flagged["intervention"] == "FAILED: cue_swapped").all()
    with pytest.raises(ValueError, match=r"analysis\.cue\.truth"):
        cue_verdicts(
            _per_image(coverage, {"up": curves["up"]}), coverage, explainers, {"up": ("Up", True)}, truth="area"
        )


def test_per_image_spearman_ties():
    truth = np.array([[0.0, 0.5, 1.0], [0.2, 0.2, 0.2]])
    scores = np.array([[5.0, 5.0, 5.0], [1.0, 2.0, 3.0]])
    rho = per_image_spearman(scores, truth)
    assert rho[0] == 0 and np.isnan(rho[1])  # a tied metric sees nothing; a tied truth orders nothing


# ------------------------------------------------------------------ config


@pytest.fixture(scope="module")
def cue_config(repo):
    return resolve_config([repo / "studies/planted_cue/cue.yaml"])


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda c: c.update(size=0), r"data\.synthetic\.cue\.size"),
        (lambda c: c.update(size=16), r"data\.synthetic\.cue\.size.*no room"),
        (lambda c: c["colours"].update(orange=[1.0, 0.1, 0.0]), r"data\.synthetic\.cue\.colours.*red.*orange"),
        (lambda c: c["colours"].update(bad=[1.0, 0.0]), r"data\.synthetic\.cue\.colours\.bad"),
        (lambda c: c["colours"].update(grey=[0.5, 0.5, 1.5]), r"data\.synthetic\.cue\.colours\.grey"),
        (lambda c: c.update(colours={"red": [1, 0, 0]}), r"data\.synthetic\.cue\.colours"),
        (lambda c: c.update(place="corner"), r"data\.synthetic\.cue.*place"),
    ],
)
def test_bad_cue_settings_are_errors_naming_the_key(repo, cue_config, change, match):
    cfg = copy.deepcopy(cue_config)
    change(cfg["data"]["synthetic"]["cue"])
    with pytest.raises(ConfigError, match=match):
        validate_config(cfg, repo / "config/schema.yaml")


def test_the_cue_profile_is_valid_and_trains_its_models(repo, cue_config):
    validate_config(copy.deepcopy(cue_config), repo / "config/schema.yaml")
    assert all(c["source"] == "train" for c in cue_config["models"]["classifiers"].values())
    assert cue_config["models"]["score_model"]["source"] == "train"
    assert {"oracle", "background", "random", "ig", "sm"} <= set(cue_config["explainers"])
    bad = copy.deepcopy(cue_config)
    bad["analysis"]["cue"]["truth"] = "area"
    with pytest.raises(ConfigError, match=r"analysis\.cue\.truth"):
        validate_config(bad, repo / "config/schema.yaml")


def test_the_cue_profile_is_an_overlay_that_repeats_no_default(repo):
    """As tests/test_config.py checks the other profiles: only what differs from config/config.yaml."""
    from fudbench.config.validate import load_config, load_yaml
    from fudbench.config.files import is_overlay, load_config_file

    default, over = load_yaml(repo / "config/config.yaml"), load_config_file(repo / "studies/planted_cue/cue.yaml")
    assert is_overlay(over)

    def repeated(over, base, path=""):
        for key, value in over.items():
            if isinstance(value, dict) and isinstance(base.get(key), dict):
                yield from repeated(value, base[key], f"{path}{key}.")
            elif key in base and base[key] == value:
                yield f"{path}{key}"

    assert list(repeated(over, default)) == []
    # the default's evaluators, FUD symmetric (its bottom curve and symmetric score: the cue endpoint)
    expected = copy.deepcopy(default["evaluators"])
    expected["fud"]["symmetric"] = True
    assert load_config(repo / "studies/planted_cue/cue.yaml", repo / "config/schema.yaml")["evaluators"] == expected


@pytest.mark.workflow
def test_the_cue_dag_has_its_rules_and_the_default_has_none(repo, tmp_path):
    from workflow_support import job_counts, snakemake

    res = snakemake(
        repo, "-n", "--configfile", str(repo / "studies/planted_cue/cue.yaml"), "--directory", str(tmp_path / "c")
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    counts = job_counts(res.stdout)
    assert counts["cue_intervention"] == counts["cue_truth"] == counts["cue_verdict"] == 1
    assert counts["train_classifier"] == 2 and counts["train_score_model"] == 1
    # The default, through two overlays: one drops `sm`, the next gives it back as `{}` (Snakemake's own
    # merge of the files would leave it dropped; the Snakefile merges them again: command_line_config).
    drop, restore = tmp_path / "drop.yaml", tmp_path / "restore.yaml"
    drop.write_text("explainers: {sm: null}\n")
    restore.write_text("explainers: {sm: {}}\n")
    res = snakemake(
        repo,
        "-n",
        "--configfile",
        str(repo / "config/config.yaml"),
        str(drop),
        str(restore),
        "--directory",
        str(tmp_path / "d"),
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    assert not {"cue_intervention", "cue_truth", "cue_verdict"} & set(job_counts(res.stdout))
    assert "attributions/cnn/sm/shard" in res.stdout
