"""Probes on frozen states: what the studies learn about a trained model without changing it.

* :mod:`~nmtvariants.analysis.states`: the on-disk form of extracted states (plain ``.npz``).
* :mod:`~nmtvariants.analysis.extract`: run a model in eval mode under teacher forcing and keep any
  captured representation (the names of :mod:`nmtvariants.models.hooks`), token by token.
* :mod:`~nmtvariants.analysis.splits`: train / valid / test split by sentence, early stopping, seeding.
* :mod:`~nmtvariants.analysis.mlp_probe`: lexical probes (Emelin et al. 2019).
* :mod:`~nmtvariants.analysis.reconstruction_probe`: one-layer Transformer decoder probes that
  force-decode a sentence from a representation sequence (Yang et al. 2020).
* :mod:`~nmtvariants.analysis.groups`: per-token groupings for breakdowns (POS, frequency bins).
* :mod:`~nmtvariants.analysis.layer_probes`: the lexical probe of every layer, with breakdowns.
* :mod:`~nmtvariants.analysis.similarity`: cosine similarity of each layer to the embeddings.
* :mod:`~nmtvariants.analysis.gates`: shortcut gate statistics per layer (Emelin et al. 2019).
* :mod:`~nmtvariants.analysis.decoder_modules`: TEM / SEM / IFM and its operations as capture names,
  in every decoder layout (Yang et al. 2020).
* :mod:`~nmtvariants.analysis.cli`: the ``extract-states``, ``probe``, ``layer-probes``,
  ``similarity`` and ``gate-stats`` commands.

Probes read states from disk only, so the NMT model cannot receive a gradient from them.
"""
