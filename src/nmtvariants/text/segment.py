"""Word segmentation for Japanese and Chinese, which the Moses tokenizer leaves as unbroken runs.

Used where a study needs words for CJK text: EN->ZH (Yang et al.) before BPE, EN->JA (PASCAL) for
BPE and for scoring. Back ends, all optional imports:

* ``ja``: MeCab through fugashi with the unidic-lite dictionary (``pip install fugashi unidic-lite``).
  The PASCAL authors used CaboCha / KyTea, which have no package here; MeCab+UniDic is the closest
  installable segmenter, so BLEU on Japanese is comparable within this pipeline, not to the paper.
* ``zh``: jieba (``pip install jieba``), or ``chars`` (every CJK character is a token; no dependency).

The inverse is the Moses detokenizer with ``-l ja``/``-l zh``, which joins adjacent CJK tokens.
Whitespace in the input separates tokens and is otherwise dropped, as with any tokenizer.
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
    "\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\uff00-\uffef"
)
_CHAR_TOKENS = re.compile(f"[{_CJK_CHAR}]|[^{_CJK_CHAR}\\s]+")


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
        return " ".join(token for token in self._split(line) if token.strip())
