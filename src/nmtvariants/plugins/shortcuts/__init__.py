"""Lexical shortcuts (Emelin, Titov & Sennrich 2019): gated connections from the embeddings into attention.

Spelling: ``--variant '{"shortcuts": {"kind": "lexical"}}'`` (eqs 5-12) or ``{"kind": "feature_fusion"}``
(eqs 13-14). The defaults are the paper's main setting: self-attention shortcuts in encoder and decoder,
from the embeddings, with the authors' wiring. Options (all optional):

* ``kind``: ``lexical`` | ``feature_fusion``.
  - lexical: ``K_sc = E W^{K_sc}``, ``V_sc = E W^{V_sc}`` (new unbiased d x d maps, eqs 5-6) next to the
    layer's own ``K = H W^K``, ``V = H W^V`` (eqs 7-8); ``r = sigmoid(K_sc + K + b)`` element-wise over d
    with a d-sized bias per K and per V (eqs 9-10); ``K' = r * K_sc + (1 - r) * K`` (eqs 11-12).
  - feature_fusion: ``[K_sc | K] = [E; H] W^K`` and ``[V_sc | V] = [E; H] W^V`` with one unbiased
    2d x 2d map each, split into halves (first half = shortcut part, E first; eqs 13-14), replacing the
    layer's d x d key/value maps; the gate is eqs 9-12 unchanged.
* ``self_attention``: ``both`` | ``encoder`` | ``decoder`` | ``none``: which stacks' self-attention
  sub-layers get a shortcut (``encoder``/``decoder``: the ablations of the paper's Figure 5).
* ``cross_attention``: ``true`` adds shortcuts to decoder-to-encoder attention with E fixed to the
  *source* embeddings (``Memory.embeddings``) and H the encoder output (Table 4, "dec-to-enc"); with
  ``self_attention: none`` that variant alone, otherwise together with the self-attention shortcuts.
* ``source``: ``embeddings`` (lexical) | ``n_minus_2`` (non-lexical, Table 4): layer n takes the output
  of layer n-2 in place of E; layers 1 and 2 take the embeddings (footnote 5: nothing lies below them).
  This is the variant the paper describes; the published code selects it with a misspelt string and
  so builds plain lexical shortcuts instead (seed brief §1.4). The authors' intended module is the
  feature-fusion one: Table 4's row is ``{kind: feature_fusion, source: n_minus_2}``.
* ``wiring``: ``authors`` | ``pre_norm`` (matters only in pre-norm models, the default):
  - ``authors`` (the TF code, seed brief §1.2): H in eqs 7-8 is the sub-layer's raw, un-normalised input
    (the previous layer's output in the standard layout; in ``cross,self,ffn`` the cross-attention
    sub-layer's output), the queries come from LN(x), and every sub-layer that carries a
    shortcut adds LN(x) back as its residual, not x (``SubLayer.residual_from_normed``). That is
    neither pre-norm nor post-norm, but it is the model the paper's numbers come from.
  - ``pre_norm``: clean pre-norm: H is LN(x), the same input the baseline's keys and values see, and
    the residual adds x as in every other sub-layer.
  In cross-attention H is always the encoder output (which ends with the encoder's LayerNorm).

E is the embedding-layer output as the authors used it: sqrt(d)-scaled embeddings plus positions, after
embedding dropout (``StackContext.embeddings``, ``Memory.embeddings``). New weights are Glorot-uniform;
the gate biases too (the TF code's ``glorot_uniform_initializer`` on a [d] vector: limit sqrt(3/d)),
not zero. Gated keys and values are computed per position, so incremental decoding caches them like
ordinary keys and values (``DecoderCache``) and each position is gated once. The gates are recorded
as ``{attention name}.key_gate`` / ``.value_gate`` [B, T, d] under :func:`nmtvariants.models.capture`.

Parameters per gated attention: lexical 2d^2 + 2d, feature-fusion 6d^2 + 2d (Table 5: BASE 65,166K ->
71,470K and 84,053K; BIG 218,413K -> 293,935K). The paper trains them with warm-up 6000 (lexical) and
8000 (feature-fusion) instead of the baseline's 4000 (A.1); that belongs to the experiment's trainer config.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nmtvariants.errors import ConfigError
from nmtvariants.models.variants import declare_variant, plugin_options

KINDS = ("lexical", "feature_fusion")
STACKS = {"both": ("encoder", "decoder"), "encoder": ("encoder",), "decoder": ("decoder",), "none": ()}
SOURCES = ("embeddings", "n_minus_2")
WIRINGS = ("authors", "pre_norm")
KEY = "model.variant.shortcuts"


@dataclass(frozen=True)
class ShortcutOptions:
    kind: str = "lexical"
    self_attention: str = "both"
    cross_attention: bool = False
    source: str = "embeddings"
    wiring: str = "authors"

    @classmethod
    def parse(cls, raw: Any) -> ShortcutOptions:
        """Validate the variant's options; every error names the offending key."""
        options = plugin_options(cls, raw, KEY, "{kind: lexical}")
        for name, allowed in (
            ("kind", KINDS),
            ("self_attention", tuple(STACKS)),
            ("source", SOURCES),
            ("wiring", WIRINGS),
        ):
            if getattr(options, name) not in allowed:
                raise ConfigError(
                    f"{KEY}.{name}: must be one of {', '.join(allowed)}, got {getattr(options, name)!r}"
                )
        if not isinstance(options.cross_attention, bool):
            raise ConfigError(
                f"{KEY}.cross_attention: must be true or false, got {options.cross_attention!r}"
            )
        if options.self_attention == "none" and not options.cross_attention:
            raise ConfigError(f"{KEY}: self_attention none without cross_attention adds no shortcut")
        if options.source != "embeddings" and options.self_attention == "none":
            raise ConfigError(
                f"{KEY}.source: {options.source} applies to self-attention shortcuts only "
                "(decoder-to-encoder shortcuts always come from the source embeddings)"
            )
        return options

    @property
    def main_setting(self) -> bool:
        """Whether these are the paper's main shortcuts (self-attention on both sides, from the
        embeddings, none into decoder-to-encoder attention): the models its Tables 1-3 and 5 and its
        analyses report; the others are Table 4's and Figure 5's ablations."""
        return self.self_attention == "both" and not self.cross_attention and self.source == "embeddings"


declare_variant("shortcuts", f"{__name__}.modules:install_shortcuts")
