"""Libovický, Helcl & Mareček (2018): the ``parallel``, ``flat`` and ``hierarchical`` ways for a
decoder to combine N encoders (``serial`` is built into the core, models/layers.py).

Spelling: ``--variant '{"multi_source": {"strategy": "flat", "sources": 3}}'`` (``sources``,
``share_encoders``, ``encoder_layers`` and ``features`` are the core's keys; models/encoders.py).
Each strategy replaces ``DecoderLayer.cross_attn``. With x the output of the self-attention sub-layer,
S_i / M_i the states / padding mask of memory i (text sources in order, then the feature grid), A_i a
multi-head attention with memory-specific Q/K/V/O projections, Drop the residual dropout, LN a layer
norm, the paper's equations 4-8 (lost from our copy of the paper; rebuilt from Neural Monkey's
``attention/transformer_cross_layer.py``, seed brief §4.2) are, in the pre-norm layer of §4.1:

* parallel (eq 4): ``q = LN(x); out = x + sum_i Drop(A_i(q, S_i))`` (one LN shared by all memories,
  dropout on each context before the sum, one residual);
* flat (eqs 5-6): ``out = x + Drop(A(LN(x), [S_1; ...; S_N]))``: one attention, one set of Q/K/V/O
  projections shared by every memory, keys = the states of all memories concatenated along time, mask =
  the memories' masks concatenated (padding of each memory masked where it lies in the concatenation);
* hierarchical (eqs 7-8): ``q = LN(x); c_i = Drop(A_i(q, S_i))``; at each query position t the N
  contexts C_t = [c_1t; ...; c_Nt] are keys and values of a second multi-head attention with its own
  bias-free Q/K/V/O projections, ``hier_heads`` heads, the query q_t, no mask (every context is real)
  and the residual dropout rate as its attention dropout (Neural Monkey's NOTE: not the attention
  dropout setting); ``out = x + Drop(A_hier(q_t, C_t))``.

Choices the seed brief marks unclear, made here:

* ``hier_heads`` (``n_heads_hier``, unstated in the paper): the strategy's own option, default = the
  model's ``n_heads``; it must divide d_model.
* flat's heads (``n_heads_enc``): the model's ``n_heads``, as for every other attention.
* post-norm models (``norm: post``, not in the paper, whose decoder is pre-norm): the same formulas with
  q = x and LN applied after the residual sum, ``LN(x + ...)``, as every post-norm sub-layer here.
* A_i for parallel and hierarchical are the core's per-memory attentions (``attns.i``, named
  ``...cross.i``); flat keeps one attention ``attns.0`` (named ``...cross``), so flat with one memory
  has exactly the parameter names of the standard cross-attention sub-layer.
* dropout: one :class:`~nmtvariants.models.dropout.Dropout` module (``residual_dropout``) applied at each
  place Neural Monkey applies ``dropout_callback``, with independent masks per call.

Incremental decoding: parallel and hierarchical cache each memory's keys/values (``keys_values``);
flat caches the concatenation of the memories' keys/values under its shared projections (one
(keys, values) pair, memory rows first, so that beam search selects its rows like any other). The
hierarchical second-level attention weights are recorded (``capture(attention=True)``) as
``decoder.layers.{l}.cross.hier.weights`` of shape [rows * T, heads, 1, N]: the weight of each memory
at each query position, the quantity of the paper's appendix figures; the per-memory attentions of
parallel and hierarchical as ``...cross.{i}.weights``; flat's one attention as ``...cross.weights``
[rows, heads, T, S_1 + ... + S_N], whose mass over each memory's slice is its share of the attention.
"""

from __future__ import annotations

from nmtvariants.models.variants import declare_strategy

declare_strategy("parallel", f"{__name__}.modules:install_parallel")
declare_strategy("flat", f"{__name__}.modules:install_flat")
declare_strategy("hierarchical", f"{__name__}.modules:install_hierarchical", keys=("hier_heads",))
