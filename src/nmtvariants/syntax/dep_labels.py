"""Dependency labels per BPE token: the input feature of the Sennrich & Haddow baseline ("TagEmb").

The authors (seed brief §2.6, ``scripts/bpe_tags_label.py``) give every subword of a word the
dependency relation of that word (no BIO subword tags). We do the same, with the label written as an
id into a fixed inventory so that the model's label table has a known size:

* :data:`UD_RELATIONS`: the 37 universal relations of UD v2, in this order (id = index). A subtyped
  label keeps its universal part (``nmod:poss`` -> ``nmod``, ``acl:relcl`` -> ``acl``): Stanza and the
  UD treebanks use language-specific subtypes whose inventory differs per language and treebank,
  while the universal part is common to all of them. The authors used CoreNLP's labels, whatever
  inventory they came in; this is the deviation.
* The stream is called ``dep_labels`` (:data:`STREAM`) and is a *label* stream in the sense of
  :mod:`nmtvariants.data.extra_inputs`: the run config names it in ``data.aux_labels`` with the count
  ``len(UD_RELATIONS)`` (37), and the data path gives ``</s>`` the extra label 37.

Words are matched to subwords by joining BPE continuation tokens (``@@``); the joined words must equal
the CoNLL-U tokens (a multiword token such as German ``zum`` = ``zu dem`` is one surface token and takes
the label of its syntactic head word: the word of the range whose head lies outside the range).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from nmtvariants.errors import InputError
from nmtvariants.syntax.conllu import Sentence
from nmtvariants.text.subword_map import SEPARATOR

STREAM = "dep_labels"
UD_RELATIONS = (
    "acl",
    "advcl",
    "advmod",
    "amod",
    "appos",
    "aux",
    "case",
    "cc",
    "ccomp",
    "clf",
    "compound",
    "conj",
    "cop",
    "csubj",
    "dep",
    "det",
    "discourse",
    "dislocated",
    "expl",
    "fixed",
    "flat",
    "goeswith",
    "iobj",
    "list",
    "mark",
    "nmod",
    "nsubj",
    "nummod",
    "obj",
    "obl",
    "orphan",
    "parataxis",
    "punct",
    "reparandum",
    "root",
    "vocative",
    "xcomp",
)
LABEL_IDS = {label: index for index, label in enumerate(UD_RELATIONS)}


def bpe_word_spans(line: str) -> list[tuple[str, int, int]]:
    """``(word, first, end)`` for each word of a BPE line: the word joined from subwords first..end-1."""
    spans: list[tuple[str, int, int]] = []
    pieces: list[str] = []
    start = 0
    tokens = line.split()
    for index, token in enumerate(tokens):
        if token.endswith(SEPARATOR) and index < len(tokens) - 1:
            pieces.append(token[: -len(SEPARATOR)])
            continue
        pieces.append(token[: -len(SEPARATOR)] if token.endswith(SEPARATOR) else token)
        spans.append(("".join(pieces), start, index + 1))
        pieces, start = [], index + 1
    return spans


def surface_tokens(sentence: Sentence) -> list[tuple[str, list[int]]]:
    """The sentence's surface tokens with the ids of their syntactic words (a multiword range: several)."""
    ranges = {}
    for cols in sentence.multiword:
        first, last = (int(v) for v in cols[0].split("-"))
        ranges[first] = (cols[1], last)
    tokens: list[tuple[str, list[int]]] = []
    word_id = 1
    while word_id <= len(sentence.words):
        if word_id in ranges:
            form, last = ranges[word_id]
            tokens.append((form, list(range(word_id, last + 1))))
            word_id = last + 1
        else:
            tokens.append((sentence.words[word_id - 1].form, [word_id]))
            word_id += 1
    return tokens


def check_alignment(sentence: Sentence, bpe_line: str, where: str) -> list[tuple[list[int], int, int]]:
    """``(word ids, first subword, end)`` per surface token; InputError at ``where`` if the words differ."""
    spans = bpe_word_spans(bpe_line)
    tokens = surface_tokens(sentence)
    words = [w for w, _, _ in spans]
    forms = [form for form, _ in tokens]
    if words != forms:
        at = next((i for i, (a, b) in enumerate(zip(words, forms, strict=False)) if a != b), None)
        detail = (
            f"word {at + 1} is {words[at]!r} in the BPE line but {forms[at]!r} in the parse"
            if at is not None
            else f"{len(words)} words in the BPE line but {len(forms)} in the parse"
        )
        raise InputError(
            f"{where}: the BPE line and its parse disagree ({detail}); parse the same tokenised corpus "
            "the BPE was applied to"
        )
    return [(ids, first, end) for (_, ids), (_, first, end) in zip(tokens, spans, strict=True)]


def universal(label: str) -> str:
    return label.split(":", 1)[0]


def head_word(sentence: Sentence, ids: list[int]) -> int:
    """The word of a multiword range whose head is outside the range (the range's syntactic head)."""
    inside = set(ids)
    return next((i for i in ids if sentence.words[i - 1].head not in inside), ids[0])


def subword_labels(sentence: Sentence, bpe_line: str, where: str) -> list[int]:
    """One label id per BPE token: the (universal) relation of its word, copied to every subword."""
    labels: list[int] = []
    for ids, first, end in check_alignment(sentence, bpe_line, where):
        word = sentence.words[head_word(sentence, ids) - 1]
        label = universal(word.deprel)
        if label not in LABEL_IDS:
            raise InputError(
                f"{where}: word {word.id} has relation {word.deprel!r}, not a UD v2 universal relation "
                f"({' '.join(UD_RELATIONS)}); parse with a UD model"
            )
        labels += [LABEL_IDS[label]] * (end - first)
    return labels


def label_lines(
    sentences: Iterable[Sentence], bpe_lines: Iterable[str], conllu_name: str, bpe_name: str
) -> Iterator[str]:
    """The ``dep_labels`` stream file's lines for a parsed, BPE'd corpus (line-parallel)."""
    bpe = list(bpe_lines)
    parsed = list(sentences)
    if len(parsed) != len(bpe):
        raise InputError(
            f"{conllu_name} has {len(parsed)} sentences but {bpe_name} has {len(bpe)} lines; parse the "
            "same corpus, one sentence per line"
        )
    for number, (sentence, line) in enumerate(zip(parsed, bpe, strict=True), start=1):
        where = f"{bpe_name}:{number} vs {conllu_name}:{sentence.line}"
        yield " ".join(map(str, subword_labels(sentence, line, where)))
