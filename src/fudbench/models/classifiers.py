"""Classifiers of two families for the synthetic benchmark: a small CNN and a
small ViT; torchvision's pretrained ones (fudbench.models.torchvision_models);
your own, from a factory (`arch: import`, fudbench.models.imported). Every
classifier takes images in [0, 1] and returns logits; the normalisation lives
inside the wrapper, so explainers and imputers never see normalised tensors.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fudbench.models.imported import IMPORT_ARCH


class Normalize(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32).view(1, -1, 1, 1))
        self.register_buffer("std", torch.as_tensor(std, dtype=torch.float32).view(1, -1, 1, 1))

    def forward(self, x):
        return (x - self.mean) / self.std


class Classifier(nn.Module):
    """[0, 1] images -> logits: normalisation followed by a backbone."""

    def __init__(self, net: nn.Module, mean, std):
        super().__init__()
        self.normalize = Normalize(mean, std)
        self.net = net

    def forward(self, x):
        return self.net(self.normalize(x))


def _conv_bn(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class SmallCNN(nn.Module):
    """Three stages of two 3x3 conv-BN-ReLU layers, global average pooling, linear head."""

    def __init__(self, n_classes: int, width: int = 32):
        super().__init__()
        w = width
        self.features = nn.Sequential(
            _conv_bn(3, w),
            _conv_bn(w, w),
            nn.MaxPool2d(2),
            _conv_bn(w, 2 * w),
            _conv_bn(2 * w, 2 * w),
            nn.MaxPool2d(2),
            _conv_bn(2 * w, 4 * w),
            _conv_bn(4 * w, 4 * w),
        )
        self.head = nn.Linear(4 * w, n_classes)

    def forward(self, x):
        return self.head(self.features(x).mean(dim=(2, 3)))


class _Block(nn.Module):
    """Pre-norm transformer block (written out: no fused fast path, so the
    no-grad and the grad forward compute the same numbers)."""

    def __init__(self, dim: int, heads: int, mlp_ratio: int = 2):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_ratio * dim), nn.GELU(), nn.Linear(mlp_ratio * dim, dim))

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = F.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(att.transpose(1, 2).reshape(b, n, d))
        return x + self.mlp(self.norm2(x))


def _conv_stem(dim: int, patch_size: int) -> nn.Sequential:
    """Stride-2 3x3 convolutions down to one token per patch (Xiao et al. 2021,
    "Early convolutions help transformers see better"): same tokens as a
    patchify layer, much better optimisation on small data."""
    layers, cin, size = [], 3, patch_size
    while size > 1:
        cout = dim if size == 2 else max(dim // 2, 8)
        layers += [nn.Conv2d(cin, cout, 3, stride=2, padding=1), nn.BatchNorm2d(cout), nn.GELU()]
        cin, size = cout, size // 2
    return nn.Sequential(*layers, nn.Conv2d(cin, dim, 1))


class SmallViT(nn.Module):
    """Patch embedding (patchify or convolutional stem), class token, learned
    positions, pre-norm transformer blocks, linear head."""

    def __init__(
        self, n_classes: int, image_size: int, patch_size: int, dim: int, depth: int, heads: int, stem: str = "patchify"
    ):
        super().__init__()
        if image_size % patch_size:
            raise ValueError(f"patch_size {patch_size} must divide image_size {image_size}")
        if stem == "conv" and patch_size & (patch_size - 1):
            raise ValueError(f"a conv stem needs a power-of-two patch_size, got {patch_size}")
        n_patches = (image_size // patch_size) ** 2
        self.patch = _conv_stem(dim, patch_size) if stem == "conv" else nn.Conv2d(3, dim, patch_size, stride=patch_size)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, n_patches + 1, dim) * 0.02)
        self.blocks = nn.Sequential(*[_Block(dim, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, n_classes)

    def forward(self, x):
        tokens = self.patch(x).flatten(2).transpose(1, 2)
        tokens = torch.cat([self.cls.expand(len(x), -1, -1), tokens], dim=1) + self.pos
        return self.head(self.norm(self.blocks(tokens))[:, 0])


def build_classifier(cfg: dict, n_classes: int, image_size: int, mean, std) -> Classifier:
    arch = cfg["arch"]
    if arch == "small_cnn":
        net = SmallCNN(n_classes, width=cfg["width"])
    elif arch == "small_vit":
        net = SmallViT(
            n_classes,
            image_size,
            cfg["patch_size"],
            cfg["dim"],
            cfg["depth"],
            cfg["heads"],
            stem=cfg.get("stem", "patchify"),
        )
    elif arch.startswith("torchvision_"):
        from fudbench.models.torchvision_models import TORCHVISION_ARCHS, build_torchvision_net

        if arch not in TORCHVISION_ARCHS:
            raise ValueError(f"unknown classifier arch {arch!r}; torchvision ones: {', '.join(TORCHVISION_ARCHS)}")
        net = build_torchvision_net(arch, image_size, n_classes)
    elif arch == IMPORT_ARCH:
        from fudbench.models.imported import build_net

        net = build_net(cfg)  # its output size is the factory's: n_classes is not passed
    else:
        raise ValueError(
            f"unknown classifier arch {arch!r}; choose small_cnn, small_vit, import or a torchvision_* arch"
        )
    return Classifier(net, mean, std)


def save_classifier(path, model: Classifier, cfg: dict, n_classes: int, image_size: int, metrics: dict) -> None:
    from fudbench.core.io import torch_save

    torch_save(
        path,
        {
            "kind": "classifier",
            "cfg": cfg,
            "n_classes": n_classes,
            "image_size": image_size,
            "mean": model.normalize.mean.flatten().tolist(),
            "std": model.normalize.std.flatten().tolist(),
            "state_dict": model.state_dict(),
            "metrics": metrics,
        },
    )


def load_classifier(path, device="cpu") -> Classifier:
    """Load a frozen classifier (eval mode, no parameter gradients)."""
    from fudbench.models.checkpoints import load_checkpoint

    ckpt = load_checkpoint(path, kind="classifier")
    if ckpt["cfg"]["arch"].startswith("torchvision_"):
        import torch

        # Build on the meta device and take the stored tensors over: a random
        # init of ViT-B/16's 86M parameters would cost seconds in every job.
        with torch.device("meta"):
            model = build_classifier(ckpt["cfg"], ckpt["n_classes"], ckpt["image_size"], ckpt["mean"], ckpt["std"])
        model.load_state_dict(ckpt["state_dict"], assign=True)
    else:
        model = build_classifier(ckpt["cfg"], ckpt["n_classes"], ckpt["image_size"], ckpt["mean"], ckpt["std"])
        model.load_state_dict(ckpt["state_dict"])
    model.eval().requires_grad_(False)
    return model.to(device)


def pretrained_classifier(cfg: dict, name: str = "classifier", image_size: int = 224):
    """(frozen Classifier taking [0, 1] images, sha256 of the weights file): a
    torchvision_* checksum is verified before the weights are loaded; an `arch:
    import` entry's factory network gets its `weights` file (None: no file)."""
    if cfg["arch"] == IMPORT_ARCH:
        return imported_classifier(cfg, name)
    from fudbench.models.torchvision_models import IMAGENET_MEAN, IMAGENET_STD, load_pretrained_net, verify_weights

    digest = verify_weights(cfg, name)
    model = Classifier(load_pretrained_net(cfg, image_size), IMAGENET_MEAN, IMAGENET_STD)
    return model.eval().requires_grad_(False), digest


