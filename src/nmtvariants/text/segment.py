"""Word segmentation for Japanese and Chinese, which the Moses tokenizer leaves as unbroken runs.

Used where a study needs words for CJK text: EN->ZH (Yang et al.) before BPE, EN->JA (PASCAL) for
BPE and for scoring. Back ends, all optional imports:

* ``ja``: MeCab through fugashi with the unidic-lite dictionary (``pip install fugashi unidic-lite``).
  The PASCAL authors used CaboCha / KyTea, which have no package here; MeCab+UniDic is the closest
  installable segmenter, so BLEU on Japanese is comparable within this pipeline, not to the paper.
* ``zh``: jieba (``pip install jieba``), or ``chars`` (every CJK character is a token; no dependency).

The inverse is `desegment`: keep a space only between two letters or digits of an alphabetic script
("iPhone 12") and drop all others. Moses' detokenizer alone is not enough: it joins ideographs but
leaves spaces around full-width punctuation such as ``（``, ``，`` and ASCII punctuation. A space that
the original had next to a CJK character or punctuation (``使用 Python``, ``Hello, world``) cannot be
told apart from a segmentation space and is lost; scoring tokenises Chinese/Japanese anyway (sacreBLEU's zh /
ja-mecab tokenizers), so this does not change scores.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from nmtvariants.errors import ConfigError, MissingResourceError

log = logging.getLogger(__name__)

METHODS = {"ja": ("mecab",), "zh": ("jieba", "chars")}

# CJK ideographs (incl. extension A and compatibility), kana, CJK punctuation and full-width forms.
_CJK_CHAR = (
    "\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
)
_CHAR_TOKENS = re.compile(f"[{_CJK_CHAR}]|[^{_CJK_CHAR}\\s]+")
# A space survives desegmentation only between two alphabetic-script letters or digits ("iPhone 12",
# "New York"); every other space came from segmentation (CJK text is written without spaces).
_WORD_CHAR = "A-Za-z0-9\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff"
_WORD_CHAR_RE = re.compile(f"[{_WORD_CHAR}]")
_SEGMENT_SPACE = re.compile(f"(?<![{_WORD_CHAR}]) +| +(?![{_WORD_CHAR}])")


def desegment(line: str) -> str:
    """Undo `Segmenter`: remove every space not between two alphabetic-script letters/digits."""
    return _SEGMENT_SPACE.sub("", line)


def _mecab() -> Callable[[str], list[str]]:
    try:
        import fugashi
    except ImportError:
        raise MissingResourceError(
            "Japanese segmentation needs MeCab: `pip install fugashi unidic-lite`"
        ) from None
    try:
        tagger = fugashi.Tagger()
    except RuntimeError as error:
        raise MissingResourceError(
            f"fugashi found no MeCab dictionary ({error}); `pip install unidic-lite`"
        ) from None
    return lambda line: [word.surface for word in tagger(line)]


def _jieba() -> Callable[[str], list[str]]:
    try:
        import jieba
    except ImportError:
        raise MissingResourceError("Chinese segmentation with jieba needs `pip install jieba`") from None
    jieba.setLogLevel(logging.WARNING)
    return lambda line: [word for word in jieba.cut(line) if not word.isspace()]


def _chars() -> Callable[[str], list[str]]:
    return _CHAR_TOKENS.findall


_BACKENDS = {"mecab": _mecab, "jieba": _jieba, "chars": _chars}


@dataclass
class Segmenter:
    """A picklable line step: the back end is built lazily in the process that uses it."""

    lang: str
    method: str | None = None
    _split: Callable[[str], list[str]] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.lang not in METHODS:
            raise ConfigError(f"segment: no segmenter for language {self.lang!r} (have: ja, zh)")
        self.method = self.method or METHODS[self.lang][0]
        if self.method not in METHODS[self.lang]:
            raise ConfigError(
                f"segment: method {self.method!r} is not available for {self.lang} "
                f"(choose from {', '.join(METHODS[self.lang])})"
            )

    def __getstate__(self) -> dict:
        # MeCab taggers cannot be pickled; each process builds its own.
        return {"lang": self.lang, "method": self.method, "_split": None}

    def __call__(self, line: str) -> str:
        if self._split is None:
            self._split = _BACKENDS[self.method]()
        # Tokens that touch in the text across a letter/digit boundary ("C" "62", "5" "t") are glued
        # back: the segmenters split such runs, and `desegment` could not restore them.
        tokens: list[str] = []
        position = 0
        for token in self._split(line):
            if not token.strip():
                continue
            start = line.find(token, position)
            if (
                tokens
                and start == position
                and _WORD_CHAR_RE.match(tokens[-1][-1])
                and _WORD_CHAR_RE.match(token[0])
            ):
                tokens[-1] += token
            else:
                tokens.append(token)
            if start >= 0:
                position = start + len(token)
        return " ".join(tokens)
