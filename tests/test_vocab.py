"""The joint vocabulary: fixed special ids, frequency order, encode/decode conventions."""

from __future__ import annotations

import pytest

from nmtvariants.data.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Vocabulary
from nmtvariants.errors import InputError


def test_build_orders_by_frequency_then_token(tmp_path):
    vocab = Vocabulary.build(["b a a", "c b a"])
    assert vocab.itos[:4] == ["<pad>", "<s>", "</s>", "<unk>"]
    assert vocab.itos[4:] == ["a", "b", "c"]
    vocab.save(tmp_path / "v.txt")
    assert Vocabulary.load(tmp_path / "v.txt").itos == vocab.itos


def test_encode_decode_conventions():
    vocab = Vocabulary.build(["x y"])
    assert vocab.encode("x z") == [vocab.stoi["x"], UNK_ID, EOS_ID]
    assert vocab.encode("y", add_bos=True, add_eos=False) == [BOS_ID, vocab.stoi["y"]]
    assert vocab.decode([BOS_ID, vocab.stoi["y"], EOS_ID, vocab.stoi["x"], PAD_ID]) == "y"


def test_load_rejects_foreign_file(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("hello\nworld\n")
    with pytest.raises(InputError, match="nmtvariants vocab"):
        Vocabulary.load(path)
