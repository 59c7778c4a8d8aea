"""``nmtvariants image-features`` (vision/) against torchvision itself: each image alone through
torchvision's preprocessing and its model's own forward up to ``layer4`` (``create_feature_extractor``),
a state_dict file saved here, and the documented fixed-seed initialisation of ``random`` weights."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from model_fixtures import single_thread
from PIL import Image
from torchvision import models, transforms
from torchvision.models.feature_extraction import create_feature_extractor

from nmtvariants.cli import main
from nmtvariants.errors import InputError
from nmtvariants.vision.features import load_features

SIZE = 48  # a 2 x 2 grid of regions at ResNet's stride 32


@pytest.fixture(autouse=True, scope="module")
def _single_thread():
    with single_thread():
        yield


@pytest.fixture(autouse=True)
def _exact_gpu_convolutions(monkeypatch):
    """On a GPU machine the features come from CUDA: keep its convolutions in full float32 precision."""
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)


@pytest.fixture
def split(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """Five small images of different sizes and modes (RGB, grey, RGBA PNG, JPEG) and a list whose
    order is not the file names' order."""
    rng = np.random.default_rng(0)
    folder = tmp_path / "images"
    folder.mkdir()
    specs = [("c.png", "RGB", (40, 52)), ("a.png", "L", (48, 48)), ("e.jpg", "RGB", (33, 61)),
             ("b.png", "RGBA", (64, 40)), ("d.png", "RGB", (50, 50))]  # fmt: skip
    for name, mode, (h, w) in specs:
        channels = {"RGB": 3, "L": 1, "RGBA": 4}[mode]
        pixels = rng.integers(0, 256, (h, w, channels), dtype=np.uint8)
        Image.fromarray(pixels.squeeze(-1) if channels == 1 else pixels, mode).save(folder / name)
    names = [name for name, _, _ in specs]
    (tmp_path / "split.txt").write_text("".join(f"{n}\n" for n in names))
    return folder, tmp_path / "split.txt", names


def run(folder: Path, listing: Path, output: Path, *extra: str) -> int:
    return main(["image-features", "--images", str(folder), "--list", str(listing), "--output", str(output),
                 "--depth", "18", "--size", str(SIZE), *extra])  # fmt: skip


def torchvision_features(model: torch.nn.Module, path: Path) -> torch.Tensor:
    """One image alone: torchvision's transforms and the model's own forward up to layer4 -> [R, C]."""
    imagenet = models.ResNet18_Weights.IMAGENET1K_V1.transforms()
    preprocess = transforms.Compose(
        [
            transforms.Resize((SIZE, SIZE), interpolation=transforms.InterpolationMode.BILINEAR),
            transforms.ToTensor(),
            transforms.Normalize(imagenet.mean, imagenet.std),
        ]
    )
    with Image.open(path) as image:
        pixels = preprocess(image.convert("RGB"))
    extractor = create_feature_extractor(model.eval(), return_nodes={"layer4": "grid"})
    with torch.no_grad():
        grid = extractor(pixels[None])["grid"][0]  # [C, h, w]
    return grid.flatten(1).T


def trained_looking_resnet18() -> torch.nn.Module:
    """Random weights with non-trivial BatchNorm statistics, so that eval-mode BatchNorm matters."""
    torch.manual_seed(3)
    model = models.resnet18()
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
    return model.eval()


def test_weights_file_batched_features_equal_torchvision_per_image(split, tmp_path):
    folder, listing, names = split
    model = trained_looking_resnet18()
    weights = tmp_path / "resnet18-test.pth"
    torch.save(model.state_dict(), weights)
    output = tmp_path / "out" / "feats.npy"
    assert run(folder, listing, output, "--weights", str(weights), "--batch-size", "3") == 0
    stored = np.load(output)
    assert stored.dtype == np.float16 and stored.shape == (5, 4, 512)
    assert (tmp_path / "out" / "feats.ids.txt").read_text().splitlines() == names
    meta = json.loads((tmp_path / "out" / "feats.json").read_text())
    assert meta["imagenet"] is True and meta["weights"] == str(weights) and meta["regions"] == 4
    for row, name in zip(stored, names, strict=True):
        expected = torchvision_features(model, folder / name)
        torch.testing.assert_close(torch.from_numpy(row).float(), expected, rtol=2e-3, atol=2e-3)
    features, ids = load_features(output, expected_ids=names)
    assert ids == names and np.array_equal(features, stored)
    with pytest.raises(InputError, match=r"feats.ids.txt:2: image ids differ"):
        load_features(output, expected_ids=[names[0], *names[2:], names[1]])


