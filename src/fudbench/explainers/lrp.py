"""`lrp`: Layer-wise Relevance Propagation with zennit (a composite of rules
run by zennit's Gradient attributor).

    explainers:
      lrp: {method: lrp}                                    # EpsilonPlusFlat, canonizer auto
      lrp_box: {method: lrp, composite: EpsilonGammaBox, options: {gamma: 0.25}}

What LRP sees: the workflow's classifiers normalise inside (Classifier =
Normalize + net). The rules are applied to `net` on the normalised images and
the relevance of the normalised input is the map (the pixels are the same;
backpropagating through the normalisation would only divide each channel by
its std). EpsilonGammaBox's ZBox bounds are the images' range [0, 1] in that
space, (0 - mean) / std and (1 - mean) / std per channel. Any other model is
attributed as given, with bounds [0, 1].

The output relevance is the target logit (LRP's R = f(x)), so the map sums to
about the logit (up to biases and stabilisers). Canonizers (`auto`): zennit's
ResNetCanonizer for torchvision ResNets, SequentialMergeBatchNorm for other
networks with batch norm (BN merged into the convolution before it).

Not supported: networks with attention or LayerNorm (ViTs): zennit has no
rules for them, and a gradient through them is not LRP; refused before any
work. Operations written as functions (SmallCNN's global mean pool) are not
modules, so no rule sees them: the gradient passes through, which spreads the
pooled relevance evenly over the positions (a flat rule) instead of in
proportion to the activations.
"""

from __future__ import annotations

import torch

from fudbench.explainers.base import Explainer
from fudbench.explainers.field_common import normalisation, refuse_problems
from fudbench.explainers.settings import LRPSettings

_ATTENTION_NAMES = ("Attention", "VisionTransformer", "ViT", "EncoderBlock")


def attention_module(net: torch.nn.Module):
    """(name, type) of a module zennit has no rule for (attention, LayerNorm; else a module named like a ViT's), or None."""
    modules = list(net.named_modules())
    found = [(n, m) for n, m in modules if isinstance(m, (torch.nn.MultiheadAttention, torch.nn.LayerNorm))]
    found = found or [(n, m) for n, m in modules if any(a in type(m).__name__ for a in _ATTENTION_NAMES)]
    return (found[0][0] or "(the network)", type(found[0][1]).__name__) if found else None


def canonizers(net: torch.nn.Module, which: str) -> list:
    from torchvision.models import ResNet
    from zennit.canonizers import SequentialMergeBatchNorm
    from zennit.torchvision import ResNetCanonizer

    if which == "resnet" or (which == "auto" and isinstance(net, ResNet)):
        if not isinstance(net, ResNet):
            raise ValueError(f"lrp: canonizer 'resnet' is for torchvision ResNets, not {type(net).__name__}")
        return [ResNetCanonizer()]
    has_bn = any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in net.modules())
    if which == "merge_batchnorm" or (which == "auto" and has_bn):
        return [SequentialMergeBatchNorm()]
    return []


class LRP(Explainer):
    name = "lrp"

    def __init__(self, composite: str = "EpsilonPlusFlat", canonizer: str = "auto", options: dict | None = None):
        self.settings_ = LRPSettings(composite, canonizer, dict(options or {}))
        refuse_problems(self.settings_, "explainers.lrp")

    def check_where(self) -> str:
        return f"lrp {self.settings_.composite}.explain"

    def composite(self, net, z, mean, std):
        import zennit.composites

        s = self.settings_
        kwargs = dict(s.options)
        if s.composite == "EpsilonGammaBox":
            mean = torch.zeros(1, device=z.device) if mean is None else mean
            std = torch.ones(1, device=z.device) if std is None else std
            kwargs.update(low=((0 - mean) / std).expand_as(z), high=((1 - mean) / std).expand_as(z))
        return getattr(zennit.composites, s.composite)(canonizers=canonizers(net, s.canonizer), **kwargs)

    def explain(self, model, x, target, seeds=None):
        from zennit.attribution import Gradient

        net, mean, std = normalisation(model)
        found = attention_module(net)
        if found:
            raise ValueError(
                f"lrp: {type(net).__name__} has a {found[1]} ({found[0]!r}); zennit has no LRP rules for "
                f"attention or LayerNorm (ViTs), so LRP is refused for it; use cam or captum instead"
            )
        z = x.detach() if mean is None else ((x - mean) / std).detach()

        def logit(out):  # the output relevance: the target logit
            return (out * torch.nn.functional.one_hot(target, out.shape[1]).to(out.dtype)).detach()

        with Gradient(model=net, composite=self.composite(net, z, mean, std)) as attributor:
            _, relevance = attributor(z.clone().requires_grad_(True), logit)
        return relevance.detach().float()
