"""One Transformer with switches for every variant of the four studies."""
