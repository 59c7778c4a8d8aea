"""Attachment scores (UAS, LAS) and UPOS accuracy of a parse against a gold treebank.

The parser is scored on gold tokenisation: the prediction has the gold file's syntactic words (the
parse step runs pretokenised, exactly as the PASCAL pipeline parses its corpora), so word alignment is
the identity and every metric is an accuracy over syntactic words. The conventions are the CoNLL 2018
shared task's (``conll18_ud_eval.py``, which on identical words gives the same numbers): every word
counts, punctuation included; multiword-token lines and empty nodes are not words; LAS compares only
the universal part of the relation (``nmod:poss`` and ``nmod`` match), UAS only the head.
"""

from __future__ import annotations

from collections.abc import Sequence

from nmtvariants.errors import InputError
from nmtvariants.syntax.conllu import Sentence


def universal(deprel: str) -> str:
    """``nmod:poss`` -> ``nmod`` (the CoNLL 2018 scorer's LAS ignores relation subtypes)."""
    return deprel.split(":", 1)[0]


def attachment_scores(
    gold: Sequence[Sentence], predicted: Sequence[Sentence], names: tuple[str, str] = ("gold", "predicted")
) -> dict[str, float | int]:
    """``{"sentences", "words", "upos", "uas", "las"}``, the last three in percent."""
    if len(gold) != len(predicted):
        raise InputError(
            f"{names[0]} has {len(gold)} sentences, {names[1]} {len(predicted)}; score a parse of the "
            "gold file itself"
        )
    words = upos = heads = labelled = 0
    for index, (reference, parse) in enumerate(zip(gold, predicted, strict=True), start=1):
        if reference.forms != parse.forms:
            raise InputError(
                f"{names[1]}: sentence {index} has other words than {names[0]} sentence {index}; "
                "parse the gold words (pretokenised)"
            )
        for want, got in zip(reference.words, parse.words, strict=True):
            words += 1
            upos += want.upos == got.upos
            if want.head == got.head:
                heads += 1
                labelled += universal(want.deprel) == universal(got.deprel)
    if not words:
        raise InputError(f"{names[0]}: no words to score")
    return {
        "sentences": len(gold),
        "words": words,
        "upos": 100.0 * upos / words,
        "uas": 100.0 * heads / words,
        "las": 100.0 * labelled / words,
    }
