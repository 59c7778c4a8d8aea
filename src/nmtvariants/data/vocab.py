"""The joint vocabulary shared by source, target and output embeddings.

Special ids are fixed across the project so that every stage (training, beam search, scoring,
probes) agrees without passing them around: pad 0, bos 1, eos 2, unk 3. Source sequences are
``tokens + </s>``; decoder input is ``<s> + tokens``; decoder output is ``tokens + </s>``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from nmtvariants.errors import InputError
from nmtvariants.fileio import atomic_write, read_lines

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
SPECIALS = (PAD, BOS, EOS, UNK)


class Vocabulary:
    """Token <-> id mapping; specials first, then types by descending frequency (ties by token)."""

    def __init__(self, tokens: Sequence[str]):
        if tuple(tokens[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"a vocabulary must start with {SPECIALS}")
        self.itos: list[str] = list(tokens)
        self.stoi: dict[str, int] = {token: index for index, token in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    @classmethod
    def build(cls, lines: Iterable[str], min_count: int = 1) -> Vocabulary:
        counts: Counter[str] = Counter()
        for line in lines:
            counts.update(line.split())
        ordered = sorted(
            (token for token, count in counts.items() if count >= min_count and token not in SPECIALS),
            key=lambda token: (-counts[token], token),
        )
        return cls([*SPECIALS, *ordered])

    def save(self, path: str | Path) -> None:
        with atomic_write(path) as out:
            for token in self.itos:
                out.write(token + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Vocabulary:
        tokens = list(read_lines(path))
        if tuple(tokens[: len(SPECIALS)]) != SPECIALS:
            raise InputError(
                f"{path}: not an nmtvariants vocabulary (the first lines must be {' '.join(SPECIALS)}); "
                "build one with `nmtvariants vocab`"
            )
        return cls(tokens)

    def encode(self, line: str, add_bos: bool = False, add_eos: bool = True) -> list[int]:
        ids = [self.stoi.get(token, UNK_ID) for token in line.split()]
        return ([BOS_ID] if add_bos else []) + ids + ([EOS_ID] if add_eos else [])

    def decode(self, ids: Iterable[int]) -> str:
        """Ids to a space-joined string, stopping at </s> and skipping pad and bos."""
        out = []
        for index in ids:
            if index == EOS_ID:
                break
            if index in (PAD_ID, BOS_ID):
                continue
            out.append(self.itos[index])
        return " ".join(out)
