"""torchvision's ImageNet-1k classifiers (ResNet-50, ViT-B/16) for the paper profile.

The weights are the public torchvision files: found in the torch hub cache (where
`torchvision.models.resnet50(weights=...)` downloads them) or at a configured
path, and checksum-verified before use. torchvision names each file after the
first hex digits of its sha256 (`resnet50-0676ba61.pth`), the prefix torch.hub
itself checks; a full sha256 in config is checked instead when given.

The table below is plain data so that config validation and the asset check
import it without torch; torch and torchvision are imported inside functions.
"""

from __future__ import annotations

import os
from pathlib import Path

DOWNLOAD_ROOT = "https://download.pytorch.org/models/"
# arch -> torchvision builder, and weights enum name -> file name (its sha256 prefix after the dash)
TORCHVISION_ARCHS = {"torchvision_resnet50": "resnet50", "torchvision_vit_b_16": "vit_b_16"}
WEIGHT_FILES = {
    "torchvision_resnet50": {"IMAGENET1K_V1": "resnet50-0676ba61.pth", "IMAGENET1K_V2": "resnet50-11ad3fa6.pth"},
    "torchvision_vit_b_16": {
        "IMAGENET1K_V1": "vit_b_16-c867db91.pth",
        "IMAGENET1K_SWAG_LINEAR_V1": "vit_b_16_lc_swag-4e70ced5.pth",
    },
}
# The normalisation of every weights enum above (torchvision's ImageClassification transform).
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
# ViT-B/16's position embedding fixes its input size.
FIXED_INPUT_SIZE = {"torchvision_vit_b_16": 224}


class WeightsError(RuntimeError):
    """A weights file is missing or is not the expected file; says how to fetch it."""


def is_torchvision(arch: str) -> bool:
    return arch in TORCHVISION_ARCHS


def weight_file(arch: str, weights: str) -> str:
    try:
        return WEIGHT_FILES[arch][weights]
    except KeyError:
        known = ", ".join(WEIGHT_FILES.get(arch, {})) or "none"
        raise ValueError(f"no weights {weights!r} for {arch}; available: {known}") from None


def weight_url(arch: str, weights: str) -> str:
    return DOWNLOAD_ROOT + weight_file(arch, weights)


def hub_dir() -> Path:
    """torch.hub.get_dir() without importing torch: $TORCH_HOME/hub, TORCH_HOME
    defaulting to $XDG_CACHE_HOME/torch, XDG_CACHE_HOME to ~/.cache."""
    cache = os.getenv("XDG_CACHE_HOME", os.path.join("~", ".cache"))
    return Path(os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(cache, "torch")))) / "hub"


def weights_path(cfg: dict) -> Path:
    """The configured file (models.classifiers.<name>.path), else torchvision's hub cache location."""
    if cfg.get("path"):
        return Path(os.path.expandvars(os.path.expanduser(cfg["path"])))
    return hub_dir() / "checkpoints" / weight_file(cfg["arch"], cfg["weights"])


def fetch_command(cfg: dict) -> str:
    """A shell command that puts the weights where weights_path(cfg) looks."""
    path = weights_path(cfg)
    return f"mkdir -p {path.parent} && curl -L -o {path} {weight_url(cfg['arch'], cfg['weights'])}"


def expected_digest(cfg: dict) -> tuple[str, bool]:
    """(hex digest or prefix to compare with the file's sha256, whether it is the full digest)."""
    if cfg.get("sha256"):
        return cfg["sha256"].lower(), True
    return weight_file(cfg["arch"], cfg["weights"]).rsplit("-", 1)[1].split(".")[0], False


def verify_weights(cfg: dict, name: str = "classifier", digest: str | None = None) -> str:
    """Check the weights file of a classifier config; returns its full sha256.
    `digest` may pass a precomputed sha256 of the file."""
    from fudbench.core.fingerprint import file_sha256

    path = weights_path(cfg)
    key = f"models.classifiers.{name}"
    if not path.is_file():
        raise WeightsError(
            f"weights of classifier {name!r} ({cfg['arch']}, {cfg['weights']}) not found at {path}; "
            f"fetch them with:\n    {fetch_command(cfg)}\nor set {key}.path to the file"
        )
    digest = digest or file_sha256(path)
    want, full = expected_digest(cfg)
    if (digest != want) if full else not digest.startswith(want):
        what = f"{key}.sha256 = {want}" if full else f"the sha256 prefix {want} in torchvision's file name"
        raise WeightsError(
            f"checksum mismatch for {path}: sha256 {digest}, expected {what}; the file is "
            f"corrupt, truncated or other weights: delete it and fetch it again with:\n"
            f"    {fetch_command(cfg)}"
        )
    return digest


def build_torchvision_net(arch: str, image_size: int = 224, n_classes: int = 1000):
    """The torchvision architecture with random weights (pretrained ones are loaded
    by load_pretrained_net). ViT-B/16 accepts another image_size only for tests."""
    import torchvision.models as tvm

    builder = getattr(tvm, TORCHVISION_ARCHS[arch])
    kwargs = {"image_size": image_size} if arch == "torchvision_vit_b_16" else {}
    return builder(weights=None, num_classes=n_classes, **kwargs)


def load_pretrained_net(cfg: dict, image_size: int = 224):
    """The network with the verified weights file loaded strictly (fp32, CPU)."""
    import torch

    path = weights_path(cfg)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise WeightsError(
            f"{path} could not be read ({type(exc).__name__}: {exc}); delete it and fetch it "
            f"again with:\n    {fetch_command(cfg)}"
        ) from exc
    with torch.device("meta"):  # no random init of 86M parameters just to overwrite them
        net = build_torchvision_net(cfg["arch"], image_size)
    try:
        net.load_state_dict({k: v.float() for k, v in state.items()}, strict=True, assign=True)
    except RuntimeError as exc:
        raise WeightsError(f"{path} does not hold {cfg['arch']} weights: {exc}") from exc
    return net
