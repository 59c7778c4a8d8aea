"""Incremental-decoding state whose self-attention keys and values are never reordered.

Beam search reorders its hypotheses at every step. The usual cache follows them by copying every
layer's keys and values into the new row order (``index_select``): with 64 sentences x 5 beams, d 256
and 3 layers that rewrites ~30 MB per step, as much memory traffic as the attention itself and
~15% of a CPU decoding step (benchmarks/decode.py).

Here the keys and values stay where they were written. Each sentence's ``g`` beams share one block,
laid out ``[sentence, head, position * g + slot, d_head]``, and an *ancestry* table records, for
each live hypothesis and each earlier position, the slot in which its ancestor wrote that position's
key. Reordering beams only reorders the small ancestry table. Attention then scores the query
against all ``g`` slots of every position of its sentence (g times the score work, which is small
next to the projections), picks the ancestor's score per position with a gather, and spreads the
softmax weights back onto the slots with a scatter before the value product. The result equals
attention over the ancestor's own keys exactly (same products, same sums). On the CPU a native
kernel (:mod:`.beam_attention`) reads the ancestors' keys and values where they lie instead, for one
new position per row: a g-th of the products, no gather or scatter.

Contract: :meth:`DecoderCache.reorder` must keep every row within its sentence's group of ``g`` rows,
which is what beam search does; with ``g == 1`` any row order is allowed (the rows are copied).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from nmtvariants.models.attention import future_mask
from nmtvariants.models.beam_attention import attend_ancestors


class BeamAncestry:
    """For each live row and position: the slot (0..g-1) that holds its ancestor's key there."""

    def __init__(self, group: int, positions: int = 0) -> None:
        self.group = group
        self.positions = positions  # the first allocation's capacity: a decode's known length
        self.slots: torch.Tensor | None = None  # [sentences, g, capacity] long
        self.length = 0

    def advance(self, rows: int, new: int, device: torch.device) -> None:
        """Register ``new`` positions written by every row into its own slot."""
        g = self.group
        sentences = rows // g
        end = self.length + new
        if self.slots is None or end > self.slots.size(2):
            capacity = max(end, self.positions if self.slots is None else 2 * self.slots.size(2), 16)
            grown = torch.empty((sentences, g, capacity), dtype=torch.long, device=device)
            if self.slots is not None:
                grown[:, :, : self.length] = self.slots[:, :, : self.length]
            self.slots = grown
        self.slots[:, :, self.length : end] = torch.arange(g, device=device)[None, :, None]
        self.length = end

    def reorder(self, index: torch.Tensor) -> None:
        """New row ``r`` continues old row ``index[r]`` (of the same sentence)."""
        if self.slots is None:
            return
        g, n = self.group, self.length
        parent = index.view(-1, g) % g  # rows are ``sentence * g + slot``
        self.slots[:, :, :n] = self.slots[:, :, :n].gather(1, parent[:, :, None].expand(-1, -1, n))

    def select(self, keep: torch.Tensor) -> None:
        """Keep the sentences ``keep``."""
        if self.slots is not None:
            self.slots = self.slots.index_select(0, keep)


