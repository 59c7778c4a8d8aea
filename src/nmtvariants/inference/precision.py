"""The number formats a trained model can decode in (``translate --dtype``, ``evaluate.dtype``).

This module is the one home of the names: the command line offers :data:`DTYPE_NAMES`, and
``schemas/config.schema.yaml`` lists the same ones for ``evaluate.dtype`` (tests/test_quantize.py
checks that the two agree).

``float32``, ``bfloat16`` and ``float16`` cast weights and activations (``model.to(dtype)``).

``int8`` is dynamic quantisation for CPU decoding, CTranslate2's ``int8_float32`` idea: every
``nn.Linear`` weight is quantised once, per output row, to symmetric int8; each call quantises its
input per row from the row's own range (hence *dynamic*: no calibration data), multiplies in integers
with int32 sums (VNNI where the CPU has it) and rescales to float32 (:mod:`.int8_linear`).
Embeddings, layer norms, attention scores and softmax stay float32. Why: on a CPU without AMX the
linear layers are most of the decoder's time, and int8 halves the bytes of bf16 and quarters fp32's.

The output projection is the target embedding table when embeddings are tied (an ``nn.Embedding``
read through ``F.linear`` in ``Transformer.project``), and when it is untied (``share_embeddings:
none``) an ``nn.Linear`` whose ``.weight`` the training objective and plug-ins read as a float tensor.
Either way it is left as it is and an int8 copy is installed in ``Transformer.quantized_projection``,
which ``project`` uses when it is set; the float table stays for the source and target embeddings.
The feature encoder's projection (read through ``proj.weight.dtype``) stays float32 as well.
"""

from __future__ import annotations

import torch
from torch import nn

from nmtvariants.errors import ConfigError
from nmtvariants.inference.int8_linear import Int8Linear

FLOAT_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}
INT8 = "int8"
DTYPE_NAMES: tuple[str, ...] = (*FLOAT_DTYPES, INT8)

# nn.Linear modules (by name) that int8 leaves in float32: their weight is read directly elsewhere
FLOAT_LINEARS = ("output_projection", "feature_encoder.proj")


def check_dtype(name: str, device: str) -> None:
    """ConfigError for a format this device cannot run: the int8 layers are CPU kernels."""
    if name not in DTYPE_NAMES:
        raise ConfigError(f"--dtype: one of {', '.join(DTYPE_NAMES)}, got {name!r}")
    if name == INT8 and not str(device).startswith("cpu"):
        raise ConfigError(
            f"--dtype int8: dynamic int8 quantisation runs on the CPU only, but the device is {device}; "
            "use --device cpu, or --dtype bfloat16 on the GPU"
        )


def prepare_model(model: nn.Module, name: str, device: str) -> nn.Module:
    """``model`` (on ``device``, eval mode) in the format ``name``; int8 quantises in place."""
    check_dtype(name, device)
    if name == INT8:
        return quantize_int8(model)
    return model.to(FLOAT_DTYPES[name])


def quantize_int8(model: nn.Module) -> nn.Module:
    """Quantise ``model``'s linear layers and output projection to int8 in place (float32 model, CPU)."""
    if next(model.parameters()).dtype != torch.float32:
        raise ConfigError("--dtype int8: quantises a float32 model; this one is not float32")
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            qualified = f"{name}.{child_name}" if name else child_name
            if type(child) is nn.Linear and qualified not in FLOAT_LINEARS:
                setattr(module, child_name, Int8Linear.from_float(child))
    if hasattr(model, "quantized_projection"):
        model.quantized_projection = Int8Linear(model.output_weight.detach(), None)
    return model.eval()
