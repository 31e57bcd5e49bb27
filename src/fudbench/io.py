"""Atomic file writes: a killed job never leaves a file that looks complete.

Every writer goes to a temporary name in the destination directory and is
renamed into place only after it was fully written and flushed.
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator

import numpy as np


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to `path`; rename it to `path` on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_text(path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_json(path, obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n")


def _json_default(o):
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def read_json(path) -> Any:
    return json.loads(Path(path).read_text())


def write_npz(path, **arrays) -> None:
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)


def load_npz(path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def write_parquet(path, frame) -> None:
    with atomic_path(path) as tmp:
        frame.to_parquet(tmp, index=False)


def write_csv(path, frame, **kwargs) -> None:
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, **kwargs)


def torch_save(path, obj) -> None:
    import torch

    with atomic_path(path) as tmp:
        torch.save(obj, tmp)


def save_figure(fig, paths) -> None:
    """Save a matplotlib figure to each path (format from the suffix)."""
    for p in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        p = Path(p)
        with atomic_path(p) as tmp:
            fig.savefig(tmp, format=p.suffix.lstrip("."), bbox_inches="tight")