def test_random_weights_are_the_documented_fixed_seed_initialisation(split, tmp_path):
    folder, listing, names = split
    assert run(folder, listing, tmp_path / "one.npy", "--seed", "7") == 0
    assert run(folder, listing, tmp_path / "two.npy", "--seed", "7") == 0
    assert run(folder, listing, tmp_path / "other.npy", "--seed", "8") == 0
    one, other = np.load(tmp_path / "one.npy"), np.load(tmp_path / "other.npy")
    assert (tmp_path / "one.npy").read_bytes() == (tmp_path / "two.npy").read_bytes()
    assert not np.allclose(one, other, atol=1e-2)
    torch.manual_seed(7)  # the documented definition: torchvision's initialiser, BatchNorm on noise
    model = models.resnet18()
    noise = torch.randn(16, 3, 64, 64)
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.momentum = None  # cumulative average: one batch gives exactly its statistics
    with torch.no_grad():
        model.train()(noise)
    for row, name in zip(one, names, strict=True):
        expected = torchvision_features(model, folder / name)
        torch.testing.assert_close(torch.from_numpy(row).float(), expected, rtol=2e-3, atol=2e-3)
    coco = tmp_path / "coco.txt"  # Multi30k's MSCOCO lists: file name + "#<caption id>"
    coco.write_text(f"{names[3]}#367178\n{names[1]}#12\n")
    assert run(folder, coco, tmp_path / "coco.npy", "--seed", "7") == 0
    assert (tmp_path / "coco.ids.txt").read_text().splitlines() == [f"{names[3]}#367178", f"{names[1]}#12"]
    np.testing.assert_allclose(np.load(tmp_path / "coco.npy"), one[[3, 1]], rtol=2e-3, atol=2e-3)
    meta = json.loads((tmp_path / "one.json").read_text())
    assert meta["weights"] == "random" and meta["imagenet"] is False and meta["seed"] == 7


def test_standardised_features_are_the_raw_ones_per_region_to_mean_0_variance_1(split, tmp_path):
    """``--standardise region``: each region's vector of the raw features, shifted and scaled over its
    channels; the default keeps the raw features (the paper's) and the metadata says which."""
    folder, listing, _ = split
    assert run(folder, listing, tmp_path / "raw.npy", "--seed", "7") == 0
    assert run(folder, listing, tmp_path / "std.npy", "--seed", "7", "--standardise", "region") == 0
    raw = np.load(tmp_path / "raw.npy").astype(np.float64)
    standardised = np.load(tmp_path / "std.npy").astype(np.float64)
    assert raw.min() >= 0 and np.linalg.norm(raw, axis=-1).mean() > 10  # an untrained ResNet's scale
    np.testing.assert_allclose(standardised.mean(-1), 0, atol=1e-2)
    np.testing.assert_allclose(standardised.std(-1), 1, atol=1e-2)
    expected = (raw - raw.mean(-1, keepdims=True)) / raw.std(-1, keepdims=True)
    np.testing.assert_allclose(standardised, expected, atol=2e-2)
    assert json.loads((tmp_path / "raw.json").read_text())["standardise"] == "none"
    assert json.loads((tmp_path / "std.json").read_text())["standardise"] == "region"


def test_missing_weights_file_says_exactly_what_to_fetch(split, tmp_path, capsys):
    folder, listing, _ = split
    missing = tmp_path / "weights" / "resnet18.pth"
    assert run(folder, listing, tmp_path / "f.npy", "--weights", str(missing)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    for needed in (str(missing), "resnet18-f37072fd.pth", "IMAGENET1K_V1", "image_features.weights"):
        assert needed in err
    assert not (tmp_path / "f.npy").exists()


def test_bad_weights_and_lists_stop_with_one_line(split, tmp_path, capsys):
    folder, listing, names = split
    weights = tmp_path / "resnet34.pth"
    torch.save(models.resnet34().state_dict(), weights)  # the wrong depth for --depth 18
    assert run(folder, listing, tmp_path / "f.npy", "--weights", str(weights)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a torchvision ResNet-18 state_dict" in err
    bad = tmp_path / "bad.txt"
    bad.write_text(f"{names[0]}\nnothere.png\n")
    assert run(folder, listing.parent / "bad.txt", tmp_path / "f.npy") == 2
    assert f"{bad}:2: image nothere.png not found" in capsys.readouterr().err
    (folder / "broken.png").write_bytes(b"not a png")
    bad.write_text(f"{names[0]}\nbroken.png\n")
    assert run(folder, bad, tmp_path / "f.npy") == 2
    assert f"{bad}:2: cannot read image" in capsys.readouterr().err
    assert run(folder, listing, tmp_path / "f.npy", "--depth", "20") == 2  # the last --depth counts
    assert "choose one of 18, 34, 50, 101, 152" in capsys.readouterr().err
    assert not (tmp_path / "f.npy").exists()
