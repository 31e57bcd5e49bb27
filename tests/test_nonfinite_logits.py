"""A classifier whose logits are NaN or inf is refused at the
accuracy gate with an error naming it (and its factory), not passed as the share
of class-0 labels (argmax of NaN is 0); the explain job and fudbench.explain put
NaN maps down to the model, not to the explainer. Every test fails on 6c8cba0."""

import json
import logging
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from fudbench.data.synthetic import make_benchmark
from fudbench.core.io import write_npz
from fudbench.models.classifiers import build_classifier, save_classifier
from fudbench.models.gate import NonFiniteLogitsError
from fudbench.models.training import accuracy
from fudbench.workflow.pipeline import explain_shard, report_degenerate_maps

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_paper_profile import _run_script  # noqa: E402  (runs a job script as Snakemake would)


class NaNOn(torch.nn.Module):
    """Two logits; NaN (or inf) on the images whose mean brightness exceeds `above`."""

    def __init__(self, above=-1.0, value=float("nan")):
        super().__init__()
        self.above, self.value, self.w = above, value, torch.nn.Parameter(torch.zeros(1))

    def forward(self, x):
        s = x.mean((1, 2, 3)) + self.w
        out = torch.stack([s, -s], 1)
        return torch.where((x.mean((1, 2, 3)) > self.above)[:, None], torch.full_like(out, self.value), out)


def test_nan_logits_fail_the_gate_naming_the_model():
    """6c8cba0: accuracy 1.0 here (every label 0 = argmax of NaN)."""
    x, y = torch.rand(6, 3, 8, 8), torch.zeros(6, dtype=torch.long)
    with pytest.raises(
        NonFiniteLogitsError,
        match=r"classifier 'mine' \(factory f.py:build\) returns NaN or inf "
        r"logits on 6 of 6 images \(positions 0, 1, 2, 3, 4, 5\).*"
        r"check the factory",
    ):
        accuracy(NaNOn(), x, y, name="classifier 'mine' (factory f.py:build)", fix="check the factory")
    x[:3] = 0  # dark: finite; bright: inf
    with pytest.raises(NonFiniteLogitsError, match=r"on 3 of 6 images \(positions 3, 4, 5\)"):
        accuracy(NaNOn(0.1, float("inf")), x, y, batch_size=4)
    # the training loop's validation counts them as wrong (a diverged epoch is not kept)
    assert accuracy(NaNOn(0.1), x, y, nonfinite="wrong") == 0.5


@pytest.fixture
def nan_factory(tmp_path, monkeypatch):
    (tmp_path / "nan_models.py").write_text(
        textwrap.dedent('''
        import torch
        from torch import nn

        class Broken(nn.Module):
            def __init__(self, n_classes=4):
                super().__init__()
                self.lin = nn.Linear(3, n_classes)

            def forward(self, x):
                return self.lin(x.mean((2, 3))) * float("nan")

        def build(n_classes=4):
            return Broken(n_classes)
    ''')
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "nan_models", raising=False)
    return tmp_path / "nan_models.py"


def test_prepare_classifier_refuses_a_factory_with_nan_logits(repo, tmp_path, nan_factory):
    """The your-own-model path: the factory's NaN logits stop the job, naming model and factory."""
    root = tmp_path / "images"
    root.mkdir()
    for i in range(4):
        Image.fromarray(np.full((16, 16, 3), 60 * i, np.uint8)).save(root / f"{i}.png")
    (tmp_path / "labels.csv").write_text("file,label\n" + "".join(f"{i}.png,0\n" for i in range(4)))
    folder = {"root": str(root), "labels": str(tmp_path / "labels.csv"), "resize": 16, "crop": 16}
    out = {
        k: str(tmp_path / "res" / f"{k}.{ext}")
        for k, ext in [
            ("eval", "npz"),
            ("classes", "json"),
            ("manifest", "csv"),
            ("examples", "npz"),
            ("summary", "json"),
        ]
    }
    _run_script(repo, "prepare_folder.py", tmp_path, params={"folder": folder, "n_eval": 4}, output=out)
    models = {"model": str(tmp_path / "res/mine.pt"), "metrics": str(tmp_path / "res/mine_metrics.json")}
    clf = {
        "arch": "import",
        "factory": f"{nan_factory}:build",
        "kwargs": {"n_classes": 4},
        "weights": None,
        "mean": [0.5] * 3,
        "std": [0.25] * 3,
    }
    gates = {"min_test_accuracy": 0.0, "strict": False, "n_samples": 2, "sample_steps": 2}
    with pytest.raises(
        SystemExit,
        match=rf"\[gate\] classifier 'mine' \(factory {nan_factory}:build\) returns "
        r"NaN or inf logits on 4 of 4 images .*models\.classifiers\.mine",
    ):
        _run_script(
            repo,
            "prepare_classifier.py",
            tmp_path,
            wildcards={"model": "mine"},
            input={"images": out["eval"]},
            output=models,
            params={"classifier": clf, "gates": gates, "job": {"seed": 0, "device": "cpu"}},
        )
    assert not Path(models["model"]).exists() and not Path(models["metrics"]).exists()


