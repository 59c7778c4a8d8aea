"""Sennrich & Haddow (2016) linguistic input features, as Bugliarello & Okazaki ran them ("TagEmb").

Spelling: ``--variant '{"sennrich_haddow": {}}'`` or ``{"labels": 37, "dim": 10}``.

The authors' ``tagemb_transformer.py`` (seed brief §2.6; ``x[:, :, -dim:] = embed_tags(src_tags)`` on
``x = sqrt(d) * embed_tokens(src_tokens)``, then ``x += embed_positions``) combines each source
token's word embedding with an embedding of its word's dependency relation by **overwriting the last
``dim`` (10) dimensions** of the scaled word embedding with the label embedding, which is *not*
scaled; the positions are added afterwards and the width stays d_model:

    x_t = [ sqrt(d) * E_word[w_t][: d - dim] ; E_label[l_t] ] + PE_t

This is Sennrich & Haddow's concatenation of a reduced word embedding with a small feature embedding
(their eq. 1 with one feature), with the word part taken from the shared table rather than from a
smaller one. It runs in the embedder's ``feature_transform`` seam (after the sqrt(d) scaling, before the
positions: :class:`nmtvariants.models.interfaces.EmbeddingTransform`), on the source embedder only.

Options (errors name ``model.variant.sennrich_haddow.<key>``):

* ``labels`` (37): size L of the label inventory, ids 0..L-1; the table has L + 1 rows because the data
  path gives ``</s>`` the label L (a label stream: the run config needs ``data.aux_labels:
  {dep_labels: L}``, which the plug-in declares: :func:`label_stream`). The default is the size of
  :data:`nmtvariants.syntax.dep_labels.UD_RELATIONS`, which ``nmtvariants dep-labels`` writes.
* ``dim`` (10): the label embedding's width (the authors' ``--tag-embed-dim 10``), 1 <= dim < d_model.

The label stream ``dep_labels`` is an *input*: training, translation and scoring all need it
(``--aux dep_labels=FILE``). New parameters: the (L + 1) x dim label table, Glorot-initialised (the
house rule; the authors' fairseq ``Embedding`` draws N(0, dim^-1/2) and zeroes its padding row, and its
label dictionary is built from the data rather than a fixed inventory).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from nmtvariants.errors import ConfigError, InputError
from nmtvariants.models.variants import PluginInputs, init_plugin_parameters, register_variant
from nmtvariants.syntax.dep_labels import STREAM, UD_RELATIONS

if TYPE_CHECKING:
    from nmtvariants.models.transformer import Transformer

KEY = "model.variant.sennrich_haddow"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class TagEmbOptions:
    labels: int = len(UD_RELATIONS)
    dim: int = 10

    @classmethod
    def parse(cls, raw: Any, d_model: int) -> TagEmbOptions:
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise ConfigError(f"{KEY}: expected a mapping like {{labels: 37, dim: 10}}, got {raw!r}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(raw) - set(known))
        if unknown:
            raise ConfigError(f"{KEY}: unknown option(s) {', '.join(unknown)}; known: {', '.join(known)}")
        options = cls(**raw)
        if not _is_int(options.labels) or options.labels < 1:
            raise ConfigError(
                f"{KEY}.labels: the label inventory size, a positive integer, got {options.labels!r}"
            )
        if not _is_int(options.dim) or not 1 <= options.dim < d_model:
            raise ConfigError(
                f"{KEY}.dim: an integer in [1, {d_model}) (d_model {d_model}), got {options.dim!r}"
            )
        return options


class LabelEmbedding(nn.Module):
    """The embedder's ``feature_transform``: the last ``dim`` dimensions become the label embedding."""

    def __init__(self, labels: int, dim: int, factory: dict[str, Any]):
        super().__init__()
        self.labels = labels
        self.table = nn.Embedding(labels + 1, dim, **factory)  # + the </s> label
        init_plugin_parameters(self)

    def forward(
        self, embedded: torch.Tensor, tokens: torch.Tensor, aux: Mapping[str, torch.Tensor]
    ) -> torch.Tensor:
        labels = aux.get(STREAM)
        if labels is None:
            raise InputError(
                f"variant sennrich_haddow: needs the label stream {STREAM!r} aligned with the source "
                f"(`nmtvariants dep-labels`; data.train_aux / data.valid_aux {{{STREAM}: FILE}} with "
                f"data.aux_labels {{{STREAM}: {self.labels}}}, or --aux {STREAM}=FILE)"
            )
        if labels.shape != tokens.shape:
            raise ValueError(f"sennrich_haddow: labels {tuple(labels.shape)} vs tokens {tuple(tokens.shape)}")
        if int(labels.max()) > self.labels:  # one host sync per batch, against a silent wrong label
            raise InputError(
                f"variant sennrich_haddow: label id {int(labels.max())} > {self.labels} (the model's "
                f"labels option; {self.labels} is </s>); data.aux_labels {STREAM} must equal it"
            )
        tags = self.table(labels.clamp(min=0)).to(embedded.dtype)  # padding (AUX_PAD): any row, masked later
        return torch.cat([embedded[..., : embedded.size(-1) - tags.size(-1)], tags], dim=-1)


def label_stream(raw: Any) -> PluginInputs:
    """The label stream, with the count the label table is built for: the ``labels`` option, whose
    default is the UD relation inventory that ``nmtvariants dep-labels`` writes. A count that differed
    from the model's would give ``</s>`` an ordinary label's row, silently."""
    labels = raw.get("labels", TagEmbOptions.labels) if isinstance(raw, dict) else TagEmbOptions.labels
    return PluginInputs(
        aux=(STREAM,),
        labels={STREAM: labels},
        made_by="`nmtvariants dep-labels` on the parsed source, rule bugliarello2020_dep_labels",
    )


@register_variant("sennrich_haddow", inputs=label_stream)
def install_sennrich_haddow(model: Transformer, raw: Any) -> None:
    """Put a :class:`LabelEmbedding` into the source embedder's ``feature_transform`` seam."""
    options = TagEmbOptions.parse(raw, model.cfg.d_model)
    if model.src_embed.feature_transform is not None:
        raise ConfigError(f"{KEY}: the source embedder already has a feature transform from another variant")
    if model.multi_source.sources > 1:
        raise ConfigError(
            f"{KEY}: label features follow the first source only, but the source embedder is shared by "
            f"{model.multi_source.sources} text sources"
        )
    reference = model.output_weight
    factory = {"device": reference.device, "dtype": reference.dtype}
    model.src_embed.feature_transform = LabelEmbedding(options.labels, options.dim, factory)
