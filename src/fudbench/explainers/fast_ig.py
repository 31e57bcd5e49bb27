"""FIG: Fast IG (Hesse et al. 2021), input x gradient of the target log-probability.

attribution = x * d log p(y|x) / dx, with p = softmax(logits) applied once here.
Sign: high attribution = supports the target class y. (The authors' code takes
the gradient of the cross-entropy loss, -log p(y|x), i.e. the opposite sign,
and with the batch-mean loss also scales each image's map by 1/N; neither is
copied.) No settings; cost 1 forward + 1 backward pass per image.
"""

from __future__ import annotations

import torch

from fudbench.explainers.base import Explainer


class FastIG(Explainer):
    name = "fig"

    def explain(self, model, x, target, seeds=None):
        xg = x.detach().clone().requires_grad_(True)
        with torch.enable_grad():
            log_p = torch.log_softmax(model(xg), dim=1)
            # images are independent, so the gradient of the sum is each image's own gradient
            (grad,) = torch.autograd.grad(log_p.gather(1, target.to(x.device).view(-1, 1)).sum(), xg)
        return (x.detach() * grad).detach()
