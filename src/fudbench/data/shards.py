"""Evaluation shards: consecutive blocks of the evaluated images.

The shard layout is a pure function of (n_eval, shard_size), so the DAG knows
its jobs at parse time without reading any checkpoint.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from fudbench.core.io import load_npz


def n_shards(n_eval: int, shard_size: int) -> int:
    if shard_size < 1:
        raise ValueError(f"config key 'data.shard_size': must be >= 1, got {shard_size}")
    return math.ceil(n_eval / shard_size)


def shard_slice(shard: int, n_eval: int, shard_size: int) -> slice:
    if not 0 <= shard < n_shards(n_eval, shard_size):
        raise IndexError(f"shard {shard} out of range for n_eval={n_eval}, shard_size={shard_size}")
    return slice(shard * shard_size, min((shard + 1) * shard_size, n_eval))


def load_eval_shard(eval_npz: str | Path, shard: int, shard_size: int):
    """Images (float32 in [0,1]), labels, masks and global ids of one shard.
    has_masks is False where the data set has no object masks (ImageNet: masks are zeros)."""
    data = load_npz(eval_npz)
    n_eval = len(data["labels"])
    sl = shard_slice(shard, n_eval, shard_size)
    images = data["images"][sl].astype(np.float32) / 255.0
    return {
        "images": images,
        "labels": data["labels"][sl],
        "masks": data["masks"][sl],
        "ids": np.arange(n_eval)[sl],
        "has_masks": bool(data.get("has_masks", True)),
    }
