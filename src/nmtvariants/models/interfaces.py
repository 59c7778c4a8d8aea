"""The types that cross module boundaries inside the model and out of it (a leaf: imports only torch).

* :class:`SourceInputs`: everything the encoders read for one batch (several token sequences,
  per-token integer streams aligned with the first, a dense feature grid). Batching builds it,
  the trainer, beam search and the scorer pass it to ``Transformer.encode_inputs``.
* :class:`Memory`: what the decoder attends to, one per encoder.
* :class:`StackContext`: what one pass through a stack shares with the plug-in seams.
* :class:`KVTransform`, :class:`ScoreTransform`, :class:`EmbeddingTransform`: the seams' protocols.
* :class:`AuxLosses`: where plug-ins put weighted auxiliary loss terms during a training forward.

Keeping them here, away from ``attention``, ``layers`` and ``transformer``, lets every module of
``models/`` import them at run time and under type checking without an import cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import torch

# The value of per-token integer streams at padding positions (a real stream value is >= 0, so a
# plug-in can tell padding from data without the token ids).
AUX_PAD = -1


@dataclass
class SourceInputs:
    """The encoder side of a batch.

    ``sources``: token ids [B, S_k] per source (``tokens + </s>``, right-padded with PAD_ID); the
    first is *the* source of a single-source model. ``aux``: integer streams [B, S_0] aligned 1:1
    with ``sources[0]`` (AUX_PAD at padding), e.g. ``parents`` for PASCAL. ``features``: a dense
    grid [B, R, C] per sentence (image regions x channels), or None.
    """

    sources: list[torch.Tensor]
    aux: dict[str, torch.Tensor] = field(default_factory=dict)
    features: torch.Tensor | None = None

    @classmethod
    def of(
        cls, src: torch.Tensor | SourceInputs, aux: Mapping[str, torch.Tensor] | None = None
    ) -> SourceInputs:
        """Accept a bare source tensor (single-source callers) or an existing SourceInputs."""
        if isinstance(src, SourceInputs):
            return src
        return cls(sources=[src], aux=dict(aux or {}))

    @property
    def src(self) -> torch.Tensor:
        return self.sources[0]

    @property
    def batch_size(self) -> int:
        return self.sources[0].size(0)

    def _map(self, fn) -> SourceInputs:
        return SourceInputs(
            sources=[fn(s) for s in self.sources],
            aux={name: fn(stream) for name, stream in self.aux.items()},
            features=None if self.features is None else fn(self.features),
        )

    def index_select(self, index: torch.Tensor) -> SourceInputs:
        """Rows ``index`` of every tensor (beam search dropping finished sentences)."""
        return self._map(lambda t: t.index_select(0, index.to(t.device)))

    def repeat_interleave(self, repeats: int) -> SourceInputs:
        """Each row ``repeats`` times in a row (one copy per beam)."""
        return self._map(lambda t: t.repeat_interleave(repeats, 0))

    def to(self, device: torch.device | str, non_blocking: bool = False) -> SourceInputs:
        return self._map(lambda t: t.to(device, non_blocking=non_blocking))


@dataclass
class Memory:
    """What the decoder attends to: encoder states [B, S, d] and a padding mask [B, S] (True at pads).

    ``embeddings`` keeps the encoder's embedding-layer output for variants that attend to it
    (dec-to-enc lexical shortcuts). ``causal``: query position t may attend only to memory positions
    <= t (a reconstruction probe reading decoder states must not see the token it predicts).
    """

    states: torch.Tensor
    pad_mask: torch.Tensor
    embeddings: torch.Tensor | None = None
    causal: bool = False

    def attend_mask(self, queries: int = 1, offset: int = 0) -> torch.Tensor:
        """Boolean [B, 1, Tq, S] (or [B, 1, 1, S] without ``causal``), True where attention is allowed;
        the queries are positions ``offset .. offset + queries - 1``."""
        attend = ~self.pad_mask[:, None, None, :]
        if not self.causal:
            return attend
        keys = self.pad_mask.size(1)
        query_pos = torch.arange(offset, offset + queries, device=self.pad_mask.device)
        allowed = torch.arange(keys, device=self.pad_mask.device)[None, :] <= query_pos[:, None]
        return attend & allowed[None, None]

    def index_select(self, index: torch.Tensor) -> Memory:
        return Memory(
            self.states.index_select(0, index),
            self.pad_mask.index_select(0, index),
            None if self.embeddings is None else self.embeddings.index_select(0, index),
            self.causal,
        )

    def repeat_interleave(self, repeats: int) -> Memory:
        return Memory(
            self.states.repeat_interleave(repeats, 0),
            self.pad_mask.repeat_interleave(repeats, 0),
            None if self.embeddings is None else self.embeddings.repeat_interleave(repeats, 0),
            self.causal,
        )


@dataclass
class StackContext:
    """What one pass through a stack (encoder, or decoder for some positions) shares with the seams.

    ``embeddings``: E for the positions computed in this pass [B, T, d]; ``history``: raw outputs
    [E, H_1, ..., H_{l-1}] of the layers computed so far (same positions); ``offset``: absolute position
    of the first query (non-zero in incremental decoding); ``pad_mask``: [B, T] True at padding (the keys
    of encoder self-attention); ``aux``: per-batch side inputs such as PASCAL parent positions.
    """

    side: str
    embeddings: torch.Tensor
    aux: Mapping[str, torch.Tensor] = field(default_factory=dict)
    history: list[torch.Tensor] = field(default_factory=list)
    offset: int = 0
    pad_mask: torch.Tensor | None = None
    layer: int = 0


class KVTransform(Protocol):
    def __call__(
        self,
        attn: torch.nn.Module,
        hidden: torch.Tensor,
        ctx: StackContext,
        *,
        layer_input: torch.Tensor | None,
        memory: Memory | None,
    ) -> tuple[torch.Tensor, torch.Tensor]: ...


class ScoreTransform(Protocol):
    def __call__(self, scores: torch.Tensor, ctx: StackContext, attn: torch.nn.Module) -> torch.Tensor: ...


class EmbeddingTransform(Protocol):
    """Seam inside the embedder, between the sqrt(d) scaling and the positions: combine the scaled word
    embeddings [B, T, d] with extra per-token features from ``aux`` (Sennrich & Haddow input features)."""

    def __call__(
        self, embedded: torch.Tensor, tokens: torch.Tensor, aux: Mapping[str, torch.Tensor]
    ) -> torch.Tensor: ...


class AuxLosses:
    """Auxiliary loss terms added by plug-ins during one training forward.

    A plug-in calls ``model.aux_losses.add(name, total, weight)`` with ``total`` a *sum* over the
    batch (like the main loss, which is summed over target tokens); the trainer scales every term
    by the same normaliser as the main loss (the update's target-token count), so delayed updates
    and DDP leave the objective unchanged. Terms are recorded only while ``active`` (training and
    validation forwards), so decoding never pays for them.
    """

    def __init__(self) -> None:
        self.active = False
        self.terms: dict[str, tuple[torch.Tensor, float]] = {}

    def add(self, name: str, total: torch.Tensor, weight: float = 1.0) -> None:
        if not self.active:
            return
        if name in self.terms:
            previous, _ = self.terms[name]
            total = previous + total
        self.terms[name] = (total, float(weight))

    def take(self) -> dict[str, tuple[torch.Tensor, float]]:
        """The terms recorded since the last call, cleared."""
        terms, self.terms = self.terms, {}
        return terms