@pytest.fixture(scope="module")
def nan_assets(tmp_path_factory):
    d = tmp_path_factory.mktemp("nan_assets")
    cfg = {
        "image_size": 16,
        "shapes": ["circle", "square"],
        "dark": 0.1,
        "light": 0.9,
        "object_scale": [0.5, 0.8],
        "n_train": 4,
        "n_val": 4,
        "n_test": 8,
    }
    write_npz(d / "eval.npz", **make_benchmark(cfg, n_eval=4, seed=0)["splits"]["eval"])
    clf_cfg = {"arch": "small_cnn", "width": 4}
    torch.manual_seed(0)
    model = build_classifier(clf_cfg, 4, 16, [0.5] * 3, [0.25] * 3)
    with torch.no_grad():
        next(p for n, p in model.named_parameters() if n.endswith("bias")).fill_(float("nan"))
    save_classifier(d / "nan.pt", model, clf_cfg, 4, 16, {})
    return d


@pytest.mark.parametrize("target_mode", ["predicted", "label"])
def test_explain_job_names_the_model_not_the_explainer(nan_assets, target_mode, caplog):
    """6c8cba0: the job wrote NaN maps and warned `ig: 4 degenerate map(s) (non-finite)`."""
    with (
        caplog.at_level(logging.WARNING),
        pytest.raises(
            NonFiniteLogitsError,
            match=r"the classifier \S+nan\.pt returns NaN or inf logits on 4 of 4 images "
            r"\(image ids 0, 1, 2, 3\)",
        ),
    ):
        explain_shard(
            nan_assets / "nan.pt",
            nan_assets / "eval.npz",
            0,
            4,
            "ig",
            {"n_steps": 2},
            target_mode,
            (0, "explain", "nan", "ig"),
            "cpu",
        )
    assert "degenerate" not in caplog.text


def test_degenerate_map_warning_blames_the_model_when_its_logits_are_nan(caplog):
    with caplog.at_level(logging.WARNING):
        counts = report_degenerate_maps(
            "ig", ["non-finite", "non-finite", "zero", ""], [10, 11, 12, 13], model_nonfinite=[10, 11]
        )
    assert counts["non-finite"] == 2
    assert "ig: 1 degenerate map(s) (zero) for image id(s) [12]" in caplog.text
    assert (
        "the model's logits are NaN or inf on image id(s) [10, 11]: their ig maps are not the explainer's"
        in caplog.text
    )
    assert "(non-finite)" not in caplog.text


def test_api_explain_warning_names_the_model(caplog):
    import fudbench

    x = torch.rand(3, 3, 8, 8)
    x[0] = 0  # dark: finite logits
    with caplog.at_level(logging.WARNING):
        fudbench.explain(NaNOn(0.1), x, torch.zeros(3, dtype=torch.long), "sm")
    assert "the model's logits are NaN or inf on image id(s) [1, 2]" in caplog.text
    assert "sm: 2 degenerate map(s) (non-finite)" not in caplog.text


def test_train_classifier_keeps_finite_weights_and_gate_refuses_a_diverged_one(repo, tmp_path):
    """A classifier trained into NaN is refused at its gate, naming it and the learning rate."""
    cfg = {
        "image_size": 8,
        "shapes": ["circle", "square"],
        "dark": 0.1,
        "light": 0.9,
        "object_scale": [0.5, 0.8],
        "n_train": 8,
        "n_val": 4,
        "n_test": 4,
    }
    bench = make_benchmark(cfg, n_eval=4, seed=0)
    paths = {}
    for split in ("train", "val", "test"):
        paths[split] = str(tmp_path / f"{split}.npz")
        write_npz(paths[split], **bench["splits"][split])
    (tmp_path / "classes.json").write_text(json.dumps(bench.get("class_names", ["a", "b", "c", "d"])))
    clf = {"arch": "small_cnn", "width": 4, "train": {"lr": 1e30, "weight_decay": 0.0, "batch_size": 4, "epochs": 1}}
    gates = {"min_test_accuracy": 0.0, "strict": False}
    out = {"model": str(tmp_path / "m.pt"), "metrics": str(tmp_path / "m.json")}
    with pytest.raises(
        SystemExit,
        match=r"\[gate\] the trained classifier 'cnn' returns NaN or inf logits .*"
        r"lower models\.classifiers\.cnn\.train\.lr",
    ):
        _run_script(
            repo,
            "train_classifier.py",
            tmp_path,
            wildcards={"model": "cnn"},
            input={**paths, "classes": str(tmp_path / "classes.json")},
            output=out,
            params={"classifier": clf, "gates": gates, "job": {"seed": 0, "device": "cpu"}},
        )
