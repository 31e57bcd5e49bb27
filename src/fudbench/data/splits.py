"""Reading a stored split as tensors."""

from __future__ import annotations

import torch

from fudbench.core.io import load_npz


def load_split(path):
    """(images float32 in [0, 1] of shape N,3,H,W; labels int64; masks uint8)."""
    d = load_npz(path)
    images = torch.from_numpy(d["images"]).float().div_(255.0)
    return images, torch.from_numpy(d["labels"]), torch.from_numpy(d["masks"])
