"""sacreBLEU BLEU, chrF/chrF++ and TER on detokenised text, with the signature that makes them comparable.

The tokenizer is chosen from the target language the way WMT does it (``13a`` by default, ``zh`` for
Chinese, ``ja-mecab`` for Japanese), because BLEU on unsegmented Chinese/Japanese with ``13a``
counts whole clauses as one "word" and is meaningless.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sacrebleu.metrics import BLEU, CHRF, TER

from nmtvariants.errors import ConfigError, MissingResourceError

# Target language -> sacreBLEU tokenizer; every other language uses 13a.
TOKENIZER_BY_LANG: dict[str, str] = {"zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab"}
SACREBLEU_METRICS: tuple[str, ...] = ("bleu", "chrf", "chrf++", "ter")
# Languages written without spaces: TER needs its Asian-script splitting for them.
ASIAN_LANGS = frozenset({"zh", "ja", "ko"})


def default_tokenizer(lang: str) -> str:
    """The sacreBLEU tokenizer for a target language code (``de``, ``zh``, ``ja``, ...)."""
    return TOKENIZER_BY_LANG.get(lang.lower().split("-")[0], "13a")


def check_tokenizer(tokenize: str) -> None:
    """Fail early, with the install command, if a tokenizer's optional dependency is missing."""
    if tokenize.startswith(("ja-mecab", "ko-mecab")):
        extra = "ja" if tokenize.startswith("ja") else "ko"
        try:
            import MeCab  # noqa: F401
        except ImportError:
            raise MissingResourceError(
                f"sacreBLEU tokenizer {tokenize!r} needs MeCab: pip install 'sacrebleu[{extra}]'"
            ) from None


def build_metric(name: str, lang: str, tokenize: str | None = None) -> BLEU | CHRF | TER:
    """A configured sacreBLEU metric object for ``name`` in :data:`SACREBLEU_METRICS`."""
    if name == "bleu":
        tok = tokenize or default_tokenizer(lang)
        check_tokenizer(tok)
        return BLEU(tokenize=tok)
    if name == "chrf":
        return CHRF()
    if name == "chrf++":
        return CHRF(word_order=2)
    if name == "ter":
        return TER(asian_support=lang.lower().split("-")[0] in ASIAN_LANGS)
    raise ConfigError(
        f"metrics: unknown sacreBLEU metric {name!r}; choose from {', '.join(SACREBLEU_METRICS)}"
    )


def sacrebleu_score(
    name: str, hyps: Sequence[str], refs: Sequence[Sequence[str]], lang: str, tokenize: str | None = None
) -> dict[str, Any]:
    """One corpus-level sacreBLEU metric as a JSON-ready dict (score, signature, printable line)."""
    metric = build_metric(name, lang, tokenize)
    result = metric.corpus_score(list(hyps), [list(ref) for ref in refs])
    record: dict[str, Any] = {
        "score": float(result.score),
        "signature": str(metric.get_signature()),
        "formatted": result.format(signature=str(metric.get_signature())),
    }
    if name == "bleu":
        record.update(
            precisions=[float(p) for p in result.precisions],
            bp=float(result.bp),
            sys_len=int(result.sys_len),
            ref_len=int(result.ref_len),
            counts=[int(c) for c in result.counts],
            totals=[int(t) for t in result.totals],
        )
    return record
