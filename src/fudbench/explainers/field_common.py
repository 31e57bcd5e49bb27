"""Helpers shared by the adapters of the field's explainer libraries (captum, CAM, LRP)."""
from __future__ import annotations

import contextlib
import random

import numpy as np
import torch


def refuse_problems(settings, key: str) -> None:
    """Raise the settings' problems (the config's own checks) before any work: the
    adapters are also built directly, without a config."""
    problems = settings.problems(key)
    if problems:
        raise ValueError("; ".join(problems))


@contextlib.contextmanager
def seeded(seed: int, device: torch.device):
    """torch (CPU and the images' device), numpy and random seeded with `seed`, the
    callers' random states restored after: the libraries draw from all three
    (captum's GradientShap uses numpy), and one seed per image makes a batch give
    the per-image maps."""
    devices = [device] if device.type == "cuda" else []
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


def normalisation(model: torch.nn.Module):
    """(network, mean, std) of the workflow's classifiers (fudbench.models.classifiers.Classifier:
    normalisation inside, then `net`); (model, None, None) for any other model."""
    from fudbench.models.classifiers import Classifier

    if isinstance(model, Classifier):
        return model.net, model.normalize.mean, model.normalize.std
    return model, None, None
