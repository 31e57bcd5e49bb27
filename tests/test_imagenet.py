"""The ImageNet sampler on stand-ins: a few generated JPEGs in each supported
layout (class folders, devkit ground truth + meta.mat, Kaggle LOC csv)."""

import logging

import numpy as np
import pytest
import scipy.io
from PIL import Image

from fudbench.data.imagenet import (
    CorruptImageError,
    ImageNetLayoutError,
    build_eval_set,
    eval_arrays,
    index_imagenet,
    load_rgb,
    preprocess,
    sample_eval_set,
)

# Three real WordNet ids (sorted: class 0, 1, 2) and devkit ILSVRC2012_IDs in another order.
WNIDS = ["n01440764", "n01443537", "n01484850"]
NAMES = ["tench", "goldfish", "great white shark"]
ILSVRC_ID = {"n01484850": 1, "n01440764": 2, "n01443537": 3}
LABELS = [0, 1, 2, 0, 1, 2, 1, 0, 2]  # class of ILSVRC2012_val_0000000{i+1}
MODES = ["RGB"] * 7 + ["L", "CMYK"]  # ImageNet's validation set has both


def _image(i, mode):
    rng = np.random.default_rng(i)
    w, h = (50 + 3 * i, 40 + 2 * i) if i % 2 else (40 + i, 56)
    arr = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    img = Image.fromarray(arr)
    return img.convert(mode) if mode != "RGB" else img


def _name(i):
    return f"ILSVRC2012_val_{i + 1:08d}.JPEG"


def _write_synsets(path):
    path.write_text("".join(f"{w} {n}, other name\n" for w, n in zip(WNIDS, NAMES)))
    return path


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    """The same 9 images in the three layouts, with their label files."""
    base = tmp_path_factory.mktemp("imagenet")
    images = [_image(i, m) for i, m in enumerate(MODES)]
    folders, flat = base / "folders", base / "flat"
    flat.mkdir()
    for i, (img, y) in enumerate(zip(images, LABELS)):
        (folders / WNIDS[y]).mkdir(parents=True, exist_ok=True)
        img.save(folders / WNIDS[y] / _name(i), quality=95)
        img.save(flat / _name(i), quality=95)
    devkit = base / "devkit" / "data"
    devkit.mkdir(parents=True)
    (devkit / "ILSVRC2012_validation_ground_truth.txt").write_text("".join(f"{ILSVRC_ID[WNIDS[y]]}\n" for y in LABELS))
    synsets = np.zeros(4, dtype=[("ILSVRC2012_ID", "O"), ("WNID", "O"), ("words", "O"), ("num_children", "O")])
    for k, w in enumerate(WNIDS):
        synsets[k] = (ILSVRC_ID[w], w, f"{NAMES[k]}, x", 0)
    synsets[3] = (4, "n00001740", "entity", 2)  # an inner node of the hierarchy: not a class
    scipy.io.savemat(devkit / "meta.mat", {"synsets": synsets})
    loc = base / "loc"
    loc.mkdir()
    (loc / "LOC_val_solution.csv").write_text(
        "ImageId,PredictionString\n"
        + "".join(f"{_name(i)[:-5]},{WNIDS[y]} 1 2 30 40 {WNIDS[y]} 3 4 20 30\n" for i, y in enumerate(LABELS))
    )
    _write_synsets(loc / "LOC_synset_mapping.txt")
    return {"base": base, "folders": folders, "flat": flat, "devkit": devkit, "loc": loc}


def _configs(L):
    return {
        "folders": dict(root=L["folders"], synsets=_write_synsets(L["base"] / "synsets.txt")),
        "devkit": dict(root=L["flat"], labels=L["devkit"] / "ILSVRC2012_validation_ground_truth.txt"),
        "devkit_dir": dict(root=L["flat"], labels=L["devkit"].parent),
        "loc": dict(root=L["flat"], labels=L["loc"] / "LOC_val_solution.csv"),
    }


