"""fudbench.load_example() (issue 58): the default run's shipped classifier and evaluated images,
offline, ready for fudbench.explain / fudbench.evaluate without loading anything by hand."""

import pytest
import torch

import fudbench
from fudbench.config.files import REPO, resolve_config
from fudbench.core.checks import InputError
from fudbench.data.synthetic import make_benchmark
from fudbench.models.classifiers import load_classifier


@pytest.fixture(scope="module")
def example():
    return fudbench.load_example()


def test_the_example_is_the_default_runs_model_and_evaluated_images(example):
    config = resolve_config([])
    n = config["data"]["n_eval"]
    # the images, labels and masks the workflow's make_dataset job writes (the test split does not
    # depend on the training split's size, so a small one keeps this quick)
    synthetic = {**config["data"]["synthetic"], "n_train": 8, "n_val": 8}
    benchmark = make_benchmark(synthetic, n, config["seed"])
    evaluated = benchmark["splits"]["eval"]
    assert example.images.dtype == torch.float32 and example.images.shape == (n, 3, 32, 32)
    assert torch.equal(example.images, torch.from_numpy(evaluated["images"]).float() / 255)
    assert torch.equal(example.labels, torch.from_numpy(evaluated["labels"]))
    assert torch.equal(example.masks, torch.from_numpy(evaluated["masks"]).float())
    assert example.ids == list(range(n)) and example.seed == config["seed"] and example.model_name == "cnn"
    assert example.class_names == list(benchmark["class_names"])
    shipped = load_classifier(REPO / config["models"]["classifiers"]["cnn"]["shipped"])
    with torch.no_grad():
        torch.testing.assert_close(example.model(example.images), shipped(example.images))
    # the default run explains the predicted class (config `target`); the shipped model gets these right
    assert config["target"] == "predicted"
    assert torch.equal(example.targets, shipped(example.images).argmax(1))
    assert (example.targets == example.labels).float().mean() >= 0.75
    assert example.assets == {
        "score_model": str(REPO / config["models"]["score_model"]["shipped"]),
        "surrogate": str(REPO / config["models"]["classifiers"]["cnn"]["shipped_surrogate"]),
    }


def test_the_example_goes_straight_into_explain_and_evaluate(example):
    ex = example
    maps = fudbench.explain(ex.model, ex.images[:4], ex.targets[:4], "sm")
    frame = fudbench.evaluate(
        ex.model,
        ex.images[:4],
        ex.targets[:4],
        maps,
        metrics=["insdel", "rma"],
        masks=ex.masks[:4],
        image_ids=ex.ids[:4],
        seed=ex.seed,
        model_name=ex.model_name,
    )
    scores = frame.dropna(subset=["score"]).drop_duplicates(["curve", "image"]).groupby("curve")["score"].mean()
    assert {"insertion", "deletion", "rma"} <= set(scores.index)
    # the object mask as a map puts all its mass inside the object
    oracle = fudbench.evaluate(
        ex.model, ex.images[:4], ex.targets[:4], ex.masks[:4], metrics=["rma"], masks=ex.masks[:4]
    )
    assert oracle.drop_duplicates("image")["score"].tolist() == [1.0] * 4


def test_the_other_shipped_model_and_more_images_and_bad_arguments():
    vit = fudbench.load_example("vit", n=12)
    assert vit.model_name == "vit" and len(vit.images) == 12 and vit.ids == list(range(12))
    assert vit.assets["surrogate"].endswith("surrogate_synthetic_vit.pt")
    with pytest.raises(
        InputError, match=r"model must be one of the default run's shipped classifiers \['cnn', 'vit'\]"
    ):
        fudbench.load_example("resnet")
    with pytest.raises(InputError, match=r"n must be an integer in \[1, 400\]"):
        fudbench.load_example(n=401)
    with pytest.raises(InputError, match=r"n must be an integer"):
        fudbench.load_example(n=2.5)


def test_the_docs_python_snippet_uses_the_example_as_it_is():
    """docs/your_own.md, "From Python": the snippet parses, and every field it reads is the Example's."""
    import ast
    import dataclasses
    import re

    docs = (REPO / "docs/your_own.md").read_text()
    snippet = re.search(r"## From Python\n\n```python\n(.*?)```", docs, re.S).group(1)
    tree = ast.parse(snippet)
    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and getattr(n.value, "id", "") == "ex"}
    fields = {f.name for f in dataclasses.fields(fudbench.Example)}
    assert "fudbench.load_example()" in snippet and used and used <= fields, used - fields
