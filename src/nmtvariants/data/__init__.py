"""Vocabulary, binarised datasets and token-bucket batching."""
