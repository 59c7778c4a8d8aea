"""Sennrich & Haddow's modules (torch): the label embedding and its installer; the plug-in's
declaration and options are its package's (torch-free, read when a config is checked)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from nmtvariants.errors import ConfigError, InputError
from nmtvariants.models.variants import init_plugin_parameters
from nmtvariants.plugins.sennrich_haddow import KEY, STREAM, TagEmbOptions

if TYPE_CHECKING:
    from nmtvariants.models.transformer import Transformer


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
