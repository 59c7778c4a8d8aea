"""The multi-task parse-and-translate corpus (Currey & Heafield 2019 as Bugliarello & Okazaki ran it).

The linearisation is checked on trees linearised by hand and, on random trees, against a recursive
transcription of the definition; the corpus and the CLI on a small hand-made parsed corpus.
"""

from __future__ import annotations

import random

import pytest

from nmtvariants.cli import main
from nmtvariants.data.vocab import UNK_ID, Vocabulary
from nmtvariants.errors import InputError
from nmtvariants.fileio import read_lines, write_lines
from nmtvariants.syntax.conllu import Sentence, make_sentence, parse_conllu, write_conllu
from nmtvariants.syntax.linearize import linearize, multitask_pairs, translation_sources

CAT = make_sentence(
    ["The", "cat", "sat", "on", "the", "mat", "."],
    [2, 3, 0, 6, 6, 3, 3],
    ["det", "nsubj", "root", "case", "det", "obl", "punct"],
)
# "I saw the man with a telescope yesterday": a PP attached to the noun, an adverb after it, and a
# relation with a subtype; root not first
SAW = make_sentence(
    ["I", "saw", "the", "man", "with", "a", "telescope", "yesterday", "'s"],
    [2, 0, 4, 2, 7, 7, 4, 2, 8],
    ["nsubj", "root", "det", "obj", "case", "det", "nmod", "obl:tmod", "case"],
)


def test_hand_linearised_trees():
    assert linearize(CAT) == "(root (nsubj (det ) ) (obl (case ) (det ) ) (punct ) )"
    assert linearize(SAW) == "(root (nsubj ) (obj (det ) (nmod (case ) (det ) ) ) (obl:tmod (case ) ) )"
    assert linearize(make_sentence(["Go"], [0], ["root"])) == "(root )"


def recursive(sentence: Sentence) -> str:
    """The definition, transcribed: a word is '(' + relation, its dependents in order, ')'."""

    def word(i: int) -> list[str]:
        deps = [w.id for w in sentence.words if w.head == i]
        return [f"({sentence.words[i - 1].deprel}", *(t for d in deps for t in word(d)), ")"]

    (root,) = [w.id for w in sentence.words if w.head == 0]
    return " ".join(word(root))


def random_tree(n: int, rng: random.Random) -> Sentence:
    order = list(range(1, n + 1))
    rng.shuffle(order)
    heads = [0] * n
    for k, node in enumerate(order[1:], start=1):  # each node hangs from an earlier one: a tree
        heads[node - 1] = order[rng.randrange(k)]
    labels = ["root" if h == 0 else rng.choice(["nsubj", "obj", "amod", "nmod:poss", "punct"]) for h in heads]
    return make_sentence([f"w{i}" for i in range(n)], heads, labels)


def test_random_trees_match_the_recursive_definition_and_deep_ones_do_not_recurse():
    rng = random.Random(0)
    for _ in range(200):
        tree = random_tree(rng.randint(1, 25), rng)
        text = linearize(tree)
        assert text == recursive(tree)
        assert text.count(")") == len(tree.words) == text.count("(")
    chain = make_sentence(["x"] * 3000, [0, *range(1, 3000)], ["root"] + ["dep"] * 2999)
    assert linearize(chain) == " ".join(["(root", *["(dep"] * 2999, *[")"] * 3000])


BPE = ["The c@@ at sat on the mat .", "I saw the man with a tele@@ scope yesterday '@@ s"]
TARGET = ["Die Katze saß auf der Matte .", "Ich sah gestern den Mann mit einem Fernrohr"]


def test_the_corpus_is_tagged_translation_pairs_then_tagged_parse_pairs():
    sources, targets = multitask_pairs(BPE, TARGET, [CAT, SAW], ("s", "t", "c"))
    assert sources == [
        "<TR> The c@@ at sat on the mat . <TR>",
        "<TR> I saw the man with a tele@@ scope yesterday '@@ s <TR>",
        "<PA> The c@@ at sat on the mat . <PA>",
        "<PA> I saw the man with a tele@@ scope yesterday '@@ s <PA>",
    ]
    assert targets == [*TARGET, linearize(CAT), linearize(SAW)]
    assert list(translation_sources(["a b@@ c", ""])) == ["<TR> a b@@ c <TR>", "<TR> <TR>"]


def test_a_parse_of_other_words_or_another_length_is_an_error_naming_the_line():
    with pytest.raises(InputError, match=r"s:1 vs c:0: .*word 2 is 'dog' in the BPE line but 'cat'"):
        multitask_pairs(["The dog sat on the mat ."], TARGET[:1], [CAT], ("s", "t", "c"))
    with pytest.raises(InputError, match=r"s:1 vs c:0: .*7 words in the BPE line but 6"):
        short = make_sentence(CAT.forms[:6], CAT.heads[:6], [w.deprel for w in CAT.words[:6]])
        multitask_pairs(["The cat sat on the mat ."], TARGET[:1], [short], ("s", "t", "c"))
    with pytest.raises(InputError, match=r"s has 2 lines, t 1 and c 2 sentences"):
        multitask_pairs(BPE, TARGET[:1], [CAT, SAW], ("s", "t", "c"))


def test_the_cli_writes_the_training_corpus_and_tags_test_sources(tmp_path, capsys):
    src, tgt, conllu = tmp_path / "train.bpe.en", tmp_path / "train.bpe.de", tmp_path / "train.conllu"
    write_lines(src, BPE)
    write_lines(tgt, TARGET)
    write_conllu(conllu, [CAT, SAW])
    out_src, out_tgt = tmp_path / "mt.en", tmp_path / "mt.de"
    args = ["multitask-corpus", "--source", str(src), "--target", str(tgt), "--conllu", str(conllu)]
    assert main([*args, "--out-source", str(out_src), "--out-target", str(out_tgt)]) == 0
    sources, targets = multitask_pairs(BPE, TARGET, list(parse_conllu(read_lines(conllu))), ("", "", ""))
    assert list(read_lines(out_src)) == sources and list(read_lines(out_tgt)) == targets
    # the parse tokens and the tags become whole tokens of a vocabulary built from the augmented files
    vocab = Vocabulary.build([*read_lines(out_src), *read_lines(out_tgt)])
    for token in ("<TR>", "<PA>", "(root", "(obl:tmod", ")"):
        assert vocab.stoi.get(token, UNK_ID) != UNK_ID

    test_out = tmp_path / "mt.test.en"
    assert main(["multitask-corpus", "--source", str(src), "--out-source", str(test_out)]) == 0
    assert list(read_lines(test_out)) == [f"<TR> {line} <TR>" for line in BPE]

    assert main(["multitask-corpus", "--source", str(src), "--conllu", str(conllu), "--out-source", "x"]) == 2
    assert "with --conllu (a training corpus) give --target and --out-target" in capsys.readouterr().err
    write_lines(src, [BPE[0], BPE[0]])
    assert main([*args, "--out-source", str(out_src), "--out-target", str(out_tgt)]) == 2
    err = capsys.readouterr().err
    assert "train.bpe.en:2 vs " in err and "word 1 is 'The' in the BPE line but 'I' in the parse" in err
    assert "Traceback" not in err
