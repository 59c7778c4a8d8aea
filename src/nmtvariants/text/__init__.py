"""Text processing: Moses steps (sacremoses), transliteration, joint BPE (subword-nmt), inverse chain."""
