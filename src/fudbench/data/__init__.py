"""Data: the synthetic benchmark, image folders, ImageNet, manifests and evaluation shards.

Floor 1: imports only fudbench.core."""

from fudbench.data.shards import load_eval_shard, n_shards, shard_slice  # noqa: F401
