"""F-Fidelity's surrogate (seeds/004, Sec. 3): a copy of the classifier fine-tuned
on images with a random fraction in [0, beta] of their pixels removed, so
that the removals of the F-Fidelity evaluation (at most beta * H*W pixels)
stay inside what the evaluated model has seen.

"Removed" means zero in the classifier's normalised input space, i.e. the
dataset mean (the wrapper's normalisation mean) in [0, 1] space, on all three
channels. The reference implementation zeroes only channel 0; that is a bug
and is not reproduced.

Randomness (shuffling, removal fractions, removed pixels, augmentation) comes
from one CPU generator seeded with `seed`, so the result is deterministic.
"""

from __future__ import annotations

import copy
import logging
import math

import numpy as np
import torch
import torch.nn.functional as F
from fudbench.core.bars import progress as progress_bar

from fudbench.models.training import _augment, accuracy
from fudbench.core.seeding import seed_everything, torch_generator

log = logging.getLogger(__name__)


def removal_value(model) -> torch.Tensor:
    """(1, C, 1, 1) value a removed pixel takes in [0, 1] space: the classifier's
    normalisation mean (0 after normalisation)."""
    norm = getattr(model, "normalize", None)
    if norm is None or not hasattr(norm, "mean"):
        raise TypeError(
            f"{type(model).__name__} has no `normalize.mean`: F-Fidelity removes pixels to the "
            f"dataset mean, which it reads from the classifier wrapper (fudbench.models.classifiers)"
        )
    return norm.mean


def max_removed(beta: float, n_pixels: int) -> int:
    """The cap on removed pixels shared by fine-tuning and evaluation: floor(beta * H*W)."""
    return int(math.floor(beta * n_pixels + 1e-9))


def random_removal_masks(n: int, h: int, w: int, beta: float, g: torch.Generator) -> torch.Tensor:
    """(n, 1, h, w) keep-masks (1 = keep): each image loses round(r * H*W) uniformly
    chosen pixels, r ~ U[0, beta] per image, never more than max_removed(beta, H*W)."""
    total = h * w
    counts = torch.clamp(torch.round(torch.rand(n, generator=g) * beta * total).long(), max=max_removed(beta, total))
    # the `count` pixels with the smallest uniform keys are a uniform random subset
    ranks = torch.rand(n, total, generator=g).argsort(1).argsort(1)
    return (ranks >= counts.view(-1, 1)).float().view(n, 1, h, w)


def remove_pixels(x: torch.Tensor, keep: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    return torch.where(keep.bool(), x, value.to(x.dtype).expand_as(x))


def finetune_surrogate(
    classifier,
    train_x: torch.Tensor,
    train_y: torch.Tensor,
    beta: float,
    epochs: int,
    lr: float,
    batch_size: int,
    seed: int,
    weight_decay: float = 0.0,
    device="cpu",
) -> tuple[torch.nn.Module, dict]:
    """Fine-tune a copy of `classifier` (left untouched) with random pixel removal.

    Adam at a constant learning rate (the seed paper fine-tunes with the
    training hyperparameters: Adam, lr and weight decay 1e-4 for its ResNet),
    cross-entropy on the labels, the same flips / 90-degree turns as the
    classifier's training. Returns (frozen copy in eval mode, {"history": ...}).
    """
    if not 0.0 < beta < 1.0:
        raise ValueError(f"evaluators.ffid.beta must be in (0, 1), got {beta}")
    if epochs < 1 or batch_size < 1 or lr <= 0:
        raise ValueError(
            f"evaluators.ffid.finetune needs epochs >= 1, batch_size >= 1, lr > 0; "
            f"got epochs={epochs}, batch_size={batch_size}, lr={lr}"
        )
    if len(train_x) != len(train_y) or len(train_x) == 0:
        raise ValueError(
            f"surrogate fine-tuning needs as many labels as images (got {len(train_x)} images, {len(train_y)} labels)"
        )
    seed_everything(seed)
    g = torch_generator(seed)
    model = copy.deepcopy(classifier).to(device).requires_grad_(True)
    value = removal_value(model).detach()
    _, _, h, w = train_x.shape
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    history = []
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(train_x), generator=g)
        losses = []
        for i in progress_bar(range(0, len(perm), batch_size), desc=f"surrogate {epoch + 1}/{epochs}", mininterval=5):
            idx = perm[i : i + batch_size]
            keep = random_removal_masks(len(idx), h, w, beta, g)
            x = remove_pixels(_augment(train_x[idx], g), keep, value.cpu()).to(device)
            loss = F.cross_entropy(model(x), train_y[idx].to(device))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        history.append({"epoch": epoch + 1, "loss": float(np.mean(losses))})
        log.info("surrogate epoch %d: loss %.4f", epoch + 1, history[-1]["loss"])
    model.eval().requires_grad_(False)
    return model, {"history": history}


@torch.no_grad()
def masked_accuracy(
    model, images: torch.Tensor, labels: torch.Tensor, beta: float, seed: int, batch_size: int = 256
) -> float:
    """Accuracy when each image loses a random fraction in [0, beta] of its pixels
    (the robustness the fine-tuning is for; seeds/004 Table 8)."""
    g = torch_generator(seed)
    _, _, h, w = images.shape
    value = removal_value(model).cpu()
    keep = random_removal_masks(len(images), h, w, beta, g)
    device = next(model.parameters()).device
    return accuracy(model, remove_pixels(images, keep, value).to(device), labels.to(device), batch_size)


@torch.no_grad()
def surrogate_report(original, surrogate, images: torch.Tensor, labels: torch.Tensor, beta: float, seed: int) -> dict:
    """Clean and randomly-masked accuracy of both models on the same masks, and
    how often they agree on clean images (did fine-tuning keep the classifier?)."""
    device = next(surrogate.parameters()).device
    x = images.to(device)
    agree = (original(x).argmax(1) == surrogate(x).argmax(1)).float().mean().item()
    return {
        "clean_accuracy": {
            "original": accuracy(original, x, labels.to(device)),
            "surrogate": accuracy(surrogate, x, labels.to(device)),
        },
        "masked_accuracy": {
            "original": masked_accuracy(original, images, labels, beta, seed),
            "surrogate": masked_accuracy(surrogate, images, labels, beta, seed),
        },
        "clean_agreement": agree,
        "beta": beta,
    }
