"""Helpers shared by the adapters of the field's explainer libraries (captum, CAM, LRP)."""

from __future__ import annotations

import torch


def refuse_problems(settings, key: str) -> None:
    """Raise the settings' problems (the config's own checks) before any work: the
    adapters are also built directly, without a config."""
    problems = settings.problems(key)
    if problems:
        raise ValueError("; ".join(problems))


def normalisation(model: torch.nn.Module):
    """(network, mean, std) of the workflow's classifiers (fudbench.models.classifiers.Classifier:
    normalisation inside, then `net`); (model, None, None) for any other model."""
    from fudbench.models.classifiers import Classifier

    if isinstance(model, Classifier):
        return model.net, model.normalize.mean, model.normalize.std
    return model, None, None
