"""Every registered evaluator, run by the generic tests: nothing here names one.

Each evaluator runs with its spec's `quick` settings (EvaluatorSpec.quick) on
a tiny CNN trained for a task whose evidence is known by construction: the
class is the brightness of the top-left quadrant; the rest of the image is
noise. Checked for each evaluator, so a new one is tested by adding it to
the registry:

- the records carry the shared columns and only the curves the spec declares;
  kept samples are exactly the declared ones, with one removed fraction per
  image and step;
- every per-image score (and derived score) is finite and inside the curve's
  declared value range;
- where the shard is cut changes no record (per-image seeds);
- the direction: a map on the quadrant scores better, in the curve's declared
  direction, than the same map reversed, for every scored curve. A wrong sign
  in a score function or a reversed order fails here. For the metrics that
  explain again (EvaluatorSpec.needs_explainer) the better map is the one that
  has the category's property: under robustness a fixed map (it ignores the
  input) beats saliency, under randomisation saliency (it reads the model and
  the class) beats a fixed map.
"""

import numpy as np
import pandas as pd
import pytest
import torch

from fudbench.analysis.curves import derived_scores, per_image_scores
from fudbench.evaluators import EVALUATORS, build_evaluator, configured_curves, spec
from fudbench.evaluators.base import ALIAS_SEPARATOR, RANDOMISATION, ROBUSTNESS
from fudbench.explainers import build_explainer
from fudbench.explainers.again import ExplainAgain
from fudbench.explainers.base import Explainer

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)

SIZE, N = 16, 6
EVALUATION = {"ratios": [0.25, 0.5, 0.75], "reduction": "abs_sum"}
SHARED = ["curve", "image", "step", "kept", "removed", "target"]
TAIL = ["confidence", "prediction", "energy", "l2", "seconds"]


