"""Dependency syntax: the CoNLL-U reader/writer (and, later, the parser adapter and subword parents)."""
