"""LISA's modules (torch): the supervised parent head, its loss and its installer; the plug-in's
declaration and options are its package's (torch-free, read when a config is checked)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import nn

from nmtvariants.errors import ConfigError, InputError
from nmtvariants.models.interfaces import AUX_PAD, AuxLosses, StackContext
from nmtvariants.models.variants import init_plugin_parameters
from nmtvariants.plugins.lisa import KEY, STREAM, TERM, LisaOptions

if TYPE_CHECKING:
    from nmtvariants.models.transformer import Transformer


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


class BilinearScorer(nn.Module):
    """Strubell et al.'s syntactic head as the authors built it: ``[a_q ; 1] U a_k^T`` [B, T, T]."""

    def __init__(self, d_model: int, dim: int, factory: dict[str, Any]):
        super().__init__()
        self.proj = nn.Linear(d_model, 2 * dim, **factory)
        self.bilinear = nn.Parameter(torch.empty(dim + 1, dim, **factory))
        init_plugin_parameters(self)
        nn.init.xavier_uniform_(self.bilinear)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a_q, a_k = F.leaky_relu(self.proj(x)).chunk(2, dim=-1)
        a_q = torch.cat([a_q, torch.ones_like(a_q[..., :1])], dim=-1)
        return torch.matmul(torch.matmul(a_q, self.bilinear.to(a_q.dtype)), a_k.transpose(-1, -2))


class ParentHeadLoss(nn.Module):
    """The ``score_transform`` of the LISA layer: puts the bilinear logits into the head (if any) and,
    while losses are recorded, adds the parent loss on the head's logits."""

    def __init__(self, head: int, weight: float, losses: AuxLosses, scorer: BilinearScorer | None):
        super().__init__()
        self.head = head  # 0-based here
        self.weight = weight
        self.losses = losses  # the model's recorder (not a module: no parameters, no state)
        self.scorer = scorer
        self._query_input: torch.Tensor | None = None

    def remember_query_input(self, attn: nn.Module, args: tuple, kwargs: dict) -> None:
        """Forward pre-hook of the attention: its first argument is the query input [B, T, d]."""
        self._query_input = args[0] if args else kwargs["query_input"]

    def forward(self, scores: torch.Tensor, ctx: StackContext, attn: nn.Module) -> torch.Tensor:
        if self.scorer is not None:
            x, self._query_input = self._query_input, None
            if x is None or x.shape[0] != scores.size(0) or x.shape[1] != scores.size(-2):
                raise RuntimeError(
                    f"lisa ({attn.name}): the bilinear head did not see this attention's input"
                )
            logits = self.scorer(x).to(scores.dtype)
            h = self.head
            scores = torch.cat([scores[:, :h], logits[:, None], scores[:, h + 1 :]], dim=1)
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
    scorer = None
    if options.scorer == "bilinear":
        reference = model.output_weight
        factory = {"device": reference.device, "dtype": reference.dtype}
        scorer = BilinearScorer(model.cfg.d_model, options.dim or attn.d_head, factory)
    transform = ParentHeadLoss(options.head - 1, float(options.weight), model.aux_losses, scorer)
    if scorer is not None:
        attn.register_forward_pre_hook(transform.remember_query_input, with_kwargs=True)
    attn.score_transform = transform
