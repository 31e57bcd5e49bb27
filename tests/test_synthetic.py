import numpy as np

from fudbench.data.shards import load_eval_shard, n_shards, shard_slice
from fudbench.data.synthetic import SyntheticSpec, generate_split, make_benchmark
from fudbench.core.io import write_npz

SPEC = SyntheticSpec(32, ("circle", "square", "triangle", "cross"), 0.1, 0.9, (0.45, 0.75))


def test_deterministic_and_split_dependent():
    a = generate_split(SPEC, 16, seed=0, split="train")
    b = generate_split(SPEC, 16, seed=0, split="train")
    c = generate_split(SPEC, 16, seed=0, split="test")
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    assert not np.array_equal(a[0], c[0])


def test_balanced_classes_and_dark_light_pairs_differ_in_object_brightness():
    images, labels, masks = generate_split(SPEC, 160, seed=1, split="train")
    assert np.bincount(labels).tolist() == [20] * 8
    x = images.astype(float) / 255
    inside = np.array([x[i][:, masks[i] == 1].mean() for i in range(len(x))])
    outside = np.array([x[i][:, masks[i] == 0].mean() for i in range(len(x))])
    dark, light = labels % 2 == 0, labels % 2 == 1
    assert inside[dark].max() < 0.25 and inside[light].min() > 0.75
    assert outside.min() > 0.25 and outside.max() < 0.75
    # a dark/light pair has the same shape statistics: object areas are alike
    area = masks.reshape(len(masks), -1).mean(1)
    for shape in range(4):
        d, l = area[labels == 2 * shape], area[labels == 2 * shape + 1]
        assert abs(d.mean() - l.mean()) < 0.06
    assert masks.mean() > 0.1


def test_benchmark_eval_subset_and_shards(tmp_path):
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
    bench = make_benchmark(cfg, n_eval=7, seed=0)
    assert bench["class_names"] == ["dark_circle", "light_circle", "dark_square", "light_square"]
    ev = bench["splits"]["eval"]
    assert np.array_equal(ev["images"], bench["splits"]["test"]["images"][:7])
    write_npz(tmp_path / "eval.npz", **ev)
    assert n_shards(7, 3) == 3 and shard_slice(2, 7, 3) == slice(6, 7)
    shard = load_eval_shard(tmp_path / "eval.npz", 2, 3)
    assert shard["ids"].tolist() == [6] and shard["images"].dtype == np.float32
    assert 0 <= shard["images"].min() and shard["images"].max() <= 1