@pytest.mark.parametrize("layout", ["folders", "devkit", "devkit_dir", "loc"])
def test_each_layout_gives_the_same_classes(layouts, layout):
    index = index_imagenet(**_configs(layouts)[layout], n_classes=3)
    assert index.layout == layout.split("_")[0]
    assert index.wnids == WNIDS and index.class_names == NAMES
    assert [e.path.name for e in index.entries] == [_name(i) for i in range(9)]
    assert [e.label for e in index.entries] == LABELS  # torchvision order (sorted ids), not ILSVRC2012_ID


def test_sample_is_seeded_and_layout_independent(layouts):
    samples = {
        k: sample_eval_set(index_imagenet(**c, n_classes=3), 5, seed=3407, resize=40, crop=32)
        for k, c in _configs(layouts).items()
    }
    ref = samples["folders"]
    assert ref["images"].shape == (5, 3, 32, 32) and ref["images"].dtype == np.uint8
    for s in samples.values():
        assert [r["file"].split("/")[-1] for r in s["manifest"]] == [r["file"].split("/")[-1] for r in ref["manifest"]]
        np.testing.assert_array_equal(s["labels"], ref["labels"])
        np.testing.assert_array_equal(s["images"], ref["images"])
    other = sample_eval_set(index_imagenet(**_configs(layouts)["loc"], n_classes=3), 5, seed=0, resize=40, crop=32)
    assert [r["file"] for r in other["manifest"]] != [r["file"] for r in samples["loc"]["manifest"]]
    # a prefix of a larger draw is the smaller draw
    bigger = sample_eval_set(index_imagenet(**_configs(layouts)["loc"], n_classes=3), 7, seed=3407, resize=40, crop=32)
    assert [r["file"] for r in bigger["manifest"][:5]] == [r["file"] for r in samples["loc"]["manifest"]]
    row = ref["manifest"][0]
    assert set(row) >= {"id", "file", "wnid", "label", "class_name"} and row["class_name"] == NAMES[row["label"]]


def test_grayscale_and_cmyk_are_converted_and_counted(layouts, caplog):
    index = index_imagenet(**_configs(layouts)["loc"], n_classes=3)
    with caplog.at_level(logging.INFO, logger="fudbench.data.imagenet"):
        s = sample_eval_set(index, 9, seed=1, resize=40, crop=32)
    assert s["stats"]["modes"] == {"RGB": 7, "L": 1, "CMYK": 1} and s["stats"]["converted_to_rgb"] == 2
    assert "converted" in caplog.text and "CMYK" in caplog.text and "'L': 1" in caplog.text
    gray = next(i for i, r in enumerate(s["manifest"]) if r["mode"] == "L")
    assert np.array_equal(s["images"][gray][0], s["images"][gray][1])  # grey replicated to 3 channels


def test_preprocessing_equals_torchvision_transform(tmp_path):
    from torchvision.models import ResNet50_Weights

    _image(3, "RGB").resize((300, 261)).save(tmp_path / "a.JPEG", quality=90)
    img, _ = load_rgb(tmp_path / "a.JPEG")
    ours = preprocess(img, 256, 224).astype(np.float32) / 255
    ref = ResNet50_Weights.IMAGENET1K_V1.transforms()(img)  # normalised: undo it
    mean, std = np.array([0.485, 0.456, 0.406])[:, None, None], np.array([0.229, 0.224, 0.225])[:, None, None]
    np.testing.assert_allclose(ours, ref.numpy() * std + mean, atol=1e-5)


