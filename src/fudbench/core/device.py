"""Device selection with a clear error when CUDA is asked for but absent."""

from __future__ import annotations


def resolve_device(name: str):
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            "config key 'device': 'cuda' was requested but no CUDA GPU is visible to "
            "torch; set device: cpu (or auto), or run on a GPU node"
        )
    return torch.device(name)


def describe_device(device) -> str:
    """A human-readable device name for tables that report timings."""
    import os

    import torch

    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"CPU ({torch.get_num_threads()} threads of {os.cpu_count()} cores)"
