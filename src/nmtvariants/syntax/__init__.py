"""Dependency syntax: the CoNLL-U reader/writer (``conllu``), subword parent positions for PASCAL and
LISA (``parents``), the Stanza parse step (``stanza_parse``) and offline training (``stanza_train``)."""
