"""Masks for evaluators: a metric declares that it reads the images' ground-truth
masks (EvaluatorSpec.needs_masks) and gets them with the images, by image id, in the workflow's
evaluate job and in fudbench.evaluate; data without masks is refused when the config is parsed,
naming the entry. The worked example is `rma`, Relevance Mass Accuracy (Arras et al. 2022)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import fudbench
from fudbench.core.checks import InputError
from fudbench.evaluators import build_evaluator, spec

REPO = Path(__file__).resolve().parents[1]
SIZE = 8


class MeanBrightness(torch.nn.Module):
    """Two logits from the mean brightness: a model with no parameters to train."""

    def forward(self, x):
        s = 4 * (x.mean(dim=(1, 2, 3)) - 0.5)
        return torch.stack([s, -s], 1)


def _masks(n: int) -> torch.Tensor:
    """A different object per image: image k's mask is the rows < k + 2 (so its share is (k + 2) / 8)."""
    m = torch.zeros(n, SIZE, SIZE)
    for k in range(n):
        m[k, : k + 2] = 1
    return m


def _maps(masks: torch.Tensor) -> tuple[torch.Tensor, np.ndarray]:
    """Maps with a known relevance mass inside each mask: 3 inside, 1 outside, -5 on one pixel outside
    (the negative part does not count under `sum`). Returns (maps, the expected RMA per image)."""
    a = torch.where(masks.bool(), 3.0, 1.0).unsqueeze(1).repeat(1, 3, 1, 1) / 3  # summed over channels: 3 / 1
    a[:, :, -1, -1] = -5.0
    area = masks.double().flatten(1).sum(1)
    inside, outside = 3.0 * area, SIZE * SIZE - area - 1.0
    return a, (inside / (inside + outside)).numpy()


def _rma(frame: pd.DataFrame) -> pd.Series:
    return frame[frame["curve"] == "rma"].drop_duplicates("image").set_index("image")["score"]


