"""Subword parent positions (PASCAL middle, LISA first) on hand-made trees and on the English and German
PUD treebanks after a joint BPE learned with the project's own BPE code; the ``parents`` command.

The PUD checks recompute every position independently (word of each token by counting continuation
marks, the head word's token list, ``statistics.mean`` / ``min``) instead of reusing the module's
span arithmetic; the hand-checked lines were worked out on paper from the trees printed in comments.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from nmtvariants.cli import main
from nmtvariants.errors import InputError
from nmtvariants.fileio import read_lines, write_lines
from nmtvariants.syntax.conllu import make_sentence, read_conllu, write_conllu
from nmtvariants.syntax.parents import (
    FIRST,
    MIDDLE,
    escape_moses,
    format_x2,
    parse_x2,
    read_stream,
    unescape_moses,
)
from nmtvariants.text.bpe import BPESegmenter, learn_joint_bpe

PUD = {
    "en": ("UD_English-PUD", "en_pud-ud-test.conllu.gz"),
    "de": ("UD_German-PUD", "de_pud-ud-test.conllu.gz"),
}

# I(2) think(0) that(8) the(7) very(6) old(7) wolfhounds(8) barked(2) .(2)
# tokens: I0 think1 that2 the3 very4 old5 wolf@@6 hound@@7 s8 bark@@9 ed10 .11
WOLF = make_sentence(
    ["I", "think", "that", "the", "very", "old", "wolfhounds", "barked", "."],
    [2, 0, 8, 7, 6, 7, 8, 2, 2],
    ["nsubj", "root", "mark", "det", "advmod", "amod", "nsubj", "ccomp", "punct"],
)
WOLF_BPE = "I think that the very old wolf@@ hound@@ s bark@@ ed ."
# the paper's example: a word on tokens 6, 7, 8 has middle 7 (the word "old" and "the" point to it);
# a word on tokens 9, 10 has middle 9.5; the root "think" points to itself
WOLF_MIDDLE = "1 1 9.5 7 5 7 9.5 9.5 9.5 1 1 1"
WOLF_FIRST = "1 1 9 6 5 6 9 9 9 1 1 1"

# Tom(3) 's(1) cat(0) &(5) dog(3); the corpus is Moses-escaped, the gold forms are not
TOM = make_sentence(
    ["Tom", "'s", "cat", "&", "dog"], [3, 1, 0, 5, 3], ["nmod:poss", "case", "root", "cc", "conj"]
)
TOM_BPE = "Tom &apos;@@ s cat &amp; dog"
TOM_MIDDLE = "3 0 0 3 5 3"


def parents_cli(tmp_path: Path, conllu: Path, bpe: Path, mode: str) -> list[str]:
    out = tmp_path / f"parents.{mode}"
    assert main(["parents", "--conllu", str(conllu), "--bpe", str(bpe), "--mode", mode, "-o", str(out)]) == 0
    return list(read_lines(out))


@pytest.fixture
def hand_made(tmp_path: Path) -> tuple[Path, Path]:
    conllu, bpe = tmp_path / "parse.conllu", tmp_path / "corpus.bpe"
    write_conllu(conllu, [WOLF, TOM])
    write_lines(bpe, [WOLF_BPE, TOM_BPE])
    return conllu, bpe


def test_hand_made_trees_middle_and_first(tmp_path, hand_made, capsys):
    conllu, bpe = hand_made
    assert parents_cli(tmp_path, conllu, bpe, MIDDLE) == [WOLF_MIDDLE, TOM_MIDDLE]
    assert parents_cli(tmp_path, conllu, bpe, FIRST)[0] == WOLF_FIRST
    assert main(["parents", "--conllu", str(conllu), "--bpe", str(bpe)]) == 0  # stdout, middle by default
    assert capsys.readouterr().out == f"{WOLF_MIDDLE}\n{TOM_MIDDLE}\n"


def test_stream_values_add_eos_pointing_to_itself(tmp_path, hand_made):
    conllu, bpe = hand_made
    parents_cli(tmp_path, conllu, bpe, MIDDLE)
    parents_cli(tmp_path, conllu, bpe, FIRST)
    middle = list(read_stream(tmp_path / "parents.middle", MIDDLE))
    first = list(read_stream(tmp_path / "parents.first", FIRST))
    # middle streams are doubled positions; </s> is token 12 of "wolf..." (12 BPE tokens before it)
    assert middle[0] == [2, 2, 19, 14, 10, 14, 19, 19, 19, 2, 2, 2, 24]
    assert first[0] == [1, 1, 9, 6, 5, 6, 9, 9, 9, 1, 1, 1, 12]
    assert middle[1][-1] == 2 * 6 and first[1][-1] == 6


def test_stream_reader_rejects_positions_outside_the_line(tmp_path):
    path = tmp_path / "parents"
    write_lines(path, ["0 1 1.5", "1 0.5"])
    assert list(read_stream(path, MIDDLE)) == [[0, 2, 3, 6], [2, 1, 4]]  # doubled, </s> last
    write_lines(path, ["0 1.5"])  # 1.5 lies between token 1 and a token that does not exist
    with pytest.raises(InputError, match=r"parents:1: a parent position points past the 2 tokens"):
        list(read_stream(path, MIDDLE))
    write_lines(path, ["0 0.5"])
    with pytest.raises(InputError, match=r"parents:1: half positions in a first-subword"):
        list(read_stream(path, FIRST))


def test_decimal_format_round_trips():
    values = [0, 1, 2, 13, 14, 2001]
    assert format_x2(values) == "0 0.5 1 6.5 7 1000.5"
    assert parse_x2(format_x2(values), "x") == values
    assert parse_x2("7.0 6.5", "x") == [14, 13]  # the authors' float strings read too
    with pytest.raises(InputError, match=r"f:3: '6.25' is not a parent position"):
        parse_x2("1 6.25", "f:3")


def test_moses_escapes_round_trip():
    text = "a&b |x| <y> 'q' \"z\" [w] &lt;"
    assert (
        escape_moses(text)
        == "a&amp;b &#124;x&#124; &lt;y&gt; &apos;q&apos; &quot;z&quot; &#91;w&#93; &amp;lt;"
    )
    assert unescape_moses(escape_moses(text)) == text


def test_cli_bad_line_is_exit_2_with_one_line(tmp_path, hand_made, capsys):
    conllu, bpe = hand_made
    write_lines(bpe, [WOLF_BPE, "Tom &apos;@@ s dog &amp; dog"])
    out = tmp_path / "never"
    assert main(["parents", "--conllu", str(conllu), "--bpe", str(bpe), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{bpe}:2" in err and "word 3 is 'dog'" in err and "'cat'" in err
    assert not out.exists()  # nothing half-written

    write_lines(bpe, [WOLF_BPE, "Tom cat & dog"])
    assert main(["parents", "--conllu", str(conllu), "--bpe", str(bpe)]) == 2
    assert "has 4 words but its parse has 5" in capsys.readouterr().err

    write_lines(bpe, [WOLF_BPE, TOM_BPE, "one more"])
    assert main(["parents", "--conllu", str(conllu), "--bpe", str(bpe), "-o", str(out)]) == 2
    assert f"{bpe}:3: {conllu} has only 2 sentences" in capsys.readouterr().err

    write_lines(bpe, [WOLF_BPE])
    assert main(["parents", "--conllu", str(conllu), "--bpe", str(bpe), "-o", str(out)]) == 2
    assert "more sentences than the 1 lines" in capsys.readouterr().err

    write_lines(bpe, [WOLF_BPE, "Tom &apos;@@ s cat &amp; dog@@"])
    assert main(["parents", "--conllu", str(conllu), "--bpe", str(bpe), "-o", str(out)]) == 2
    assert "cut off" in capsys.readouterr().err


# ---------------------------------------------------------------- PUD after joint BPE


@pytest.fixture(scope="module")
def pud(real_data, tmp_path_factory) -> dict[str, tuple[Path, Path, list]]:
    """Per language: the treebank, its Moses-escaped word forms segmented with a joint BPE (2000
    merges, learned on both languages with nmtvariants.text.bpe), and the parsed sentences."""
    tmp = tmp_path_factory.mktemp("pud")
    data = real_data(*(f"ud-pud/{folder}/{name}" for folder, name in PUD.values()))
    treebanks = {lang: data / "ud-pud" / folder / name for lang, (folder, name) in PUD.items()}
    sentences = {lang: read_conllu(path) for lang, path in treebanks.items()}
    for lang, sents in sentences.items():
        write_lines(tmp / f"words.{lang}", (" ".join(escape_moses(f) for f in s.forms) for s in sents))
    joint = learn_joint_bpe({lang: tmp / f"words.{lang}" for lang in PUD}, 2000, tmp / "codes", tmp / "vocab")
    out = {}
    for lang in PUD:
        segment = BPESegmenter(joint.codes[lang], None, None)
        write_lines(tmp / f"bpe.{lang}", (segment(line) for line in read_lines(tmp / f"words.{lang}")))
        out[lang] = (treebanks[lang], tmp / f"bpe.{lang}", sentences[lang])
    return out


def independent(tokens: list[str], heads: list[int], mode: str) -> list[float]:
    """Parent position of every token, from lists of token indices per word."""
    word_of, word = [], 0
    for token in tokens:
        word_of.append(word)
        word += not token.endswith("@@")
    pick = statistics.mean if mode == MIDDLE else min
    out = []
    for i in range(len(tokens)):
        head = heads[word_of[i]]
        target = word_of[i] if head == 0 else head - 1
        out.append(float(pick([k for k in range(len(tokens)) if word_of[k] == target])))
    return out


@pytest.mark.parametrize("lang", list(PUD))
@pytest.mark.parametrize("mode", [MIDDLE, FIRST])
def test_pud_positions_inside_roots_to_themselves_and_recomputed(pud, lang, mode, tmp_path):
    treebank, bpe, sentences = pud[lang]
    lines = parents_cli(tmp_path, treebank, bpe, mode)
    bpe_lines = list(read_lines(bpe))
    assert len(lines) == len(bpe_lines) == len(sentences) == 1000
    split_heads = halves = 0
    for line, segmented, sentence in zip(lines, bpe_lines, sentences, strict=True):
        tokens = segmented.split()
        positions = [float(v) for v in line.split()]
        assert len(positions) == len(tokens)
        assert all(0 <= p <= len(tokens) - 1 for p in positions)  # inside the sentence
        heads = [w.head for w in sentence.words]
        assert positions == independent(tokens, heads, mode)
        # roots point to themselves: the root word's tokens point into the root word's own span
        root = heads.index(0)
        starts = [i for i, t in enumerate(tokens) if i == 0 or tokens[i - 1][-2:] != "@@"]
        span = range(starts[root], starts[root + 1] if root + 1 < len(starts) else len(tokens))
        assert {positions[i] for i in span} == {statistics.mean(span) if mode == MIDDLE else span[0]}
        lengths = [b - a for a, b in zip(starts, [*starts[1:], len(tokens)], strict=True)]
        split_heads += sum(1 for w in sentence.words if w.head and lengths[w.head - 1] >= 3)
        halves += sum(p != int(p) for p in positions)
    assert split_heads > 1000  # words whose head is split into three or more subwords
    assert (halves > 1000) if mode == MIDDLE else halves == 0  # many heads span an even number of tokens


def test_pud_hand_checked_sentences(pud, tmp_path):
    """Sentence n01001013 in both languages, worked out by hand from its tree (printed below)."""
    en_tree, en_bpe, _ = pud["en"]
    de_tree, de_bpe, _ = pud["de"]
    # For(2) those(17) who(4) follow(2) social(6) media(7) transitions(4) on(10) Capitol(10) Hill(7) ,(17)
    # this(17) will(17) be(17) a(16) little(17) different(0) .(17)
    assert list(read_lines(en_bpe))[1] == (
        "F@@ or those who fol@@ low so@@ cial medi@@ a tran@@ si@@ tions on C@@ ap@@ it@@ o@@ l "
        "H@@ ill , this will be a li@@ tt@@ le differ@@ ent ."
    )
    # transitions = tokens 10-12 -> 11; Hill 19-20 -> 19.5; little 26-28 -> 27; different 29-30 -> 29.5 (root)
    assert parents_cli(tmp_path, en_tree, en_bpe, MIDDLE)[1] == (
        "2 2 29.5 4.5 2 2 8.5 8.5 11 11 4.5 4.5 4.5 19.5 19.5 19.5 19.5 19.5 19.5 11 11 "
        "29.5 29.5 29.5 29.5 27 29.5 29.5 29.5 29.5 29.5 29.5"
    )
    assert parents_cli(tmp_path, en_tree, en_bpe, FIRST)[1] == (
        "2 2 29 4 2 2 8 8 10 10 4 4 4 19 19 19 19 19 19 10 10 29 29 29 29 26 29 29 29 29 29 29"
    )
    # Für(2) alle(21) ,(14) die(14) Social(7) -(5) Media(9) -(7) Übergänge(14) auf(13) dem(13) Capitol(13)
    # Hill(9) verfolgen(2) ,(2) wird(21) dieser(18) Übergang(21) ein(20) wenig(21) anders(0) sein(21) .(21)
    assert list(read_lines(de_bpe))[1] == (
        "Fü@@ r alle , die S@@ o@@ cial - Medi@@ a - Über@@ g@@ än@@ ge auf dem C@@ ap@@ it@@ o@@ l "
        "H@@ ill ver@@ fol@@ gen , wird dieser Über@@ gang ein wen@@ i@@ g ander@@ s sein ."
    )
    # Übergänge = tokens 12-15 -> 13.5; verfolgen 25-27 -> 26; wenig 34-36 -> 35; anders 37-38 -> 37.5 (root)
    assert parents_cli(tmp_path, de_tree, de_bpe, MIDDLE)[1] == (
        "2 2 37.5 26 26 9.5 9.5 9.5 6 13.5 13.5 9.5 26 26 26 26 23.5 23.5 23.5 23.5 23.5 23.5 23.5 "
        "13.5 13.5 2 2 2 2 37.5 31.5 37.5 37.5 35 37.5 37.5 37.5 37.5 37.5 37.5 37.5"
    )