def quadrant_images(n: int, bright: bool, generator) -> torch.Tensor:
    """A mid-grey, faintly noisy background (0.45-0.55) with the top-left
    quadrant bright (class 0: 0.8-1) or not (class 1: 0.3-0.5, so that every
    fill of this project, grey included, turns a removed quadrant into class 1).

    Why this background: on pure noise SLIC returns one superpixel (IROF, SRG
    would see no regions); on a dark one (0.1-0.2) the clamped perturbations of
    Infidelity have a non-zero mean there, and Infidelity's fit without
    intercept then prefers the reversed map (0.135 vs 0.154 at 400 Gaussian
    draws: it matches the mean response, not the evidence), a property of the
    metric, not of the order under test."""
    x = 0.45 + 0.1 * torch.rand(n, 3, SIZE, SIZE, generator=generator)
    q = 0.2 * torch.rand(n, 3, SIZE // 2, SIZE // 2, generator=generator)
    x[:, :, : SIZE // 2, : SIZE // 2] = 0.8 + q if bright else 0.3 + q
    return x


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    """(model checkpoint, assets, class-0 images, their targets, the quadrant map, the reversed map, the
    images' ground-truth masks: the quadrant, the evidence by construction). Every evaluator gets the masks;
    those that read them (EvaluatorSpec.needs_masks: localisation metrics) use them."""
    from fudbench.models.classifiers import build_classifier, load_classifier, save_classifier
    from fudbench.models.score import build_unet, save_score_model

    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    model = build_classifier({"arch": "small_cnn", "width": 8}, 2, SIZE, [0.5] * 3, [0.25] * 3)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(150):
        x = torch.cat([quadrant_images(16, True, g), quadrant_images(16, False, g)])
        y = torch.cat([torch.zeros(16), torch.ones(16)]).long()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    d = tmp_path_factory.mktemp("registry")
    save_classifier(d / "clf.pt", model.eval(), {"arch": "small_cnn", "width": 8}, 2, SIZE, {})
    score_cfg = {
        "block_out_channels": [8, 16],
        "attention": [False, True],
        "layers_per_block": 1,
        "num_train_timesteps": 100,
        "beta_schedule": "linear",
    }
    save_score_model(d / "score.pt", build_unet(score_cfg, SIZE), score_cfg, SIZE, {})
    reference = quadrant_images(8, True, g)
    np.savez(d / "train.npz", images=(reference.numpy() * 255).astype(np.uint8), labels=np.zeros(8, np.int64))
    model = load_classifier(d / "clf.pt")
    x = quadrant_images(N, True, g)
    y = torch.zeros(N, dtype=torch.long)
    assert (model(x).argmax(1) == 0).all(), "the task model must see the quadrant"
    inside = torch.zeros(1, 3, SIZE, SIZE)
    inside[:, :, : SIZE // 2, : SIZE // 2] = 1
    jitter = 1e-3 * torch.rand(N, 3, SIZE, SIZE, generator=g)  # no ties within either region
    assets = {"score_model": d / "score.pt", "surrogate": d / "clf.pt", "reference_images": d / "train.npz"}
    masks = inside[:, 0].expand(N, SIZE, SIZE).clone()
    return model, assets, x, y, inside + jitter, (1 - inside) + jitter, masks


class FixedMaps(Explainer):
    """A map that ignores model, input and class: the row of `maps` of each image id (given as its seed by
    ExplainAgain below). Robust by construction; fails every randomisation check."""

    def __init__(self, maps):
        self.maps = maps

    def explain(self, model, x, target, seeds=None):
        return self.maps[torch.as_tensor([int(s) for s in seeds])].to(x.device)


def _explainer(explainer) -> ExplainAgain:
    """The maps' explainer as an evaluator that explains again gets it; each image seeded by its id."""
    return ExplainAgain("test", explainer, {i: i for i in range(N)})


def _saliency(model, x, y):
    return build_explainer("sm", {}).explain(model, x, y).detach()


def _maps(method, task, good: bool):
    """(the maps, their explainer) of the direction test: the quadrant (good) or its reverse, except for
    the categories that explain again (the module's docstring)."""
    model, _, x, y, quadrant, reversed_, _ = task
    s = spec(method)
    category = s.category_of(s.resolve(_settings(method)))
    if category in (ROBUSTNESS, RANDOMISATION):
        fixed = good == (category == ROBUSTNESS)
        if fixed:
            return quadrant, _explainer(FixedMaps(quadrant))
        return _saliency(model, x, y), _explainer(build_explainer("sm", {}))
    attribution = quadrant if good else reversed_
    return attribution, _explainer(FixedMaps(attribution))


def _settings(method: str) -> dict:
    return dict(spec(method).quick)


def _scores(records: pd.DataFrame, method: str) -> pd.DataFrame:
    """Per-image and derived scores of the curves that have one."""
    s = spec(method)
    resolved = s.resolve(_settings(method))
    scored = {c.name for c in s.curves(resolved) if c.score is not None} | {c.name for c in s.derived_curves(resolved)}
    pi = per_image_scores(records)
    scores = pd.concat([pi, derived_scores(records, pi)], ignore_index=True)
    return scores[scores["curve"].isin(scored)].astype({"score": float})


def _run(method, task, image_ids, rows=slice(None), good=True):
    model, assets, x, y, quadrant, reversed_, masks = task
    assets = {k: v for k, v in assets.items() if k in spec(method).assets(spec(method).resolve(_settings(method)))}
    ev = build_evaluator(method, _settings(method), EVALUATION, assets, "cpu")
    attribution, explainer = _maps(method, task, good)
    records, samples = ev.run(
        model,
        x[rows],
        y[rows],
        attribution[rows],
        image_ids,
        (0, "evaluate", "task", method),
        masks=masks[rows],
        explainer=explainer,
    )
    return records.assign(model="task", explainer="quadrant" if good else "reversed"), samples


def test_every_registered_evaluator_declares_quick_settings_its_schema_accepts():
    for method in EVALUATORS:
        s = spec(method)
        unknown = set(s.quick) - set(s.resolve({}))
        assert not unknown, f"{method}.quick names unknown settings {unknown}"
        assert not s.check(s.quick, f"evaluators.{method}"), method


@pytest.mark.parametrize("method", list(EVALUATORS))
def test_records_samples_and_scores_follow_the_spec(method, task):
    records, samples = _run(method, task, list(range(N)))
    declared = configured_curves({method: _settings(method)})
    assert list(records.columns[:6]) == SHARED and list(records.columns[-7:-2]) == TAIL
    written = set(records["curve"])
    assert written <= set(declared), f"{method} writes undeclared curves {written - set(declared)}"
    kept = {name for name, c in declared.items() if c.keeps_samples}
    assert {k for k in samples if not k.startswith("removed_")} == kept
    for name in kept:
        arr, removed = samples[name], samples[f"removed_{name}"]
        assert arr.dtype == np.float16 and arr.shape[0] == N and arr.shape[2:] == (3, SIZE, SIZE)
        assert removed.shape in ((arr.shape[1],), (N, arr.shape[1])), (name, removed.shape)
    scores = _scores(records, method)
    assert len(scores), f"{method} scores no curve"
    for curve, g in scores.groupby("curve"):
        low, high = declared[curve].value_range
        assert len(g) == N and np.isfinite(g["score"]).all(), curve
        assert g["score"].between(low - 1e-6, high + 1e-6).all(), (curve, g["score"].tolist())


@pytest.mark.parametrize("method", list(EVALUATORS))
def test_where_the_shard_is_cut_changes_no_record(method, task):
    whole, _ = _run(method, task, list(range(N)))
    parts = [_run(method, task, ids, rows=slice(ids[0], ids[-1] + 1))[0] for ids in ([0, 1], [2, 3, 4, 5])]
    split = pd.concat(parts, ignore_index=True)
    key = ["curve", "image", "step"]
    a = whole.drop(columns="seconds").sort_values(key).reset_index(drop=True)
    b = split.drop(columns="seconds").sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("method", list(EVALUATORS))
def test_the_map_on_the_evidence_beats_its_reverse_in_the_declared_direction(method, task):
    declared = configured_curves({method: _settings(method)})
    means = {}
    for good in (True, False):
        means[good] = _scores(_run(method, task, list(range(N)), good=good)[0], method).groupby("curve")["score"].mean()
    wrong = []
    for curve in means[True].index:
        spec_, base = declared[curve], curve.split(ALIAS_SEPARATOR)[0]
        better = means[True][curve] - means[False][curve]
        if spec_.reference:
            if abs(better) > 1e-9:
                wrong.append(f"{base} is declared map-free (reference) but moves by {better:.4f}")
        elif not (better > 0 if spec_.higher_is_better else better < 0):
            wrong.append(
                f"{base}: quadrant {means[True][curve]:.4f} vs reversed {means[False][curve]:.4f} "
                f"({'higher' if spec_.higher_is_better else 'lower'} is better)"
            )
    assert not wrong, f"{method}: " + "; ".join(wrong)


@pytest.mark.parametrize("method", list(EVALUATORS))
def test_the_declared_reduction_is_the_one_that_acts(method, task):
    """A map of -0.5 on the quadrant and +0.5 elsewhere ranks the quadrant
    last under sum and ties it with the rest under abs_sum: an evaluator that
    declares FOLLOWS_EVALUATION must change with evaluation.reduction, any other
    must not (OWN_SETTING: its own setting). Not negative everywhere: Quantus
    refuses such maps."""
    from fudbench.evaluators.base import FOLLOWS_EVALUATION, OWN_SETTING

    model, assets, x, y, quadrant, _, masks = task
    s = spec(method)
    declared = s.reduction
    assert declared, f"{method} does not say which reduction it follows"
    if declared == OWN_SETTING:
        assert "reduction" in s.resolve({}), f"{method} declares its own reduction setting but has none"
    needed = s.assets(s.resolve(_settings(method)))
    records = []
    for reduction in ("abs_sum", "sum"):
        ev = build_evaluator(
            method,
            _settings(method),
            {**EVALUATION, "reduction": reduction},
            {k: v for k, v in assets.items() if k in needed},
            "cpu",
        )
        records.append(
            ev.run(
                model,
                x,
                y,
                0.5 - quadrant,
                list(range(N)),
                (0, "evaluate", "task", method),
                masks=masks,
                explainer=_explainer(build_explainer("sm", {})),
            )[0].drop(columns="seconds")
        )
    same = records[0].equals(records[1])
    assert same != (declared == FOLLOWS_EVALUATION), (
        f"{method} declares reduction {declared!r} but evaluation.reduction {'does not change' if same else 'changes'}"
        " its records"
    )
