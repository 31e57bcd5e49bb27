"""The example metric plug-in that docs/your_own.md uses (examples/your_own/my_metric.py, issue 58):
it loads by the path the docs give, scores maps whose answer is known, declares its category, and
runs through fudbench.evaluate and a config overlay as a researcher's own metric would. The workflow
runs it in tests/test_your_own.py::test_plugin_explainer_through_the_workflow_gives_the_api_scores
(its per-image scores equal fudbench.evaluate's there)."""

import math
import re

import numpy as np
import pytest
import torch
import yaml

import fudbench
from fudbench.config.files import REPO, resolve_config
from fudbench.config.validate import ConfigError, validate_config
from fudbench.evaluators import PLUGINS, spec

METHOD = "examples/your_own/my_metric.py:SPEC"  # relative: to the repository in the workflow, the cwd from Python


@pytest.fixture
def in_repo(monkeypatch):
    """From Python a relative plug-in path is the working directory's: the repository here."""
    monkeypatch.chdir(REPO)
    yield
    PLUGINS.pop(METHOD, None)


def _scores(example, maps, **settings):
    frame = fudbench.evaluate(
        example.model, example.images, example.targets, maps, metrics={"top_mass": {"method": METHOD, **settings}}
    )
    return frame.drop_duplicates("image")["score"].to_numpy()


def test_the_docs_use_the_shipped_example():
    docs = (REPO / "docs/your_own.md").read_text()
    assert f'"{METHOD}' in docs and (REPO / METHOD.split(":")[0]).is_file()


def test_it_declares_a_complexity_metric_and_its_direction(in_repo):
    s = spec(METHOD)
    settings = s.resolve({})
    (curve,) = s.curves(settings)
    assert s.category_of(settings) == "complexity" and not s.explainer_needed(settings)
    assert curve.higher_is_better and curve.value_range == (0.0, 1.0) and curve.label == "Top-10% mass"


def test_known_maps_score_what_the_docstring_says(in_repo):
    example = fudbench.load_example(n=4)
    pixels = 32 * 32
    floor = math.ceil(0.1 * pixels) / pixels  # k of the H x W pixels: 103 / 1024
    constant = torch.ones_like(example.images)
    np.testing.assert_allclose(_scores(example, constant), floor, rtol=1e-12)
    np.testing.assert_allclose(_scores(example, constant, fraction=0.5), 0.5, rtol=1e-12)
    one_pixel = torch.zeros(4, 1, 32, 32)
    one_pixel[:, 0, 5, 7] = -2.0  # negative mass counts: |value|
    np.testing.assert_allclose(_scores(example, one_pixel), 1.0, rtol=1e-12)
    assert np.isnan(_scores(example, torch.zeros(4, 1, 32, 32))).all()  # no mass: nothing to share
    # uniform noise: E[top tenth of U(0, 1)] / E[U(0, 1)] x 0.1 = 0.95 / 0.5 x 0.1 = 0.19 (1024 pixels: +- ~0.01)
    noise = torch.rand(4, 1, 32, 32, generator=torch.Generator().manual_seed(0))
    np.testing.assert_allclose(_scores(example, noise), 0.19, atol=0.015)
    # the object mask concentrates its mass on the object's pixels: between the floor and 1
    masked = _scores(example, example.masks)
    share = example.masks.flatten(1).mean(1).numpy()
    np.testing.assert_allclose(masked, np.minimum(1.0, floor / share), rtol=1e-6)


def test_a_config_overlay_names_it_and_its_settings_are_checked(in_repo, tmp_path):
    """An overlay over the template (config/your_own.yaml) adds the metric by its repository path:
    the config loads it when parsed and checks its settings by key; the estimate before a run
    prices it from the spec's cost."""
    from fudbench.workflow import cost

    overlay = tmp_path / "mine.yaml"
    overlay.write_text(yaml.safe_dump({"evaluators": {"top_mass": {"method": METHOD, "fraction": 0.1}}}))
    config = resolve_config([REPO / "config/your_own.yaml", overlay])
    assert list(config["evaluators"]) == ["insdel", "road", "irof", "sensn", "top_mass"]
    validate_config(config, REPO / "config/schema.yaml")
    row = {r.entry: r for r in cost.estimate(config, cores=2, bf16=True).rows}["top_mass"]
    assert row.passes.forwards == 1 and row.seconds > 0

    overlay.write_text(yaml.safe_dump({"evaluators": {"top_mass": {"method": METHOD, "fraction": 1.0}}}))
    with pytest.raises(ConfigError, match=re.escape("config key 'evaluators.top_mass.fraction': 1.0 is greater")):
        validate_config(resolve_config([REPO / "config/your_own.yaml", overlay]), REPO / "config/schema.yaml")
