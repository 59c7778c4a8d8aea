"""``evaluate``: every metric a study asks for, on one hypothesis file, as one JSON-ready record.

The record holds what is needed to trust a number later: each metric's signature, the number of
lines, and the path and sha256 of the hypothesis and reference files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nmtvariants.errors import ConfigError
from nmtvariants.evaluation.bleu import SACREBLEU_METRICS, default_tokenizer, sacrebleu_score
from nmtvariants.evaluation.inputs import read_hyp_refs
from nmtvariants.evaluation.results import file_record
from nmtvariants.fileio import PathLike

METRICS: tuple[str, ...] = (*SACREBLEU_METRICS, "tok-bleu", "meteor", "ribes")


def parse_metrics(text: str | Sequence[str]) -> tuple[str, ...]:
    """``"bleu,chrf"`` or a list -> validated tuple of metric names."""
    names = [m.strip().lower() for m in (text.split(",") if isinstance(text, str) else text) if m.strip()]
    unknown = [m for m in names if m not in METRICS]
    if unknown or not names:
        raise ConfigError(f"metrics: unknown {unknown or 'empty list'}; choose from {', '.join(METRICS)}")
    return tuple(dict.fromkeys(names))


def evaluate(
    hyp_path: PathLike,
    ref_paths: Sequence[PathLike] | PathLike,
    lang: str,
    metrics: Sequence[str] = ("bleu", "chrf", "ter"),
    tokenize: str | None = None,
    nltk_data: PathLike | None = None,
) -> dict[str, Any]:
    """Score a detokenised hypothesis file against one or more reference files.

    ``lang`` is the target language (it picks the BLEU tokenizer unless ``tokenize`` is given).
    Metrics: ``bleu``, ``chrf``, ``chrf++``, ``ter`` (sacreBLEU), ``tok-bleu`` (tokenised, compound
    split), ``meteor`` (NLTK + WordNet in ``nltk_data``), ``ribes`` (NLTK).
    """
    if isinstance(ref_paths, (str, Path)):
        ref_paths = [ref_paths]
    metrics = parse_metrics(metrics)
    hyps, refs = read_hyp_refs(hyp_path, ref_paths)
    scores: dict[str, Any] = {}
    for name in metrics:
        if name in SACREBLEU_METRICS:
            scores[name] = sacrebleu_score(name, hyps, refs, lang, tokenize)
        elif name == "tok-bleu":
            from nmtvariants.evaluation.tokenized_bleu import tokenized_bleu

            scores[name] = tokenized_bleu(hyps, refs, lang)
        elif name == "meteor":
            from nmtvariants.evaluation.meteor_ribes import meteor

            scores[name] = meteor(hyps, refs, lang, tokenize, data_dir=nltk_data)
        elif name == "ribes":
            from nmtvariants.evaluation.meteor_ribes import ribes

            scores[name] = ribes(hyps, refs, lang, tokenize)
    return {
        "lang": lang,
        "tokenize": tokenize or default_tokenizer(lang),
        "n_lines": len(hyps),
        "hypothesis": file_record(hyp_path),
        "references": [file_record(path) for path in ref_paths],
        "scores": scores,
    }
