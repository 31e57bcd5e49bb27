"""Data: the synthetic benchmark, manifests and evaluation shards."""
from fudbench.data.shards import load_eval_shard, n_shards, shard_slice  # noqa: F401
