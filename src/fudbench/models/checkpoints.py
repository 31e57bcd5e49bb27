"""Checkpoint loading with errors that say which file is wrong and what to do."""

from __future__ import annotations

from pathlib import Path


def load_checkpoint(path, kind: str) -> dict:
    import torch

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {path} does not exist; run the workflow rule that trains it")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # truncated or foreign file
        raise RuntimeError(
            f"checkpoint {path} could not be read ({type(exc).__name__}: {exc}); it is corrupt or "
            f"truncated: delete it and rerun the workflow to retrain it"
        ) from exc
    if not isinstance(ckpt, dict) or ckpt.get("kind") != kind:
        found = ckpt.get("kind") if isinstance(ckpt, dict) else type(ckpt).__name__
        raise RuntimeError(f"checkpoint {path} holds {found!r}, expected a {kind!r} checkpoint")
    return ckpt
