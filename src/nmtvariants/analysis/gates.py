"""Gate activation statistics per layer of a lexical-shortcut model (Emelin et al. 2019, issue #10).

How much each self-attention sub-layer draws from the embeddings: the gates ``r_K``, ``r_V`` of eqs 9-10
weigh the shortcut keys/values (``r``) against the layer's own (``1 - r``), element-wise over d. A mean
near 1 means the layer's keys/values are mostly the embeddings'.

The gates come from the shortcut plug-in's records (``{attention}.key_gate`` / ``.value_gate``,
[B, T, d]) through :func:`~nmtvariants.analysis.extract.extract_states`: eval mode (no dropout), teacher
forcing, padding excluded. Every real position counts, ``</s>`` and ``<s>`` included (attention uses
their keys and values like any other). Statistics run over all gate elements (positions x d) in
float64, one layer at a time, so memory holds one layer's gates only.

Only self-attention gates are covered: decoder-to-encoder shortcuts gate the *source* positions under a
decoder name, which the extraction's per-side layout cannot hold.

CSV columns: ``variant``, ``side`` (encoder | decoder), ``layer`` (1-based, as in the similarity and
probe CSVs), ``gate`` (key | value), ``name`` (the capture name), ``mean``, ``std`` (population),
``above_half`` (fraction of elements > 0.5), ``positions`` (token positions), ``elements``.
"""

from __future__ import annotations

import re

import numpy as np
import torch

from nmtvariants.analysis.extract import cap_pairs, extract_states
from nmtvariants.data.dataset import ParallelData
from nmtvariants.errors import ConfigError

COLUMNS = ("variant", "side", "layer", "gate", "name", "mean", "std", "above_half", "positions", "elements")
GATE = re.compile(r"(encoder|decoder)\.layers\.(\d+)\.self\.(key|value)_gate")
PATTERNS = ("*.self.key_gate", "*.self.value_gate")


def gate_names(model: torch.nn.Module, data: ParallelData, device: str | torch.device = "cpu") -> list[str]:
    """The self-attention gate names the model records, in (side, layer, key/value) order (one pair run)."""
    try:
        _, states = extract_states(model, cap_pairs(data, max_sentences=1), PATTERNS, device=device)
    except ConfigError:
        states = {}
    names = [name for name in states if GATE.fullmatch(name)]
    if not names:
        raise ConfigError(
            "the model records no self-attention gates; gate statistics need a shortcuts model "
            'with self-attention shortcuts (--variant \'{"shortcuts": {"kind": "lexical"}}\')'
        )
    return sorted(names, key=_order)


def _order(name: str) -> tuple[bool, int, str]:
    match = GATE.fullmatch(name)
    assert match is not None
    return match[1] == "decoder", int(match[2]), match[3]


def gate_row(name: str, gates: np.ndarray, variant: str) -> dict:
    """Statistics of one gate's [positions, d] values."""
    match = GATE.fullmatch(name)
    assert match is not None
    values = gates.astype(np.float64)
    return {
        "variant": variant,
        "side": match[1],
        "layer": int(match[2]) + 1,
        "gate": match[3],
        "name": name,
        "mean": float(values.mean()),
        "std": float(values.std()),
        "above_half": float((values > 0.5).mean()),
        "positions": int(values.shape[0]),
        "elements": int(values.size),
    }


def gate_statistics(
    model: torch.nn.Module,
    data: ParallelData,
    variant: str = "",
    batch_size: int = 32,
    device: str | torch.device = "cpu",
) -> list[dict]:
    """One row per (side, layer, key/value gate) over all pairs of ``data`` (see the module docstring)."""
    names = gate_names(model, data, device)
    rows = []
    for layer in dict.fromkeys(name.rsplit(".", 1)[0] for name in names):
        _, states = extract_states(
            model, data, [f"{layer}.key_gate", f"{layer}.value_gate"], batch_size, device
        )
        rows += [gate_row(name, states[name], variant) for name in names if name in states]
    return rows
