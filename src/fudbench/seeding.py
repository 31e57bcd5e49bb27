"""Deterministic seeds derived from the global seed and a job's identity.

Each job derives its seed from (seed, model, explainer, evaluator, shard, ...),
so shards are independent and results do not depend on scheduling. Per-sample
seeds (image id, ratio) make batched results equal per-sample results.
"""
from __future__ import annotations

import hashlib
import random

import numpy as np


def derive_seed(*keys) -> int:
    """A 63-bit seed from any sequence of printable keys (stable across runs)."""
    text = "\x1f".join(str(k) for k in keys)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") >> 1


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def torch_generator(seed: int, device="cpu"):
    import torch

    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g
