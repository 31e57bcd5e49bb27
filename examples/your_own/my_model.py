"""A classifier factory for config/your_own.yaml: replace `build` with yours.

The workflow calls `build(**kwargs)` (models.classifiers.<name>.factory and
.kwargs) in every job that loads the classifier, then loads the `weights`
file (a state_dict) into what it returns, strictly. So `build` must:
- return a torch.nn.Module taking normalised images (N, 3, H, W) -> logits (N, classes)
  (the workflow normalises with the entry's mean / std first: do not do it here too);
- build the same network every time, cheaply, without downloading anything
  (pretrained weights go in the config's `weights:`; this template has none, so
  it seeds its random initialisation);
- have at least as many logits as the largest label in your labels file + 1.
"""

import torch
from torch import nn


def build(num_classes: int = 2, width: int = 16):
    """A tiny CNN, randomly initialised with a fixed seed (a stand-in for your trained network)."""
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, width, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Conv2d(width, 2 * width, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(2 * width, num_classes),
    )