def imported_classifier(cfg: dict, name: str = "classifier"):
    """(frozen Classifier(factory network, mean, std), sha256 of the weights file or None)."""
    from fudbench.models.imported import build_net, load_weights

    net = build_net(cfg, name)
    digest = load_weights(net, cfg, name)
    return Classifier(net, cfg["mean"], cfg["std"]).eval().requires_grad_(False), digest


def output_classes(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, name: str) -> int:
    """The number of logits a pretrained classifier returns on the evaluated images;
    every label must be one of them. Errors name the classifier and the fix."""
    meta = [n for n, t in [*model.named_parameters(), *model.named_buffers()] if t.is_meta]
    if meta:  # no values to compute with: the error would be a device mismatch, not the image size (issue 45)
        raise RuntimeError(
            f"classifier {name!r} has {len(meta)} parameter(s) / buffer(s) on the 'meta' device, which "
            f"hold no values ({', '.join(meta[:3])}{', ...' if len(meta) > 3 else ''}): its factory "
            f"built it with device='meta' (or torch.device('meta'), init_empty_weights, "
            f"low_cpu_mem_usage); return a network with real tensors (materialise it with "
            f"net.to_empty(device='cpu') and load its weights, e.g. load_state_dict(state, assign=True))"
        )
    try:
        with torch.no_grad():
            logits = model(images[:1])
    except Exception as exc:
        raise RuntimeError(
            f"classifier {name!r} failed on a {tuple(images[:1].shape)} batch of [0, 1] images "
            f"({type(exc).__name__}: {exc}); does it take this image size (data.*.crop)?"
        ) from exc
    if logits.ndim != 2:
        raise RuntimeError(f"classifier {name!r} returned shape {tuple(logits.shape)}, expected logits (N, classes)")
    n_classes, top = logits.shape[1], int(labels.max())
    if top >= n_classes:
        raise RuntimeError(
            f"the labels go up to {top} but classifier {name!r} returns {n_classes} logits: "
            f"labels must be class indices of the classifier (data.folder.labels)"
        )
    return n_classes
