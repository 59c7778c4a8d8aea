"""A tiny Transformer trained once per test run to reverse sequences (shared by several tests).

Trained models make beam search and scoring meaningful: hypotheses finish with </s> by choice rather
than at the length cap, and the reference translation is known (the reversed source).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Iterator
from pathlib import Path

import torch
import torch.nn.functional as F

from nmtvariants.cli import main
from nmtvariants.data.vocab import BOS_ID, EOS_ID, PAD_ID, SPECIALS, Vocabulary
from nmtvariants.models import Transformer, build_model, model_config

REVERSE_VOCAB = 14


def reverse_batch(generator: torch.Generator, rows: int, min_len: int = 3, max_len: int = 7):
    """(src, tgt_in, tgt_out, sources as id lists): target = source reversed."""
    lengths = torch.randint(min_len, max_len + 1, (rows,), generator=generator).tolist()
    width = max(lengths) + 1
    src = torch.full((rows, width), PAD_ID, dtype=torch.long)
    tgt_in, tgt_out = src.clone(), src.clone()
    sources = []
    for i, n in enumerate(lengths):
        tokens = torch.randint(4, REVERSE_VOCAB, (n,), generator=generator)
        src[i, :n], src[i, n] = tokens, EOS_ID
        tgt_out[i, :n], tgt_out[i, n] = tokens.flip(0), EOS_ID
        tgt_in[i, 0], tgt_in[i, 1 : n + 1] = BOS_ID, tokens.flip(0)
        sources.append([*tokens.tolist(), EOS_ID])
    return src, tgt_in, tgt_out, sources


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """Tiny models gain nothing from two threads, and on a shared 2-core machine a second OpenMP thread
    that waits for a busy core slows every op down many times over; restore the setting afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@functools.lru_cache(maxsize=1)
def trained_reverse_model(steps: int = 250) -> Transformer:
    with single_thread():
        return _train(steps)


def _train(steps: int) -> Transformer:
    torch.manual_seed(0)
    cfg = model_config(
        "tiny",
        overrides={
            "d_model": 32,
            "n_heads": 4,
            "d_ff": 64,
            "embedding_dropout": 0.0,
            "residual_dropout": 0.0,
            "attention_dropout": 0.0,
            "relu_dropout": 0.0,
        },
    )
    model = build_model(cfg, REVERSE_VOCAB)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(0)
    for _ in range(steps):
        src, tgt_in, tgt_out, _ = reverse_batch(generator, 64)
        logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.reshape(-1, REVERSE_VOCAB), tgt_out.reshape(-1), ignore_index=PAD_ID)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


def saved_reverse_model(folder: Path, sentences: int) -> list[str]:
    """The trained reverser as the commands read it, in ``folder``: ``model.pt``, ``vocab.txt`` and
    ``sentences`` source lines in ``in.txt``; returns their references (the reversed sources)."""
    model = trained_reverse_model()
    vocab = Vocabulary([*SPECIALS, *(f"w{i}" for i in range(REVERSE_VOCAB - 4))])
    vocab.save(folder / "vocab.txt")
    state = {"model_config": dataclasses.asdict(model.cfg), "vocab_size": REVERSE_VOCAB}
    torch.save({**state, "model": model.state_dict()}, folder / "model.pt")
    *_, sources = reverse_batch(torch.Generator().manual_seed(5), sentences)
    lines = [vocab.decode(source[:-1]) for source in sources]
    (folder / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [" ".join(line.split()[::-1]) for line in lines]


def translate_saved(folder: Path, dtype: str, output: str, *extra: str) -> list[str]:
    """``nmtvariants translate`` of ``in.txt`` with the model :func:`saved_reverse_model` wrote."""
    code = main(
        [
            *("translate", "--checkpoint", str(folder / "model.pt"), "--vocab", str(folder / "vocab.txt")),
            *("--input", str(folder / "in.txt"), "--output", str(folder / output), "--dtype", dtype),
            *extra,
        ]
    )
    assert code == 0
    return (folder / output).read_text(encoding="utf-8").splitlines()
