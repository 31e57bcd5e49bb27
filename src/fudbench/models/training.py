"""Training loops for the benchmark's classifiers and score model (CPU or GPU)."""

from __future__ import annotations

import copy
import logging
import math
import time

import numpy as np
import torch
import torch.nn.functional as F
from fudbench.core.bars import progress as progress_bar

from fudbench.core.seeding import seed_everything, torch_generator

log = logging.getLogger(__name__)


def _augment(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Label-preserving augmentation: flips and 90-degree turns (never brightness,
    which carries the dark/light class)."""
    flip = torch.rand(len(x), generator=g) < 0.5
    x = torch.where(flip.view(-1, 1, 1, 1).to(x.device), x.flip(-1), x)
    k = int(torch.randint(0, 4, (1,), generator=g))
    return torch.rot90(x, k, dims=(-2, -1))


def _cosine_lr(step: int, total: int, warmup: int) -> float:
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))


@torch.no_grad()
def accuracy(
    model,
    images: torch.Tensor,
    labels: torch.Tensor,
    batch_size: int = 256,
    name: str = "the classifier",
    fix: str = "",
    nonfinite: str = "raise",
) -> float:
    """Top-1 accuracy. An image whose logits are not all finite has no prediction
    (argmax of NaN is class 0): nonfinite="raise" refuses the model
    (NonFiniteLogitsError naming `name`, with `fix`); "wrong" counts the image as
    misclassified (the training loop's validation, so a diverged epoch is not kept)."""
    from fudbench.models.gate import NonFiniteLogitsError, nonfinite_message

    model.eval()
    correct, bad = 0, []
    for i in range(0, len(images), batch_size):
        logits = model(images[i : i + batch_size])
        finite = torch.isfinite(logits).all(1)
        bad += (torch.nonzero(~finite).flatten() + i).tolist()
        correct += ((logits.argmax(1) == labels[i : i + batch_size]) & finite).sum().item()
    if bad and nonfinite == "raise":
        raise NonFiniteLogitsError(nonfinite_message(name, bad, len(images), fix))
    return correct / len(images)


def train_classifier(model, train_x, train_y, val_x, val_y, train_cfg: dict, seed: int, device) -> dict:
    """AdamW with warmup + cosine decay; keeps the weights of the best validation epoch."""
    seed_everything(seed)
    g = torch_generator(seed)
    model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=train_cfg["lr"], weight_decay=train_cfg["weight_decay"])
    bs, epochs = train_cfg["batch_size"], train_cfg["epochs"]
    steps_per_epoch = math.ceil(len(train_x) / bs)
    total = epochs * steps_per_epoch
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _cosine_lr(s, total, warmup=min(100, total // 10 + 1)))
    best = (-1.0, None)
    history = []
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(train_x), generator=g)
        losses = []
        for i in progress_bar(range(0, len(perm), bs), desc=f"epoch {epoch + 1}/{epochs}", mininterval=5):
            idx = perm[i : i + bs]
            x = _augment(train_x[idx], g).to(device)
            loss = F.cross_entropy(model(x), train_y[idx].to(device))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
        val_acc = accuracy(model, val_x.to(device), val_y.to(device), nonfinite="wrong")
        history.append({"epoch": epoch + 1, "loss": float(np.mean(losses)), "val_accuracy": val_acc})
        log.info("epoch %d: loss %.4f, val accuracy %.4f", epoch + 1, np.mean(losses), val_acc)
        if val_acc >= best[0]:
            best = (val_acc, copy.deepcopy(model.state_dict()))
    model.load_state_dict(best[1])
    model.eval()
    return {"history": history, "best_val_accuracy": best[0]}


def train_score_model(unet, scheduler, train_x, train_cfg: dict, seed: int, device, ema_decay: float = 0.999) -> dict:
    """DDPM epsilon-prediction training on images in [0, 1] (mapped to [-1, 1]).
    Returns metrics; `unet` ends up holding the EMA weights."""
    seed_everything(seed)
    g = torch_generator(seed)
    unet.to(device).train()
    ema = copy.deepcopy(unet).requires_grad_(False)
    opt = torch.optim.AdamW(unet.parameters(), lr=train_cfg["lr"], weight_decay=train_cfg["weight_decay"])
    bs, epochs = train_cfg["batch_size"], train_cfg["epochs"]
    total = epochs * math.ceil(len(train_x) / bs)
    lr_sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _cosine_lr(s, total, warmup=min(200, total // 10 + 1)))
    T = scheduler.config.num_train_timesteps
    history, step, t0 = [], 0, time.time()
    for epoch in range(epochs):
        perm = torch.randperm(len(train_x), generator=g)
        losses = []
        for i in progress_bar(range(0, len(perm), bs), desc=f"epoch {epoch + 1}/{epochs}", mininterval=5):
            x0 = (_augment(train_x[perm[i : i + bs]], g) * 2 - 1).to(device)
            noise = torch.randn(x0.shape, generator=g).to(device)
            t = torch.randint(0, T, (len(x0),), generator=g).to(device)
            loss = F.mse_loss(unet(scheduler.add_noise(x0, noise, t), t).sample, noise)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(unet.parameters(), 1.0)
            opt.step()
            lr_sched.step()
            step += 1
            decay = min(ema_decay, (1 + step) / (10 + step))  # warm-up: early EMA tracks closely
            with torch.no_grad():
                for pe, p in zip(ema.parameters(), unet.parameters()):
                    pe.lerp_(p, 1 - decay)
            losses.append(loss.item())
        history.append({"epoch": epoch + 1, "loss": float(np.mean(losses))})
        log.info("epoch %d: loss %.4f (%.0f s)", epoch + 1, np.mean(losses), time.time() - t0)
    unet.load_state_dict(ema.state_dict())
    unet.eval()
    return {"history": history, "steps": step, "seconds": time.time() - t0}
