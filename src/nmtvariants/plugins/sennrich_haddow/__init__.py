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

from dataclasses import dataclass
from typing import Any

from nmtvariants.errors import ConfigError
from nmtvariants.models.variants import PluginInputs, declare_variant, is_int, plugin_options
from nmtvariants.syntax.dep_labels import STREAM, UD_RELATIONS

KEY = "model.variant.sennrich_haddow"


@dataclass(frozen=True)
class TagEmbOptions:
    labels: int = len(UD_RELATIONS)
    dim: int = 10

    @classmethod
    def parse(cls, raw: Any, d_model: int) -> TagEmbOptions:
        options = plugin_options(cls, raw, KEY, "{labels: 37, dim: 10}")
        if not is_int(options.labels) or options.labels < 1:
            raise ConfigError(
                f"{KEY}.labels: the label inventory size, a positive integer, got {options.labels!r}"
            )
        if not is_int(options.dim) or not 1 <= options.dim < d_model:
            raise ConfigError(
                f"{KEY}.dim: an integer in [1, {d_model}) (d_model {d_model}), got {options.dim!r}"
            )
        return options


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


declare_variant("sennrich_haddow", f"{__name__}.modules:install_sennrich_haddow", inputs=label_stream)
