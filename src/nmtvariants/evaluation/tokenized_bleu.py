"""Tokenised BLEU with compound splitting, as tensor2tensor's ``get_ende_bleu.sh`` computes it.

Papers before sacreBLEU (GNMT, ConvS2S, Transformer, Emelin et al. Table 1 first column) reported
BLEU on Moses-tokenised text with hyphenated compounds split into ``rich ##AT##-##AT## text``, scored
with ``multi-bleu.perl``. That number is not comparable to sacreBLEU; we reproduce it only to compare
with those papers. The script's steps:

1. ``tokenizer.perl -l LANG`` (no ``-a``, with its default XML escaping) on hypothesis and reference;
2. ``perl -ple 's{(\\S)-(\\S)}{$1 ##AT##-##AT## $2}g'`` on both;
3. ``multi-bleu.perl ref < hyp``: corpus BLEU on whitespace tokens, case-sensitive, no smoothing.

Step 3 is sacreBLEU with ``tokenize="none"`` and ``smooth_method="none"`` (same n-gram clipping,
closest-reference length with ties to the shorter, zero when any precision is zero).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from sacrebleu.metrics import BLEU
from sacremoses import MosesTokenizer

_COMPOUND = re.compile(r"(\S)-(\S)")


def atat_split(line: str) -> str:
    """Split hyphenated compounds like the Perl one-liner (non-overlapping, left to right).

    ``a-b-c`` becomes ``a ##AT##-##AT## b-c`` exactly as Perl's ``s{(\\S)-(\\S)}{...}g`` does, because
    the ``b`` consumed by the first match cannot start the second; we keep that quirk.
    """
    return _COMPOUND.sub(r"\1 ##AT##-##AT## \2", line)


def t2t_preprocess(lines: Iterable[str], lang: str, aggressive_dash_splits: bool = False) -> list[str]:
    """Moses-tokenise (``tokenizer.perl -l LANG``) and compound-split each line."""
    tokenizer = MosesTokenizer(lang=lang)
    return [
        atat_split(
            tokenizer.tokenize(
                line, aggressive_dash_splits=aggressive_dash_splits, return_str=True, escape=True
            )
        )
        for line in lines
    ]


def multi_bleu(hyps: Sequence[str], refs: Sequence[Sequence[str]], lowercase: bool = False) -> dict[str, Any]:
    """``multi-bleu.perl`` on already tokenised text (one list of lines per reference)."""
    metric = BLEU(tokenize="none", smooth_method="none", lowercase=lowercase, force=True)
    result = metric.corpus_score(list(hyps), [list(ref) for ref in refs])
    return {
        "score": float(result.score),
        "signature": str(metric.get_signature()),
        "precisions": [float(p) for p in result.precisions],
        "bp": float(result.bp),
        "sys_len": int(result.sys_len),
        "ref_len": int(result.ref_len),
    }


def tokenized_bleu(
    hyps: Sequence[str], refs: Sequence[Sequence[str]], lang: str, aggressive_dash_splits: bool = False
) -> dict[str, Any]:
    """Tokenised, compound-split BLEU of detokenised hypotheses against detokenised references."""
    tok_hyps = t2t_preprocess(hyps, lang, aggressive_dash_splits)
    tok_refs = [t2t_preprocess(ref, lang, aggressive_dash_splits) for ref in refs]
    record = multi_bleu(tok_hyps, tok_refs)
    record["preprocessing"] = (
        f"sacremoses tokenize -l {lang}{' -a' if aggressive_dash_splits else ''} + ##AT## compound splitting"
    )
    return record
