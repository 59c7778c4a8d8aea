"""LISA (Strubell et al. 2018) as Bugliarello & Okazaki adapt it to subwords: one supervised parent head.

Spelling: ``--variant '{"lisa": {}}'`` or with options ``{"layer": 1, "head": 1, "weight": 1.0,
"scorer": "bilinear", "dim": 64}``. One head of one encoder self-attention is trained to attend from
each source token to its parent's *first subword* (the paper: "the root of the parent word"; seed
brief §2.4). The auxiliary loss is the cross-entropy of that head's attention over the keys, per
query token, on its logits:

    loss = - sum_{b, t real} log softmax_j(S[b, h, t, j] with padded keys j masked)[parent[b, t]]

with ``S`` the head's logits (what its softmax sees), summed over the real source tokens of the
batch, ``</s>`` included (its parent is itself: the position-stream rule of
:mod:`nmtvariants.data.extra_inputs`; the authors left-pad, so their "EOS -> T-1" is also the EOS
itself). It enters the objective as ``weight * loss`` through ``model.aux_losses`` under the name
``lisa_parent`` (the trainer divides by the update's target-token count, like the label-smoothed NMT
loss, and logs it as ``aux_lisa_parent``). The head's attention is the ordinary (masked) softmax of
those logits, so the supervised head is used in training and at test time alike (the authors'
``--gold-parses 0``: no gold-parse teacher forcing).

Which logits (``scorer``):

* ``bilinear`` (default; the authors' ``multihead_lisa.py`` after Strubell et al.'s syntactic head): the
  head's scores are *replaced* by ``[a_q ; 1] U a_k^T`` with ``a_q, a_k = LeakyReLU(split(W x + b))``,
  ``W: d -> 2 dim``, ``U`` of shape ``(dim + 1) x dim`` (a query-side bias through the appended 1), not
  scaled; ``x`` is the attention's query input (LN(x) in pre-norm, the layer input in post-norm, as in
  the authors' post-norm fairseq model). The values stay the head's own V projection. New parameters:
  ``2 d dim + 2 dim + (dim + 1) dim``; ``dim`` defaults to d_head (the authors' ``--lisa-dim 64`` with
  d_head 64).
* ``dot``: the head keeps its scaled dot-product scores ``q k^T / sqrt(d_h)`` and only the loss is added:
  no new parameters, the model computes exactly what the baseline computes.

Options (every error names its key, ``model.variant.lisa.<key>``):

* ``layer`` (1): 1-based encoder layer, as the PASCAL plug-in counts (the authors' ``--encoder-lisa-layer 0``
  is 0-based: the first layer, which is our default).
* ``head`` (1): 1-based head of that layer (the authors replace head 0, the first one).
* ``weight`` (1.0): the loss weight (the authors' ``--parse-penalty 1.0``).
* ``scorer`` (``bilinear``) and ``dim`` (null = d_head; ``bilinear`` only): above.

The parents come from the integer stream ``parents_first`` (:data:`STREAM`, the same name as
``nmtvariants.syntax.parents.FIRST_STREAM``, written by ``nmtvariants parents --mode first``): one
0-based BPE position per token. It is read only while the auxiliary loss is being recorded (training
and validation forwards): translation and scoring need no parse.

Why the ``score_transform`` seam and not the attention recorder: the seam sees (and, for the bilinear
head, replaces) the logits of the forward that is being trained, before masking, inside the autograd
graph, whether or not anything is being captured; the recorder stores softmax weights (log of a
softmax is numerically worse than a log-softmax of the logits, and -inf at masked keys), cannot change
the scores, and is meant for analysis. The bilinear scorer reads the attention's query input through a
forward pre-hook on that attention (the seam passes the scores, not the input). A score transform
makes that one attention take the explicit-softmax path also when decoding (the encoder's layer, once
per sentence).

Where we differ from the authors' fairseq code (seed brief §2.4, open question 5):

* Their bilinear head attends over padded keys too; ours is masked like every head.
* Their ``U`` is created after ``reset_parameters`` runs and is never initialised (``torch.Tensor(...)``,
  whatever memory held); ours is Glorot-uniform, ``W`` Glorot with a zero bias as theirs.
* Their ``F.cross_entropy(A_lisa, heads, reduction='sum')`` (``criterions/lisa_cross_entropy.py``)
  takes the queries axis as the class axis and is applied to softmax outputs, with no key-padding mask,
  and padding positions get the target T-1 and count; we compute the intended per-query cross-entropy
  over keys on the logits, padded keys masked, padded queries excluded. Like theirs, the term is a sum
  added to the summed NMT loss with ``--parse-penalty``, both divided by the same token count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nmtvariants.errors import ConfigError
from nmtvariants.models.variants import PluginInputs, declare_variant, is_int, is_number, plugin_options
from nmtvariants.syntax.parents import FIRST_STREAM

KEY = "model.variant.lisa"
STREAM = FIRST_STREAM  # the first-subword parents that `nmtvariants parents --mode first` writes
# Only the auxiliary loss reads the stream, but the workflow also hands it to translation (harmless).
INPUTS = PluginInputs(
    aux=(STREAM,),
    made_by="`nmtvariants parents --mode first` on the parsed source, rule bugliarello2020_parents",
)
TERM = "lisa_parent"
SCORERS = ("bilinear", "dot")


@dataclass(frozen=True)
class LisaOptions:
    layer: int = 1
    head: int = 1
    weight: float = 1.0
    scorer: str = "bilinear"
    dim: int | None = None

    @classmethod
    def parse(cls, raw: Any) -> LisaOptions:
        """Validate the variant's options; every error names the offending key."""
        options = plugin_options(cls, raw, KEY, "{layer: 1, head: 1}")
        for name in ("layer", "head"):
            value = getattr(options, name)
            if not is_int(value) or value < 1:
                raise ConfigError(f"{KEY}.{name}: a 1-based {name} number, got {value!r}")
        weight = options.weight
        if not is_number(weight) or not weight >= 0:
            raise ConfigError(f"{KEY}.weight: a number >= 0, got {weight!r}")
        if options.scorer not in SCORERS:
            raise ConfigError(f"{KEY}.scorer: must be one of {', '.join(SCORERS)}, got {options.scorer!r}")
        if options.dim is not None:
            if options.scorer != "bilinear":
                raise ConfigError(f"{KEY}.dim: only the bilinear scorer has a width; drop dim or use it")
            if not is_int(options.dim) or options.dim < 1:
                raise ConfigError(f"{KEY}.dim: a positive integer (null = d_head), got {options.dim!r}")
        return options


declare_variant("lisa", f"{__name__}.modules:install_lisa", inputs=INPUTS)
