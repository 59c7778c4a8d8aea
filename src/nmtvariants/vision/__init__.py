"""Image features for the multimodal study (Libovický et al. 2018): a torchvision ResNet's last
convolutional block per image, stored as float16 ``.npy`` [images, regions, channels] beside the image
ids (``resnet.py``: the network and its weights; ``features.py``: extraction and the files;
``cli.py``: ``nmtvariants image-features``)."""

# `image_features.weights: random`: torchvision's initialiser under a fixed seed, not ImageNet features.
# Here, not in resnet.py, so that a config check can name it without importing torchvision.
RANDOM = "random"
