"""nmtvariants: one Transformer with switches for four NMT studies, from raw corpora to tables."""

__version__ = "0.1.0"
