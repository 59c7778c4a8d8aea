"""The ResNet whose last convolutional block gives the image features, and where its weights come from.

The paper uses "the last convolutional layer of a ResNet trained on ImageNet"; the depth is unstated
(seed brief §4.3, open question 8), so it is a setting (18/34/50/101/152, default 50) and the features
are torchvision's ``layer4`` output: [2048, H/32, W/32] for ResNet-50 (7x7 at 224 px), 512 channels
for ResNet-18/34. Resolution: ``size`` x ``size`` (224 by default, torchvision's ImageNet size; Neural
Monkey's script fed TF-slim ResNet-v2 229 px images scaled to [0, 1], giving 8 x 8 x 2048; the official
Multi30k features are ResNet-50 res4f 14 x 14 x 1024, not the last block). Pixels are normalised with
the ImageNet mean and standard deviation that torchvision's weights were trained with.

Weights:

* ImageNet: torchvision's ``IMAGENET1K_V1`` state_dict file for the chosen depth (the original
  ImageNet training, contemporary with the paper; V2 is a 2021 recipe), read from a local path given in
  the config (``image_features.weights``) or on the command line (``--weights``). This machine cannot
  download it, so a missing file stops with the exact file to fetch and where to put it.
* ``random``: the offline default. A ResNet initialised by torchvision's own initialiser under a fixed
  seed and never trained. Its BatchNorm running statistics (mean 0, variance 1 at construction) would
  let activations grow block after block (a random ResNet-152 reaches 1e7, beyond float16), so they
  are calibrated once, data-independently: one train-mode forward pass (cumulative averages) over
  ``CALIBRATION_IMAGES`` Gaussian-noise images drawn under the same seed. The features are random
  convolutional projections of the image that still carry colour and layout (what toyworld's
  rendered scenes encode) but are *not* ImageNet features; tables built on them must say so (the
  features' JSON sidecar records ``weights: random``).
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn
from torchvision import models

from nmtvariants.errors import InputError, MissingResourceError
from nmtvariants.vision import RANDOM

DEPTHS = (18, 34, 50, 101, 152)
CONFIG_KEY = "image_features.weights"
# ImageNet normalisation of torchvision's classification weights
MEAN = (0.485, 0.456, 0.406)
CALIBRATION_IMAGES, CALIBRATION_SIZE = 16, 64
STD = (0.229, 0.224, 0.225)


def _weights_enum(depth: int) -> models.WeightsEnum:
    return getattr(models, f"ResNet{depth}_Weights").IMAGENET1K_V1


def imagenet_url(depth: int) -> str:
    """Where torchvision publishes the ImageNet weights of ResNet-``depth`` (no download happens here)."""
    return _weights_enum(depth).url


def check_depth(depth: int) -> None:
    if depth not in DEPTHS:
        raise InputError(f"image features: ResNet depth {depth}; choose one of {', '.join(map(str, DEPTHS))}")


def build_resnet(depth: int, weights: str | Path, seed: int = 0) -> nn.Module:
    """ResNet-``depth`` in eval mode with ``weights``: ``"random"`` (torchvision's initialiser under
    ``seed``) or the path of a torchvision state_dict file."""
    check_depth(depth)
    constructor = getattr(models, f"resnet{depth}")
    if str(weights) == RANDOM:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = constructor(weights=None)
            noise = torch.randn(CALIBRATION_IMAGES, 3, CALIBRATION_SIZE, CALIBRATION_SIZE)
        return calibrate_batch_norm(model, noise)
    path = Path(weights)
    if not path.is_file():
        url = imagenet_url(depth)
        raise MissingResourceError(
            f"ResNet-{depth} ImageNet weights not found at {path}: download torchvision's "
            f"ResNet{depth}_Weights.IMAGENET1K_V1 file {url.rsplit('/', 1)[-1]} from {url}, put it at "
            f"{path} (or set {CONFIG_KEY} / --weights to where it is), or use weights: {RANDOM} offline"
        )
    model = constructor(weights=None)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(state)
    except (RuntimeError, ValueError, TypeError, OSError, EOFError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InputError(
            f"{path}: not a torchvision ResNet-{depth} state_dict ({first[:200]}); give the "
            f"ResNet{depth}_Weights.IMAGENET1K_V1 file from {imagenet_url(depth)}"
        ) from None
    return model.eval()


def calibrate_batch_norm(model: nn.Module, images: torch.Tensor) -> nn.Module:
    """Set every BatchNorm's running statistics to those of ``images`` (one train-mode pass with
    cumulative averaging); returns the model in eval mode, its weights untouched."""
    norms = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    momenta = [m.momentum for m in norms]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None
    model.train()
    with torch.no_grad():
        model(images)
    for norm, momentum in zip(norms, momenta, strict=True):
        norm.momentum = momentum
    return model.eval()


class LastConvBlock(nn.Module):
    """A ResNet up to ``layer4`` (no pooling, no classifier): images [B, 3, H, W] -> [B, regions, C],
    the regions in row-major order over the H/32 x W/32 grid (as Neural Monkey flattens it)."""

    def __init__(self, resnet: nn.Module):
        super().__init__()
        self.stem = nn.Sequential(resnet.conv1, resnet.bn1, resnet.relu, resnet.maxpool)
        self.blocks = nn.Sequential(resnet.layer1, resnet.layer2, resnet.layer3, resnet.layer4)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        grid = self.blocks(self.stem(images))
        return grid.flatten(2).transpose(1, 2)