class LayerCache:
    """One decoder layer's self-attention keys/values and per-memory cross-attention keys/values."""

    def __init__(self, ancestry: BeamAncestry) -> None:
        self.ancestry = ancestry
        self.k: torch.Tensor | None = None  # [sentences, H, capacity * g, d_head]
        self.v: torch.Tensor | None = None
        self.length = 0
        self.cross: list[tuple[torch.Tensor, torch.Tensor]] | None = None

    @property
    def group(self) -> int:
        return self.ancestry.group

    def append(self, k: torch.Tensor, v: torch.Tensor) -> None:
        """Store new keys/values [rows, H, T, d_head] in the rows' own slots."""
        rows, heads, new, d_head = k.shape
        g = self.group
        end = self.length + new
        if self.k is None or end * g > self.k.size(2):
            capacity = max(end, self.ancestry.positions if self.k is None else 2 * (self.k.size(2) // g), 16)
            shape = (rows // g, heads, capacity * g, d_head)
            grown_k, grown_v = k.new_empty(shape), v.new_empty(shape)
            if self.k is not None:
                grown_k[:, :, : self.length * g] = self.k[:, :, : self.length * g]
                grown_v[:, :, : self.length * g] = self.v[:, :, : self.length * g]
            self.k, self.v = grown_k, grown_v
        for cached, fresh in ((self.k, k), (self.v, v)):
            block = cached[:, :, self.length * g : end * g].view(rows // g, heads, new, g, d_head)
            block.copy_(fresh.view(rows // g, g, heads, new, d_head).permute(0, 2, 3, 1, 4))
        self.length = end

    def _flat_slots(self) -> torch.Tensor:
        """[sentences, g, n]: the key-axis index ``position * g + slot`` of each row's ancestor."""
        n, g = self.length, self.group
        positions = torch.arange(n, device=self.k.device) * g
        return self.ancestry.slots[:, :, :n] + positions

    def attend(self, q: torch.Tensor) -> torch.Tensor:
        """Attention of queries [rows, H, T, d_head] (the last T positions) over each row's own past."""
        native = attend_ancestors(q, self.k, self.v, self.ancestry.slots, self.length)
        if native is not None:  # one new position: only the ancestors' keys (models/beam_attention.py)
            return native
        rows, heads, new, d_head = q.shape
        g, n = self.group, self.length
        sentences = rows // g
        keys = self.k[:, :, : n * g]
        values = self.v[:, :, : n * g]
        q = (
            q.view(sentences, g, heads, new, d_head)
            .transpose(1, 2)
            .reshape(sentences, heads, g * new, d_head)
        )
        scores = torch.matmul(q * (1.0 / math.sqrt(d_head)), keys.transpose(-1, -2))  # [S, H, g*T, n*g]
        if g > 1:
            scores = scores.view(sentences, heads, g, new, n, g)
            slots = self.ancestry.slots[:, None, :, None, :n, None].expand(-1, heads, -1, new, -1, -1)
            scores = scores.gather(5, slots).squeeze(5)  # [S, H, g, T, n]
        else:
            scores = scores.view(sentences, heads, g, new, n)
        if new > 1:  # several new positions at once: each sees the past and itself
            scores = scores.masked_fill(future_mask(new, n, q.device), float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        if g > 1:
            spread = weights.new_zeros(sentences, heads, g, new, n, g)
            weights = spread.scatter_(5, slots, weights.unsqueeze(5))
        weights = weights.view(sentences, heads, g * new, n * g)
        out = torch.matmul(weights, values)  # [S, H, g*T, d_head]
        return out.view(sentences, heads, g, new, d_head).transpose(1, 2).reshape(rows, heads, new, d_head)

    def row_keys_values(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Every row's own keys/values [rows, H, n, d_head] (materialised; for the explicit path)."""
        n, g = self.length, self.group
        sentences, heads, _, d_head = self.k.shape
        index = self._flat_slots().view(sentences, 1, g * n, 1).expand(-1, heads, -1, d_head)
        out = []
        for cached in (self.k, self.v):
            picked = cached[:, :, : n * g].gather(2, index).view(sentences, heads, g, n, d_head)
            out.append(picked.transpose(1, 2).reshape(sentences * g, heads, n, d_head))
        return out[0], out[1]

    def copy_rows(self, index: torch.Tensor) -> None:
        """Rows follow ``index`` by copying (``g == 1`` only: sentences are rows)."""
        if self.k is not None:
            self.k, self.v = self.k.index_select(0, index), self.v.index_select(0, index)

    def select(self, keep: torch.Tensor) -> None:
        """Keep the sentences ``keep`` (self- and cross-attention)."""
        if self.k is not None:
            self.k, self.v = self.k.index_select(0, keep), self.v.index_select(0, keep)
        if self.cross is not None:
            self.cross = [(k.index_select(0, keep), v.index_select(0, keep)) for k, v in self.cross]


@dataclass
class DecoderCache:
    """State of incremental decoding: feed only new positions to ``Transformer.decode``.

    ``group``: decoder rows per memory row. Beam search keeps the memory (and its cross-attention K/V)
    at one row per sentence and sets ``group`` to the beam size; the beams of a sentence are adjacent.
    """

    ancestry: BeamAncestry
    layers: list[LayerCache] = field(default_factory=list)
    position: int = 0

    @classmethod
    def for_layers(cls, n_layers: int, group: int = 1, positions: int = 0) -> DecoderCache:
        """``positions``: how many the decode will write at most, if known: the keys and values are
        then allocated once at that size instead of grown by doubling (which held up to twice the
        positions, and both copies while growing)."""
        ancestry = BeamAncestry(group, positions)
        return cls(ancestry, [LayerCache(ancestry) for _ in range(n_layers)])

    @property
    def group(self) -> int:
        return self.ancestry.group

    def advance(self, rows: int, new: int, device: torch.device) -> None:
        """Called once per decoding call, before the layers append ``new`` positions."""
        self.ancestry.advance(rows, new, device)

    def reorder(self, index: torch.Tensor) -> None:
        """Select decoder rows (beam reordering), within each sentence's group when ``group > 1``."""
        if self.group == 1:
            for layer in self.layers:
                layer.copy_rows(index)
        else:
            self.ancestry.reorder(index)

    def select_memory(self, index: torch.Tensor) -> None:
        """Keep the sentences (memory rows) ``index``, with all their rows."""
        for layer in self.layers:
            layer.select(index)
        self.ancestry.select(index)
