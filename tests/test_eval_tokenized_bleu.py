"""Tokenised compound-split BLEU against a naive multi-bleu.perl and the Perl one-liner itself."""

from __future__ import annotations

import math
import subprocess
from collections import Counter

import pytest
from data_sources import RealData

from nmtvariants.evaluation.tokenized_bleu import atat_split, multi_bleu, t2t_preprocess, tokenized_bleu
from nmtvariants.fileio import read_lines

PERL_ONE_LINER = r"s{(\S)-(\S)}{$1 ##AT##-##AT## $2}g"


def naive_multi_bleu(hyps: list[str], refs: list[list[str]]) -> float:
    """multi-bleu.perl, transcribed as plainly as possible (closest ref length, ties to shorter)."""
    correct = [0] * 4
    total = [0] * 4
    hyp_len = ref_len = 0
    for k, hyp in enumerate(hyps):
        words = hyp.split()
        references = [ref[k].split() for ref in refs]
        hyp_len += len(words)
        closest = min(references, key=lambda r: (abs(len(r) - len(words)), len(r)))
        ref_len += len(closest)
        for n in range(1, 5):
            hyp_ngrams = Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))
            max_ref: Counter = Counter()
            for r in references:
                for gram, count in Counter(tuple(r[i : i + n]) for i in range(len(r) - n + 1)).items():
                    max_ref[gram] = max(max_ref[gram], count)
            total[n - 1] += sum(hyp_ngrams.values())
            correct[n - 1] += sum(min(c, max_ref[g]) for g, c in hyp_ngrams.items())
    if any(c == 0 for c in correct):
        return 0.0
    log_precision = sum(math.log(c / t) for c, t in zip(correct, total, strict=True)) / 4
    bp = 1.0 if hyp_len >= ref_len else math.exp(1 - ref_len / hyp_len)
    return 100 * bp * math.exp(log_precision)


@pytest.mark.parametrize(
    "line",
    ["rich-text format", "a-b-c d-e", "-leading and trailing- - x", "Nord-Süd-Gefälle", "no compounds here"],
)
def test_atat_split_matches_the_perl_one_liner(line: str) -> None:
    perl = subprocess.run(
        ["perl", "-ple", PERL_ONE_LINER], input=line + "\n", capture_output=True, text=True, check=True
    ).stdout.rstrip("\n")
    assert atat_split(line) == perl


def test_preprocessing_tokenises_without_aggressive_hyphens_then_splits() -> None:
    out = t2t_preprocess(['Das "Rich-Text"-Format kostet 3,50 €.'], "de")[0]
    assert "Rich ##AT##-##AT## Text" in out
    assert "&quot;" in out  # tokenizer.perl escapes by default, as the t2t script ran it
    assert out.endswith(" .")


def test_multi_bleu_equals_naive_implementation_on_real_sentences(real_data: RealData) -> None:
    ref = list(read_lines(real_data.file("wmt/en-de/newstest2014.de.gz")))[:200]
    ref2 = [line.replace(" und ", " sowie ") for line in ref]
    hyp = [
        " ".join(reversed(line.split()[:3])) + " " + " ".join(line.split()[3:-1]) if i % 4 else line
        for i, line in enumerate(ref)
    ]
    tok_hyp = t2t_preprocess(hyp, "de")
    tok_refs = [t2t_preprocess(ref, "de"), t2t_preprocess(ref2, "de")]
    ours = tokenized_bleu(hyp, [ref, ref2], "de")
    assert ours["score"] == pytest.approx(naive_multi_bleu(tok_hyp, tok_refs), abs=1e-9)
    assert ours["signature"].startswith("nrefs:2|case:mixed|eff:no|tok:none|smooth:none")
    single = multi_bleu(tok_hyp, tok_refs[:1])
    assert single["score"] == pytest.approx(naive_multi_bleu(tok_hyp, tok_refs[:1]), abs=1e-9)


def test_compound_splitting_changes_the_score_as_expected() -> None:
    # a hyphenated compound that is right gets 3 matching tokens instead of 1
    refs = [["Die Nord-Süd-Verbindung ist gut ."]]
    hyps = ["Die Nord-Süd-Verbindung war gut ."]
    with_split = tokenized_bleu(hyps, refs, "de")["score"]
    plain = multi_bleu(hyps, refs)["score"]
    assert with_split == pytest.approx(
        naive_multi_bleu([atat_split(h) for h in hyps], [[atat_split(refs[0][0])]])
    )
    assert with_split > plain


def test_zero_matches_of_an_order_give_zero_like_multi_bleu() -> None:
    assert multi_bleu(["a b c"], [["a x b y c"]])["score"] == 0.0
    assert naive_multi_bleu(["a b c"], [["a x b y c"]]) == 0.0
