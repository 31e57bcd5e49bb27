"""An attribution method of your own for config/your_own.yaml (docs/your_own.md,
"Your own attribution method"): a function, or an Explainer subclass."""

import torch


def gradient_x_input(model, x, target, seeds=None, scale: float = 1.0):
    """Gradient of the target logit times the input: (N, C, H, W), detached."""
    x = x.detach().clone().requires_grad_(True)
    logits = model(x)
    (grad,) = torch.autograd.grad(logits.gather(1, target[:, None]).sum(), x)
    return (scale * grad * x).detach()
