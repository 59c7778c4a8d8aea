"""PASCAL: parent-scaled self-attention (Bugliarello & Okazaki 2020, §2), a parameter-free encoder plug-in.

Spelling: ``--variant '{"pascal": {}}'`` or with options ``{"layer": 1, "heads": 2, "variance": 1.0,
"parent_only": false, "q": 0.4}``.

In encoder layer ``layer`` the first ``heads`` heads weight each query's scaled scores by the
distance of every key from the query token's dependency parent (eqs 1-3)::

    S^h = Q^h K^hT / sqrt(d)               (the scores the ``score_transform`` seam sees)
    N^h_tj = S^h_tj * D_tj,   D_tj = N(j; p_t, sigma^2) = exp(-(j - p_t)^2 / (2 sigma^2)) / sqrt(2 pi sigma^2)

before masking and softmax, then softmax over j and the values as in any head. The other heads and
layers are untouched. ``p_t`` is the middle subword position of token t's parent
(:mod:`nmtvariants.syntax.parents`), read from the ``parents_x2`` aux stream (:data:`PARENTS_STREAM`:
2 x the position, integers, so half positions are exact; ``</s>`` points to itself). The plug-in
declares the stream (:data:`INPUTS`), so a run of the workflow reads it without its config saying so.

Options and defaults (the paper's):

* ``layer`` (1): 1-based encoder layer, as in the paper ("the first layer"; Table 3a ablates 1-6).
* ``heads`` (null = all H heads of the layer): how many heads are PASCAL heads, the first ones.
  The paper's §2 describes a PASCAL sub-layer "with the same number H of attention heads as other
  layers" whose heads replace the standard ones; the authors' scripts tune the count per task
  (NC11 EN-DE 2, DE-EN 8, WMT16 5, WMT17 7, WMT18 EN-TR 7, WAT EN-JA 7 of 8) and the experiment
  configs set it.
* ``variance`` (1.0): sigma^2 of the Normal (the authors' ``--pascal-weight-param`` is the standard
  deviation; with 1 the two agree).
* ``parent_only`` (false): Table 3b's "parent-only" row, where only the parent keeps its score:
  ``D_tj = 1`` where ``|j - p_t| < 1`` (the parent token; both middle tokens of an even span), else 0.
  This is the authors' unused ``uniform`` window with width 0. ``variance`` does not apply then.
* ``q`` (0.0): parent ignoring. During training only, each (sentence, PASCAL head, query) row of D
  is replaced by ones with probability q, i.e. that query's scores are left unscaled.

Where this follows the paper rather than the published code (seed brief §2.1): every sentence's
PASCAL heads use that sentence's own parents (the code scales the wrong rows whenever heads < H), and
parents are aligned with the right-padded tokens (the code pads tokens left and parents right).
Padding: keys at padding are masked after the transform as in every head; query rows at padding
(AUX_PAD in the stream) keep their scores unscaled, so they stay finite and never turn to NaN.

The distances are computed over key positions j = 0 .. T-1 of the padded batch, which are sentence
positions because sources are right-padded. Since D only depends on positions, it adds no parameters
(``nmtvariants count-params`` prints the same number with and without it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nmtvariants.errors import ConfigError
from nmtvariants.models.variants import PluginInputs, declare_variant, is_int, is_number, plugin_options
from nmtvariants.syntax.parents import MIDDLE_STREAM

KEY = "model.variant.pascal"
PARENTS_STREAM = MIDDLE_STREAM
# Training, validation and translation all read the parents (the workflow's data settings follow).
INPUTS = PluginInputs(
    aux=(PARENTS_STREAM,),
    made_by="`nmtvariants parents --mode middle` on the parsed source, rule bugliarello2020_parents",
)


@dataclass(frozen=True)
class PascalOptions:
    layer: int = 1
    heads: int | None = None
    variance: float = 1.0
    parent_only: bool = False
    q: float = 0.0

    @classmethod
    def parse(cls, raw: Any) -> PascalOptions:
        """Validate the variant's options; every error names the offending key."""
        options = plugin_options(cls, raw, KEY, "{layer: 1, heads: 2}")
        if not is_int(options.layer) or options.layer < 1:
            raise ConfigError(f"{KEY}.layer: a 1-based encoder layer number, got {options.layer!r}")
        if options.heads is not None and (not is_int(options.heads) or options.heads < 1):
            raise ConfigError(
                f"{KEY}.heads: a positive number of heads (or null for all), got {options.heads!r}"
            )
        if not isinstance(options.parent_only, bool):
            raise ConfigError(f"{KEY}.parent_only: must be true or false, got {options.parent_only!r}")
        if not is_number(options.variance) or not options.variance > 0:
            raise ConfigError(f"{KEY}.variance: a positive sigma^2, got {options.variance!r}")
        if options.parent_only and "variance" in raw:
            raise ConfigError(f"{KEY}: parent_only replaces the Normal; drop variance or parent_only")
        if not is_number(options.q) or not 0.0 <= options.q <= 1.0:
            raise ConfigError(f"{KEY}.q: a parent-ignoring probability in [0, 1], got {options.q!r}")
        return options


declare_variant("pascal", f"{__name__}.modules:install_pascal", inputs=INPUTS)
