"""LISA (Strubell et al. 2018) as Bugliarello & Okazaki adapt it to subwords: one supervised parent head.

Spelling: ``--variant '{"lisa": {}}'`` or with options ``{"layer": 1, "head": 1, "weight": 1.0}``.
One head of one encoder self-attention is trained to attend from each source token to its parent's
*first subword* (the paper: "the root of the parent word"; seed brief §2.4). The auxiliary loss is the
cross-entropy of that head's attention over the keys, per query token, on its logits:

    loss = - sum_{b, t real} log softmax_j(S[b, h, t, j] with padded keys j masked)[parent[b, t]]

with ``S`` the head's scaled scores ``q k^T / sqrt(d_h)`` (what the softmax sees), summed over the
real source tokens of the batch, ``</s>`` included (its parent is itself: the position-stream rule of
:mod:`nmtvariants.data.extra_inputs`; the authors left-pad, so their "EOS -> T-1" is also the EOS
itself). It enters the objective as ``weight * loss`` through ``model.aux_losses`` under the name
``lisa_parent`` (the trainer divides by the update's target-token count, like the label-smoothed NMT
loss, and logs it as ``aux_lisa_parent``). The head's attention itself is the ordinary softmax of those
scores, so the supervised head is used in training and at test time alike (the authors' ``--gold-parses 0``).

Options (every error names its key, ``model.variant.lisa.<key>``):

* ``layer`` (1): 1-based encoder layer, as the PASCAL plug-in counts (the authors' ``--encoder-lisa-layer 0``
  is 0-based: the first layer, which is our default).
* ``head`` (1): 1-based head of that layer (the authors replace head 0, the first one).
* ``weight`` (1.0): the loss weight (the authors' ``--parse-penalty 1.0``).

The parents come from the integer stream ``parents_first`` (:data:`STREAM`, the same name as
``nmtvariants.syntax.parents.FIRST_STREAM``, written by ``nmtvariants parents --mode first``): one
0-based BPE position per token. It is read only while the auxiliary loss is being recorded (training
and validation forwards): translation and scoring need no parse.

Why the ``score_transform`` seam and not the attention recorder: the seam sees the scaled scores of the
forward that is being trained, before masking, inside the autograd graph, whether or not anything is
being captured; the recorder stores softmax weights (log of a softmax is numerically worse than a
log-softmax of the logits, and -inf at masked keys) and is meant for analysis. The transform returns
the scores unchanged, so the model computes exactly what the baseline computes.

Where we differ from the authors' fairseq code (seed brief §2.4, open question 5):

* Their syntactic head is a separate bilinear scorer (LeakyReLU projections to d_l = 64 and a
  (d_l + 1) x d_l matrix U) whose softmax *replaces* head 0's weights; we supervise the scaled
  dot-product scores of an ordinary head, as the task brief asks (no new parameters: the parameter
  count equals the baseline's). The loss, targets and placement are theirs.
* Their ``F.cross_entropy(A_lisa, heads)`` takes the queries axis as the class axis and is applied to
  softmax outputs, with no key-padding mask; we compute the intended per-query cross-entropy over keys
  on the logits, padded keys masked, padded queries excluded.
* Their criterion averages the parse CE (``F.cross_entropy``'s mean) before adding it to a summed NMT
  loss; we sum it over source tokens like the NMT loss is summed over target tokens, so both are divided
  by the same target-token count (the AuxLosses contract).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from nmtvariants.errors import ConfigError, InputError
from nmtvariants.models.interfaces import AUX_PAD, AuxLosses, StackContext
from nmtvariants.models.variants import register_variant

if TYPE_CHECKING:
    from nmtvariants.models.transformer import Transformer

KEY = "model.variant.lisa"
STREAM = "parents_first"
TERM = "lisa_parent"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class LisaOptions:
    layer: int = 1
    head: int = 1
    weight: float = 1.0

    @classmethod
    def parse(cls, raw: Any) -> LisaOptions:
        """Validate the variant's options; every error names the offending key."""
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise ConfigError(f"{KEY}: expected a mapping like {{layer: 1, head: 1}}, got {raw!r}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(raw) - set(known))
        if unknown:
            raise ConfigError(f"{KEY}: unknown option(s) {', '.join(unknown)}; known: {', '.join(known)}")
        options = cls(**raw)
        for name in ("layer", "head"):
            value = getattr(options, name)
            if not _is_int(value) or value < 1:
                raise ConfigError(f"{KEY}.{name}: a 1-based {name} number, got {value!r}")
        weight = options.weight
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not weight >= 0:
            raise ConfigError(f"{KEY}.weight: a number >= 0, got {weight!r}")
        return options


def parent_cross_entropy(logits: torch.Tensor, parents: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
    """Summed cross-entropy of one head's logits [B, T, T] (query, key) against ``parents`` [B, T].

    Padded keys (``pad_mask`` [B, T], True at padding) get no probability; query rows whose parent is
    AUX_PAD (padding) add nothing. Computed in at least float32 whatever the compute dtype.
    """
    scores = logits.to(torch.promote_types(logits.dtype, torch.float32)).masked_fill(
        pad_mask[:, None, :], float("-inf")
    )
    log_probs = torch.log_softmax(scores, dim=-1)
    real = parents.ne(AUX_PAD)
    picked = log_probs.gather(-1, parents.clamp(min=0).long().unsqueeze(-1)).squeeze(-1)
    return -torch.where(real, picked, torch.zeros_like(picked)).sum()


class ParentHeadLoss(nn.Module):
    """The ``score_transform`` of the LISA layer: records the parent loss, returns the scores unchanged."""

    def __init__(self, head: int, weight: float, losses: AuxLosses):
        super().__init__()
        self.head = head  # 0-based here
        self.weight = weight
        self.losses = losses  # the model's recorder (not a module: no parameters, no state)

    def forward(self, scores: torch.Tensor, ctx: StackContext, attn: nn.Module) -> torch.Tensor:
        if not self.losses.active:  # decoding and scoring: no parse needed
            return scores
        parents = ctx.aux.get(STREAM)
        if parents is None:
            raise InputError(
                f"variant lisa ({attn.name}): training needs the integer stream {STREAM!r} (first-subword "
                f"parent positions: `nmtvariants parents --mode first`), given as data.train_aux / "
                f"data.valid_aux {{{STREAM}: FILE}}"
            )
        batch, _, queries, keys = scores.shape
        if tuple(parents.shape) != (batch, queries) or queries != keys or ctx.pad_mask is None:
            raise ValueError(
                f"lisa: parents {tuple(parents.shape)} vs self-attention scores {tuple(scores.shape)}"
            )
        self.losses.add(TERM, parent_cross_entropy(scores[:, self.head], parents, ctx.pad_mask), self.weight)
        return scores


@register_variant("lisa")
def install_lisa(model: Transformer, raw: Any) -> None:
    """Put a :class:`ParentHeadLoss` into the ``score_transform`` seam of the chosen encoder layer."""
    options = LisaOptions.parse(raw)
    layers = len(model.encoder_layers)
    if options.layer > layers:
        raise ConfigError(f"{KEY}.layer: {options.layer} but the encoder has {layers} layer(s)")
    attn = model.encoder_layers[options.layer - 1].self_attn.attn
    if options.head > attn.n_heads:
        raise ConfigError(f"{KEY}.head: {options.head} but the layer has {attn.n_heads} head(s)")
    if attn.score_transform is not None:
        raise ConfigError(
            f"{KEY}.layer: {attn.name} already has a score transform from another variant; "
            "put LISA in another layer"
        )
    attn.score_transform = ParentHeadLoss(options.head - 1, float(options.weight), model.aux_losses)
