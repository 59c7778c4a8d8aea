"""Gate activation statistics per layer of a lexical-shortcut model (Emelin et al. 2019, issue #10).

How much each attention sub-layer draws from the embeddings: the gates ``r_K``, ``r_V`` of eqs 9-10
weigh the shortcut keys/values (``r``) against the layer's own (``1 - r``), element-wise over d. A mean
near 1 means the layer's keys/values are mostly the embeddings'.

The gates are the shortcut plug-in's records (``{attention}.key_gate`` / ``.value_gate``, [B, T, d]),
taken in eval mode (no dropout) under teacher forcing with padding excluded. Self-attention gates come
through :func:`~nmtvariants.analysis.extract.extract_states`, one layer at a time so that memory holds
one layer's gates only. Decoder-to-encoder gates (the ``cross_attention`` variant) gate the *source*
memory under a decoder name, which the extraction's per-side layout cannot hold; :func:`cross_gates`
collects them over the source positions. Every real position counts, ``</s>`` and ``<s>`` included
(attention uses their keys and values like any other). Statistics run over all gate elements
(positions x d) in float64.

CSV columns: ``variant``, ``side`` (encoder | decoder), ``layer`` (1-based, as in the similarity and
probe CSVs), ``attention`` (self | cross), ``gate`` (key | value), ``name`` (the capture name),
``mean``, ``std`` (population), ``above_half`` (fraction of elements > 0.5), ``positions`` (token
positions: the stack's own for self-attention, the source's for cross-attention), ``elements``.
"""

from __future__ import annotations

import re

import numpy as np
import torch

from nmtvariants.analysis.extract import cap_pairs, extract_states
from nmtvariants.data.batching import collate
from nmtvariants.data.dataset import ParallelData
from nmtvariants.errors import ConfigError
from nmtvariants.models.hooks import capture
from nmtvariants.models.interfaces import SourceInputs

COLUMNS = (
    "variant",
    "side",
    "layer",
    "attention",
    "gate",
    "name",
    "mean",
    "std",
    "above_half",
    "positions",
    "elements",
)
GATE = re.compile(r"(encoder|decoder)\.layers\.(\d+)\.(self|cross)\.(key|value)_gate")
SELF = ("*.self.key_gate", "*.self.value_gate")
CROSS = ("decoder.layers.*.cross.key_gate", "decoder.layers.*.cross.value_gate")


def self_gate_names(
    model: torch.nn.Module, data: ParallelData, device: str | torch.device = "cpu"
) -> list[str]:
    """The self-attention gate names the model records (a run over one pair; none: empty)."""
    try:
        _, states = extract_states(model, cap_pairs(data, max_sentences=1), SELF, device=device)
    except ConfigError:  # no name matches a pattern
        return []
    return [name for name in states if GATE.fullmatch(name)]


@torch.no_grad()
def cross_gates(
    model: torch.nn.Module, data: ParallelData, batch_size: int = 32, device: str | torch.device = "cpu"
) -> dict[str, np.ndarray]:
    """Decoder-to-encoder gates per name, [source positions, d] in (sentence, position) order."""
    was_training = model.training
    model.eval()
    pieces: dict[str, list[np.ndarray]] = {}
    try:
        for start in range(0, len(data), batch_size):
            rows = np.arange(start, min(start + batch_size, len(data)))
            batch = collate(data, rows).to(device)
            with capture(model, include=CROSS) as recorder:
                model.decode_states(batch.tgt_in, model.encode_inputs(SourceInputs.of(batch.src)))
            for name, records in recorder.records.items():
                values = records[0].float().cpu().numpy()
                for row, length in enumerate(data.src_lengths[rows]):
                    pieces.setdefault(name, []).append(values[row, :length])
    finally:
        model.train(was_training)
    return {name: np.concatenate(parts) for name, parts in pieces.items() if GATE.fullmatch(name)}


def gate_row(name: str, gates: np.ndarray, variant: str) -> dict:
    """Statistics of one gate's [positions, d] values."""
    match = GATE.fullmatch(name)
    assert match is not None
    values = gates.astype(np.float64)
    return {
        "variant": variant,
        "side": match[1],
        "layer": int(match[2]) + 1,
        "attention": match[3],
        "gate": match[4],
        "name": name,
        "mean": float(values.mean()),
        "std": float(values.std()),
        "above_half": float((values > 0.5).mean()),
        "positions": int(values.shape[0]),
        "elements": int(values.size),
    }


def _order(row: dict) -> tuple[bool, int, bool, str]:
    return row["side"] == "decoder", row["layer"], row["attention"] == "cross", row["gate"]


def gate_statistics(
    model: torch.nn.Module,
    data: ParallelData,
    variant: str = "",
    batch_size: int = 32,
    device: str | torch.device = "cpu",
) -> list[dict]:
    """One row per (side, layer, attention, key/value gate) over all pairs of ``data``, in that order."""
    if batch_size < 1:
        raise ConfigError(f"batch_size must be positive, got {batch_size}")
    names = self_gate_names(model, data, device)
    rows = []
    for attention in dict.fromkeys(name.rsplit(".", 1)[0] for name in names):
        _, states = extract_states(
            model, data, [f"{attention}.key_gate", f"{attention}.value_gate"], batch_size, device
        )
        rows += [gate_row(name, values, variant) for name, values in states.items()]
    rows += [
        gate_row(name, values, variant)
        for name, values in cross_gates(model, data, batch_size, device).items()
    ]
    if not rows:
        raise ConfigError(
            "the model records no shortcut gates; gate statistics need a shortcuts model "
            '(--variant \'{"shortcuts": {"kind": "lexical"}}\')'
        )
    return sorted(rows, key=_order)
