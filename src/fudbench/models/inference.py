"""The classifier as the evaluation side runs it on a CPU: each BatchNorm2d folded into the convolution
before it, and the weights in channels_last.

Evaluation jobs (every protocol's fills and responses, FUD's guidance, the OOD references and clean
scores, SRG's random orderings, the FUD diagnostics, the score-model check and Table 10's timing) put
tens of thousands of images through a frozen classifier. On a CPU, oneDNN's convolutions in fp32 run
about a quarter faster on channels_last tensors, and a folded BatchNorm is one pass less over each
activation: the small CNN of the default profile took 0.94 -> 0.70 ms per image at batch 100-256
(AVX-512 CPU) and 1.06 -> 0.75 ms with oneDNN capped at AVX2, one thread (docs/performance.md, issue 47).

The function is the same up to float rounding: logits move by ~6e-8 (the folded weights are rounded
once, and the convolution sums in another order). The explain jobs keep the model as trained (their
explainers may hook its modules: Grad-CAM's layers, LRP's rules for BatchNorm), and so does a GPU,
where the layout is left to the U-Net's settings and the classifier is not the bottleneck.
"""
from __future__ import annotations

import logging

import torch
from torch import nn

log = logging.getLogger(__name__)


def fold_batchnorm(model: nn.Module) -> int:
    """Fold every eval-mode BatchNorm2d that directly follows a Conv2d inside an nn.Sequential into
    that convolution (the BatchNorm becomes an Identity), in place. A Sequential hands the conv's
    output to the BatchNorm alone, so the fold is exact up to rounding. Returns how many were folded."""
    from torch.nn.utils.fusion import fuse_conv_bn_eval

    folded = 0
    for seq in [m for m in model.modules() if isinstance(m, nn.Sequential)]:
        names = list(seq._modules)
        for a, b in zip(names, names[1:]):
            conv, bn = seq._modules[a], seq._modules[b]
            if (type(conv) is nn.Conv2d and type(bn) is nn.BatchNorm2d and not conv.training and not bn.training
                    and bn.track_running_stats and bn.running_mean is not None):
                fused = fuse_conv_bn_eval(conv, bn)
                fused.requires_grad_(False)
                seq._modules[a], seq._modules[b] = fused, nn.Identity()
                folded += 1
    return folded


def for_evaluation(model: nn.Module, device) -> nn.Module:
    """The frozen classifier `model` (load_classifier's) ready for the evaluation side: on a CPU,
    BatchNorms folded and channels_last weights (module docstring); elsewhere unchanged. In place;
    returns the model."""
    if torch.device(device).type != "cpu" or model.training:
        return model
    folded = fold_batchnorm(model)
    if any(isinstance(m, nn.Conv2d) for m in model.modules()):
        model.to(memory_format=torch.channels_last)
    log.debug("classifier for evaluation on the CPU: %d BatchNorm(s) folded, channels_last", folded)
    return model