def test_rma_reads_each_images_own_mask_by_id_not_by_position():
    """ids [5, 2, 9] are not row numbers: masks in the images' order, or as {image_id: mask} in any key
    order, give each image its own mask; the scores are the hand-computed masses."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(3, 3, SIZE, SIZE, generator=g)
    y = torch.zeros(3, dtype=torch.long)
    masks = _masks(3)
    maps, expected = _maps(masks)
    ids = [5, 2, 9]
    aligned = fudbench.evaluate(MeanBrightness(), x, y, maps, ["rma"], image_ids=ids, masks=masks)
    by_id = fudbench.evaluate(
        MeanBrightness(), x, y, maps, ["rma"], image_ids=ids, masks={9: masks[2].numpy(), 5: masks[0], 2: masks[1]}
    )
    got = _rma(aligned)
    assert got.index.tolist() == ids
    np.testing.assert_allclose(got.to_numpy(), expected, rtol=1e-12)
    pd.testing.assert_series_equal(got, _rma(by_id))
    # row numbers are not ids: a dict keyed 0, 1, 2 is refused, naming the ids it lacks
    with pytest.raises(InputError, match=r"masks given as \{image_id: mask\}.*missing \[5, 9\]; unknown \[0, 1\]"):
        fudbench.evaluate(MeanBrightness(), x, y, maps, ["rma"], image_ids=ids, masks=dict(enumerate(masks)))


def test_rma_direction_range_and_degenerate_maps():
    x = torch.rand(3, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(1))
    y = torch.zeros(3, dtype=torch.long)
    masks = _masks(3)
    inside = masks.unsqueeze(1).repeat(1, 3, 1, 1)
    negative = -torch.ones(3, 3, SIZE, SIZE)  # no positive relevance: undefined, NaN and flagged
    good, bad, none = (
        fudbench.evaluate(MeanBrightness(), x, y, a, ["rma"], masks=masks) for a in (inside, 1 - inside, negative)
    )
    assert (_rma(good) == 1).all() and (_rma(bad) == 0).all()
    assert _rma(none).isna().all() and none["degenerate"].all()
    uniform = fudbench.evaluate(MeanBrightness(), x, y, torch.ones(3, 3, SIZE, SIZE), ["rma"], masks=masks)
    np.testing.assert_allclose(_rma(uniform).to_numpy(), masks.flatten(1).mean(1).numpy())  # the mask's share
    # abs_sum counts negative relevance as mass: the all-negative map is then uniform
    flipped = fudbench.evaluate(MeanBrightness(), x, y, negative, [{"rma": {"reduction": "abs_sum"}}], masks=masks)
    np.testing.assert_allclose(_rma(flipped).to_numpy(), masks.flatten(1).mean(1).numpy())


def test_evaluate_asks_for_masks_before_any_work_naming_the_metric():
    x = torch.rand(2, 3, SIZE, SIZE)
    y = torch.zeros(2, dtype=torch.long)
    with pytest.raises(
        InputError,
        match=r"metrics\['rma'\] reads the images' ground-truth object masks, and masks "
        r"is not given: pass masks=",
    ):
        fudbench.evaluate(MeanBrightness(), x, y, torch.rand(2, 3, SIZE, SIZE), ["insdel", "rma"])
    with pytest.raises(InputError, match=r"masks must hold one H x W mask per image.*got \(2, 4, 4\)"):
        fudbench.evaluate(MeanBrightness(), x, y, torch.rand(2, 3, SIZE, SIZE), ["rma"], masks=torch.ones(2, 4, 4))
    # metrics that do not read masks ignore them
    plain = fudbench.evaluate(
        MeanBrightness(),
        x,
        y,
        torch.rand(2, 3, SIZE, SIZE),
        [{"insdel": {"n_steps": 2}}],
        masks=torch.ones(2, SIZE, SIZE),
    )
    assert set(plain["curve"]) == {"deletion", "insertion", "deletion_ratios"}


def test_protocol_and_evaluator_refuse_to_run_without_masks():
    x = torch.rand(2, 3, SIZE, SIZE)
    y = torch.zeros(2, dtype=torch.long)
    ev = build_evaluator("rma", {}, {"ratios": [0.5], "reduction": "abs_sum"}, {}, "cpu")
    assert ev.needs_masks and spec("rma").masks_needed(spec("rma").resolve({}))
    with pytest.raises(ValueError, match="evaluator rma reads the images' ground-truth object masks"):
        ev.run(MeanBrightness(), x, y, torch.rand(2, 3, SIZE, SIZE), [0, 1], (0,))
    protocol = ev.curves[0][0]
    with pytest.raises(ValueError, match="rma needs the images' ground-truth object masks"):
        protocol.run(MeanBrightness(), x, y, torch.rand(2, 3, SIZE, SIZE), None, [0, 1], (0,))
    # the other registered evaluators do not ask for them
    assert not build_evaluator(
        "insdel", {"n_steps": 2}, {"ratios": [0.5], "reduction": "abs_sum"}, {}, "cpu"
    ).needs_masks


@pytest.fixture(scope="module")
def eval_npz(tmp_path_factory):
    """A 4-image eval npz with a different mask per image, and a classifier checkpoint."""
    from fudbench.core.io import write_npz
    from fudbench.models.classifiers import build_classifier, save_classifier

    d = tmp_path_factory.mktemp("masks_job")
    g = torch.Generator().manual_seed(2)
    images = (torch.rand(4, 3, SIZE, SIZE, generator=g) * 255).to(torch.uint8).numpy()
    masks = _masks(4).to(torch.uint8).numpy()
    write_npz(d / "eval.npz", images=images, labels=np.zeros(4, np.int64), masks=masks, has_masks=np.array(True))
    write_npz(
        d / "nomasks.npz",
        images=images,
        labels=np.zeros(4, np.int64),
        masks=np.zeros_like(masks),
        has_masks=np.array(False),
    )
    torch.manual_seed(0)
    cfg = {"arch": "small_cnn", "width": 4}
    save_classifier(d / "clf.pt", build_classifier(cfg, 2, SIZE, [0.5] * 3, [0.25] * 3), cfg, 2, SIZE, {})
    return d


def test_the_evaluate_job_hands_each_shard_its_images_masks(eval_npz, tmp_path):
    """The workflow's path: the evaluate job reads the masks of its shard from the eval npz (shard 1 of
    shard_size 2 = images 2 and 3) and scores what fudbench.evaluate scores with those ids and masks."""
    from fudbench.core.io import write_npz
    from fudbench.models.classifiers import load_classifier
    from fudbench.workflow.pipeline import evaluate_explainers

    maps, expected = _maps(_masks(4))
    write_npz(
        tmp_path / "attr.npz",
        attributions=maps[2:].numpy(),
        targets=np.zeros(2, np.int64),
        ids=np.array([2, 3]),
        labels=np.zeros(2, np.int64),
        seconds_per_image=np.float64(0),
    )
    out = tmp_path / "rec.parquet"
    evaluate_explainers(
        "clf",
        "rma",
        {"map": (tmp_path / "attr.npz", out, tmp_path / "smp.npz")},
        model_path=eval_npz / "clf.pt",
        images_path=eval_npz / "eval.npz",
        shard=1,
        shard_size=2,
        settings={},
        evaluation={"ratios": [0.5], "reduction": "abs_sum"},
        assets={},
        seed=0,
        device="cpu",
    )
    records = pd.read_parquet(out)
    np.testing.assert_allclose(records.set_index("image").loc[[2, 3], "mass_inside"].to_numpy(), expected[2:])
    x = torch.from_numpy(np.load(eval_npz / "eval.npz")["images"][2:]).float() / 255
    api = fudbench.evaluate(
        load_classifier(eval_npz / "clf.pt"),
        x,
        torch.zeros(2, dtype=torch.long),
        maps[2:],
        ["rma"],
        image_ids=[2, 3],
        masks=_masks(4)[2:],
        model_name="clf",
    )
    np.testing.assert_allclose(_rma(api).to_numpy(), records.set_index("image")["mass_inside"].to_numpy())
    # data without masks: the job stops, naming the evaluator (the config check refuses it earlier)
    with pytest.raises(ValueError, match="evaluator 'rma' reads ground-truth object masks, and .*nomasks.npz has none"):
        evaluate_explainers(
            "clf",
            "rma",
            {"map": (tmp_path / "attr.npz", out, tmp_path / "smp.npz")},
            model_path=eval_npz / "clf.pt",
            images_path=eval_npz / "nomasks.npz",
            shard=1,
            shard_size=2,
            settings={},
            evaluation={"ratios": [0.5], "reduction": "abs_sum"},
            assets={},
            seed=0,
            device="cpu",
        )


def _semantics(config):
    from fudbench.config.validate import check_semantics

    check_semantics(config, REPO)


def test_data_without_masks_is_refused_at_parse_time_naming_the_metric(tmp_path):
    from fudbench.config.files import resolve_config

    photos = resolve_config([REPO / "config/photos.yaml"])
    photos["evaluators"]["rma"] = {}
    _semantics(photos)  # the photo profile has its boxes: accepted
    del photos["data"]["folder"]["masks"]
    with pytest.raises(
        ValueError,
        match=r"config key 'evaluators.rma': the rma metric \(.*\) reads ground-truth "
        r"object masks, and data.source 'folder' has none \(data.folder.masks is "
        r"not set\); .*`rma: null`",
    ):
        _semantics(photos)
    alias = dict(photos, evaluators={"where": {"method": "rma", "reduction": "abs_sum"}})
    with pytest.raises(ValueError, match=r"config key 'evaluators.where': the rma metric"):
        _semantics(alias)
    paper = resolve_config([REPO / "config/paper.yaml"])
    assert "rma" not in paper["evaluators"]  # the default's entry dropped: ImageNet has no masks
    paper["evaluators"]["rma"] = {}
    with pytest.raises(ValueError, match=r"'evaluators.rma'.*data.source 'imagenet' has none"):
        _semantics(paper)
    # a plug-in metric that declares needs_masks is checked the same way
    (tmp_path / "my_loc.py").write_text(
        "from dataclasses import replace\nfrom fudbench.evaluators.localisation.rma import SPEC as RMA\n"
        "SPEC = replace(RMA, name='my_loc')\n"
    )
    plug = dict(photos, evaluators={"mine": {"method": f"{tmp_path / 'my_loc.py'}:SPEC"}})
    with pytest.raises(ValueError, match=r"config key 'evaluators.mine': the .*my_loc.py:SPEC metric"):
        _semantics(plug)


def test_rma_reaches_the_score_table_and_the_report_card_like_any_metric():
    """No table names `rma`: its curve's spec (table appendix_scores, label, direction) puts it in the
    appendix score table and on the report card. On a family of the mask with a growing share of its
    pixels shuffled (oracle_d00 .. d90), RMA recovers the order, and `random` ranks below the mask."""
    from fudbench.meta.report_card import report_card
    from fudbench.evaluators import configured_curves
    from fudbench.report.tables import score_table

    n = 12
    g = torch.Generator().manual_seed(3)
    x = torch.rand(n, 3, SIZE, SIZE, generator=g)
    y = torch.zeros(n, dtype=torch.long)
    masks = torch.zeros(n, SIZE, SIZE)
    for k in range(n):
        masks[k, k % 4 : k % 4 + 4, 1:5] = 1
    fractions = {"oracle_d00": 0.0, "oracle_d50": 0.5, "oracle_d90": 0.9}
    explainers = {
        "random": {},
        **{e: {"method": "degrade", "base": "oracle", "fraction": p} for e, p in fractions.items()},
    }
    frames = []
    for name, p in {"random": None, **fractions}.items():
        if p is None:
            maps = torch.rand(n, 1, SIZE, SIZE, generator=g)
        else:  # a fraction p of the pixels' values shuffled among themselves, per image
            flat = masks.flatten(1).clone() + 1e-3 * torch.rand(n, SIZE * SIZE, generator=g)
            for i in range(n):
                chosen = torch.randperm(SIZE * SIZE, generator=g)[: int(p * SIZE * SIZE)]
                flat[i, chosen] = flat[i, chosen[torch.randperm(len(chosen), generator=g)]]
            maps = flat.view(n, 1, SIZE, SIZE)
        frames.append(
            fudbench.evaluate(MeanBrightness(), x, y, maps, ["rma"], masks=masks, model_name="cnn", explainer=name)
        )
    per_image = pd.concat(frames).drop_duplicates(["explainer", "curve", "image"])[
        ["model", "explainer", "curve", "image", "score"]
    ]
    curve = configured_curves({"rma": {}})["rma"]
    assert curve.table == "appendix_scores"
    summary, tex = score_table(
        per_image,
        ["cnn"],
        list(explainers),
        ["rma"],
        {"rma": (curve.label, True)},
        n_boot=50,
        ci=0.95,
        seed=0,
        caption="c",
        tex_label="t",
    )
    assert "RMA" in tex and set(summary["explainer"]) == set(explainers)
    means = summary.set_index("explainer")["mean"]
    assert means["oracle_d00"] > means["oracle_d50"] > means["oracle_d90"] and means["oracle_d00"] > means["random"]
    card = report_card(per_image, None, explainers, {"rma": {}}, {"cnn": {"arch": "small_cnn", "width": 8}}, n_boot=50)
    row = card[card["metric"] == "RMA"].iloc[0]
    assert row["oracle_recovery"] == pytest.approx(1.0)
