"""Deterministic seeds derived from the global seed and a job's identity.

Each job derives its seed from (seed, model, explainer, evaluator, shard, ...),
so shards are independent and results do not depend on scheduling. Per-sample
seeds (image id, ratio) make batched results equal per-sample results.

Training seeds name the model (config entry), so two identical entries are
two training seeds of one model. Explain and evaluate noise names its
*seed group* instead (seed_groups: the first-listed of the identical
entries), so those seeds are compared under the same noise and their spread
is a training-seed effect; a model without a twin is its own group, and its
keys are what they were before groups existed (docs/architecture.md, "Seeds").
"""

from __future__ import annotations

import contextlib
import hashlib
import random

import numpy as np


def derive_seed(*keys) -> int:
    """A 63-bit seed from any sequence of printable keys (stable across runs). The first key is the
    run's seed: an integer, since keys are compared as text and 1.0 would draw other noise than 1
    (the config's integers are ints: fudbench.core.settings.schema_validator)."""
    if keys and isinstance(keys[0], (bool, float, np.floating)):
        raise TypeError(
            f"the seed {keys[0]!r} is not an integer: seed keys are text, so {keys[0]!r} would draw other noise "
            f"than an integer seed; give an int"
        )
    text = "\x1f".join(str(k) for k in keys)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") >> 1


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


@contextlib.contextmanager
def seeded(seed: int, device=None):
    """torch (CPU and the images' device), numpy and random seeded with `seed`, the
    callers' random states restored after: the libraries draw from all three
    (captum's GradientShap uses numpy), and one seed per image makes a batch give
    the per-image maps."""
    import torch

    devices = [device] if device is not None and torch.device(device).type == "cuda" else []
    np_state, py_state = np.random.get_state(), random.getstate()
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        np.random.seed(seed % 2**32)
        random.seed(seed)
        try:
            yield
        finally:
            np.random.set_state(np_state)
            random.setstate(py_state)


def torch_generator(seed: int, device="cpu"):
    import torch

    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g


def seed_groups(classifiers: dict) -> dict[str, str]:
    """{model: its seed group}: the first-listed classifier entry whose settings
    are identical to its own (itself if none is)."""
    from fudbench.core.fingerprint import SHIPPING_KEYS

    groups, seen = {}, []
    for name, settings in classifiers.items():
        settings = {k: v for k, v in settings.items() if k not in SHIPPING_KEYS}  # where weights come from
        groups[name] = next((n for n, s in seen if s == settings), name)
        seen.append((name, settings))
    return groups
