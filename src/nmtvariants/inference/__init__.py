"""Batched incremental beam search and the forced-decoding scorer."""