@pytest.fixture
def with_corrupt(layouts, tmp_path):
    root = tmp_path / "flat"
    root.mkdir()
    for p in layouts["flat"].iterdir():
        (root / p.name).write_bytes(p.read_bytes())
    data = (root / _name(4)).read_bytes()
    (root / _name(4)).write_bytes(data[: len(data) // 3])  # truncated download
    return dict(root=root, labels=layouts["loc"] / "LOC_val_solution.csv")


def test_corrupt_jpeg_is_an_error_naming_the_file(with_corrupt):
    index = index_imagenet(**with_corrupt, n_classes=3)
    with pytest.raises(CorruptImageError, match=rf"{_name(4)}: cannot decode.*on_corrupt: replace"):
        sample_eval_set(index, 9, seed=0, resize=40, crop=32)


def test_corrupt_jpeg_replaced_and_reported(with_corrupt, caplog):
    index = index_imagenet(**with_corrupt, n_classes=3)
    with caplog.at_level(logging.WARNING, logger="fudbench.data.imagenet"):
        s = sample_eval_set(index, 8, seed=0, resize=40, crop=32, on_corrupt="replace")
    assert len(s["manifest"]) == 8 and _name(4) not in [r["file"] for r in s["manifest"]]
    assert [p.split("/")[-1] for p in s["stats"]["skipped"]] == [_name(4)]
    assert _name(4) in caplog.text
    with pytest.raises(ImageNetLayoutError, match="only 8 of the 9 images"):
        sample_eval_set(index, 9, seed=0, resize=40, crop=32, on_corrupt="replace")


def test_missing_and_empty_directories(tmp_path):
    with pytest.raises(ImageNetLayoutError, match=r"nope does not exist.*data\.imagenet\.root"):
        index_imagenet(tmp_path / "nope")
    with pytest.raises(ImageNetLayoutError, match=r"is empty.*data\.imagenet\.root"):
        index_imagenet(tmp_path)
    with pytest.raises(ImageNetLayoutError, match=r"'data\.imagenet\.root' is not set"):
        index_imagenet(None)


def test_wrong_layouts_are_explained(layouts, tmp_path):
    with pytest.raises(ImageNetLayoutError, match=r"holds 9 images directly but no labels file"):
        index_imagenet(layouts["flat"])
    with pytest.raises(ImageNetLayoutError, match=r"has 3 class folders, expected 1000.*synsets"):
        index_imagenet(layouts["folders"])
    (tmp_path / "train").mkdir()
    (tmp_path / "val").mkdir()
    with pytest.raises(ImageNetLayoutError, match=r"one folder per WordNet id.*found train, val"):
        index_imagenet(tmp_path)
    gt = tmp_path / "gt" / "ILSVRC2012_validation_ground_truth.txt"
    gt.parent.mkdir()
    gt.write_text("1\n")
    with pytest.raises(ImageNetLayoutError, match=r"need the devkit's meta\.mat.*data\.imagenet\.synsets"):
        index_imagenet(layouts["flat"], labels=gt, n_classes=3)
    with pytest.raises(ImageNetLayoutError, match=r"layout 'devkit' expects a flat folder"):
        index_imagenet(
            layouts["folders"],
            layout="devkit",
            labels=layouts["devkit"] / "ILSVRC2012_validation_ground_truth.txt",
            n_classes=3,
        )
    with pytest.raises(ImageNetLayoutError, match=r"'data\.imagenet\.labels'.*missing\.csv does not exist"):
        index_imagenet(layouts["flat"], labels=tmp_path / "missing.csv")
    with pytest.raises(ImageNetLayoutError, match=r"'data\.n_eval': 20 images requested.*only 9"):
        sample_eval_set(index_imagenet(**_configs(layouts)["loc"], n_classes=3), 20, seed=0)


def test_build_eval_set_arrays(layouts):
    cfg = {
        "root": layouts["flat"],
        "labels": layouts["loc"] / "LOC_val_solution.csv",
        "layout": "auto",
        "seed": 3407,
        "resize": 40,
        "crop": 32,
    }
    out = build_eval_set(cfg, 4, n_classes=3)
    arrays = eval_arrays(out)
    assert arrays["masks"].shape == (4, 32, 32) and not arrays["masks"].any() and not arrays["has_masks"]
    assert out["class_names"] == NAMES
