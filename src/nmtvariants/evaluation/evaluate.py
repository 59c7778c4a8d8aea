"""``evaluate``: every metric a study asks for, on one hypothesis file, as one JSON-ready record.

The record holds what is needed to trust a number later: each metric's signature, the number of
lines, and the path and sha256 of the hypothesis and reference files.

**Preprocessing modes.** ``none`` (default): metrics on detokenised text, as sacreBLEU intends.
``multi30k``: the WMT Multimodal Translation evaluation that Libovický et al. (2018) follow: the
hypothesis *and* the references (give the raw, detokenised references, not the upstream
``*.lc.norm.tok.*`` files, which would be escaped twice) go through ``lowercase.perl |
normalize-punctuation.perl -l L | tokenizer.perl -l L`` (``text.moses.NormalizeTokenize`` with
lowercasing: sacremoses with Moses parity; it reproduces the upstream Multi30k ``lc.norm.tok`` files,
tests/test_multi30k_parity.py), then every metric reads whitespace tokens (sacreBLEU
``tokenize='none'``). BLEU is then ``multi-bleu.perl``/MultEval's: no smoothing
(``tokenized_bleu.multi_bleu``).

METEOR in both modes is NLTK's ``nltk.translate.meteor_score.meteor_score`` (version recorded from
``importlib.metadata``) with WordNet 3.0 from Debian (``meteor_ribes.py``), *not* the paper's Meteor
1.5 in MultEval. Differences: NLTK uses the Meteor 1.0 parameters (alpha 0.9, beta 3, gamma 0.5)
for every language, English-only Porter stemming and WordNet synonyms, no paraphrase tables, no
function-word weighting (delta), and averages sentence scores; Meteor 1.5 has per-language tuned
parameters, stemmers and paraphrase tables (de, fr, cs, ...) and pools statistics over the corpus.
On German, French or Czech targets NLTK's METEOR is close to an exact-match METEOR, so its numbers
rank our own systems but are not comparable with the paper's; the score JSON says so, and every
table, figure and JSON names it "METEOR (NLTK, English resources)". A user who has the Meteor 1.5
release names its folder (``meteor_home``) and gets the paper's metric instead (``meteor15.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

from nmtvariants.errors import ConfigError
from nmtvariants.evaluation.bleu import SACREBLEU_METRICS, default_tokenizer, sacrebleu_score
from nmtvariants.evaluation.inputs import read_hyp_refs
from nmtvariants.evaluation.meteor_ribes import DEBIAN_WORDNET_DIR
from nmtvariants.evaluation.results import file_record
from nmtvariants.fileio import PathLike

METRICS: tuple[str, ...] = (*SACREBLEU_METRICS, "tok-bleu", "meteor", "ribes")
PREPROCESSING: tuple[str, ...] = ("none", "multi30k")
METEOR_1_5_NOTE = (
    "not Meteor 1.5 (MultEval, used by Libovicky et al. 2018): NLTK meteor_score, Meteor 1.0 parameters "
    "for all languages, English Porter stems and WordNet synonyms, no paraphrases or function-word "
    "weights, mean of sentence scores"
)


def parse_metrics(text: str | Sequence[str]) -> tuple[str, ...]:
    """``"bleu,chrf"`` or a list -> validated tuple of metric names."""
    names = [m.strip().lower() for m in (text.split(",") if isinstance(text, str) else text) if m.strip()]
    unknown = [m for m in names if m not in METRICS]
    if unknown or not names:
        raise ConfigError(f"metrics: unknown {unknown or 'empty list'}; choose from {', '.join(METRICS)}")
    return tuple(dict.fromkeys(names))


def multi30k_preprocess(lines: Sequence[str], lang: str) -> list[str]:
    """``lowercase.perl | normalize-punctuation.perl -l LANG | tokenizer.perl -l LANG`` on each line."""
    from nmtvariants.text.moses import NormalizeTokenize

    step = NormalizeTokenize(lang, lowercase=True)
    return [step(line) for line in lines]


def evaluate(
    hyp_path: PathLike,
    ref_paths: Sequence[PathLike] | PathLike,
    lang: str,
    metrics: Sequence[str] = ("bleu", "chrf", "ter"),
    tokenize: str | None = None,
    nltk_data: PathLike | None = None,
    preprocess: str = "none",
    meteor_home: PathLike | None = None,
    wordnet_dir: PathLike | None = None,
) -> dict[str, Any]:
    """Score a detokenised hypothesis file against one or more reference files.

    ``lang`` is the target language (it picks the BLEU tokenizer unless ``tokenize`` is given).
    Metrics: ``bleu``, ``chrf``, ``chrf++``, ``ter`` (sacreBLEU), ``tok-bleu`` (tokenised, compound
    split), ``meteor`` (Meteor 1.5 from ``meteor_home`` when given, else NLTK with WordNet from
    ``wordnet_dir``, prepared in ``nltk_data``), ``ribes`` (NLTK). ``preprocess``: ``none`` or
    ``multi30k`` (module docstring; the tokenizer is then ``none`` and ``tokenize`` must not be given).
    """
    if isinstance(ref_paths, (str, Path)):
        ref_paths = [ref_paths]
    metrics = parse_metrics(metrics)
    if preprocess not in PREPROCESSING:
        raise ConfigError(f"preprocess: unknown {preprocess!r}; choose from {', '.join(PREPROCESSING)}")
    hyps, refs = read_hyp_refs(hyp_path, ref_paths)
    extra: dict[str, Any] = {}
    if preprocess == "multi30k":
        if tokenize is not None or "tok-bleu" in metrics:
            raise ConfigError(
                "preprocess multi30k tokenises with Moses itself; drop --tokenize and the tok-bleu metric"
            )
        hyps = multi30k_preprocess(hyps, lang)
        refs = [multi30k_preprocess(ref, lang) for ref in refs]
        tokenize = "none"
        extra["preprocessing"] = (
            f"lowercase.perl | normalize-punctuation.perl -l {lang} | tokenizer.perl -l {lang} "
            f"(sacremoses {version('sacremoses')}, perl parity, escaped) on hypothesis and references"
        )
    scores: dict[str, Any] = {}
    for name in metrics:
        if name == "bleu" and preprocess == "multi30k":
            from nmtvariants.evaluation.tokenized_bleu import multi_bleu

            scores[name] = multi_bleu(hyps, refs)
        elif name in SACREBLEU_METRICS:
            scores[name] = sacrebleu_score(name, hyps, refs, lang, tokenize)
        elif name == "tok-bleu":
            from nmtvariants.evaluation.tokenized_bleu import tokenized_bleu

            scores[name] = tokenized_bleu(hyps, refs, lang)
        elif name == "meteor" and meteor_home is not None:
            from nmtvariants.evaluation.meteor15 import meteor15

            scores[name] = meteor15(hyps, refs, lang, meteor_home)
        elif name == "meteor":
            from nmtvariants.evaluation.meteor_ribes import meteor

            scores[name] = meteor(
                hyps, refs, lang, tokenize, data_dir=nltk_data, wordnet_dir=wordnet_dir or DEBIAN_WORDNET_DIR
            )
            scores[name]["differs_from"] = METEOR_1_5_NOTE
        elif name == "ribes":
            from nmtvariants.evaluation.meteor_ribes import ribes

            scores[name] = ribes(hyps, refs, lang, tokenize)
    return {
        "lang": lang,
        "preprocess": preprocess,
        **extra,
        "tokenize": tokenize or default_tokenizer(lang),
        "n_lines": len(hyps),
        "hypothesis": file_record(hyp_path),
        "references": [file_record(path) for path in ref_paths],
        "scores": scores,
    }
