"""Corpora: downloads (mirror, sha256, retries, atomic), format readers, the toyworld generator."""
