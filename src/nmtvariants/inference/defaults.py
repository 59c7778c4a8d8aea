"""The decoding length cap's defaults, in one place.

Beam search stops a hypothesis after ``int(MAX_LEN_A * source_length + MAX_LEN_B)`` tokens. The
library (:func:`~nmtvariants.inference.beam_search.beam_search`), the ``translate`` command and the
studies' own decoding commands import these, so that a run decoded without an explicit setting gets
the same cap everywhere. A study that wants another cap says so in its experiment's ``evaluate:``
block, which the workflow passes on explicitly. ``schemas/config.schema.yaml`` repeats the values as
its defaults (YAML cannot import them); tests/test_beam_search.py holds the two together.

This module imports nothing, so that command-line parsers can read it without loading torch.
"""

from __future__ import annotations

MAX_LEN_A = 1.5
MAX_LEN_B = 10
BEAM_SIZE = 5
# Decoder self-attention cache per translation batch (inference/translate.py's decoding_batches):
# with the model, what a decoding job holds, which the translate rule's memory request covers.
DECODER_CACHE_MB = 2048
