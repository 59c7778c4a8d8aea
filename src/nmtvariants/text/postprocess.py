"""The exact inverse of the preprocessing chain, applied to system output before scoring.

Forward:  normalize -> tokenize [-> segment] [-> truecase] -> [transliterate] -> BPE
Inverse:  remove BPE -> [map transliteration back] [-> detruecase] -> detokenize [-> desegment ja/zh]

Truecasing and detruecasing both follow the corpus's ``preprocess.truecase``: without it the tc/
stage is the identity and nothing is detruecased (``truecased=False``).

Normalisation has no inverse (it maps several characters to one); the design compares the
detokenised output with the *raw* reference, so whatever normalisation changed stays a difference
(see `roundtrip` for how often that happens on real test sets).

The transliteration step is a plug-in: any callable ``str -> str`` (for Russian the reverse of the
ISO 9 mapping from `nmtvariants.text.translit`); this module does not import it, so the inverse chain
works without it and the two stay independent.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field

from nmtvariants.errors import ConfigError
from nmtvariants.text.moses import Detokenizer
from nmtvariants.text.segment import METHODS as SEGMENTED_LANGUAGES
from nmtvariants.text.segment import desegment
from nmtvariants.text.sharding import LineStep
from nmtvariants.text.subword_map import SEPARATOR
from nmtvariants.text.truecase import Detruecaser

_BPE_MARKER = re.compile(f"{re.escape(SEPARATOR)}( |$)")

# Where Moses' detokenizer does not invert its tokenizer: the tokenizer splits every "/" and every
# ":" ("10:00" -> "10 : 00", "he/she" -> "he / she") and the detokenizer leaves "10: 00", "he / she".
# In the references at hand the tight forms dominate (WMT newstest 2013/2014/2017, 7 languages:
# 138 lines with a tight "x/y" and 1 with a spaced "x / y"; 100 lines with "d:d" and none with
# "d: d"), so the inverse chain joins them, as the PASCAL authors' post-detokenisation sed does.
_SPACED_SLASH = re.compile(r"(?<=\S) / (?=\S)")
_SPACED_DIGIT_COLON = re.compile(r"(?<=\d): (?=\d)")


def remove_bpe(line: str) -> str:
    """Undo subword-nmt segmentation: ``"Hau@@ s"`` -> ``"Haus"`` (fairseq's ``--remove-bpe``)."""
    return _BPE_MARKER.sub("", line)


# Outside English, French and Italian the Moses tokenizer splits an apostrophe from both neighbours
# ("gibt's" -> "gibt &apos; s", "O'Malley" -> "O &apos; Malley") and the detokenizer then treats it as
# a quotation mark. Tight forms dominate the references (German newstest 2013/2014: 39 lines with
# "x'y", 5 with a spaced quote), but quotation marks flanked by words are real, so only the two
# unambiguous cases are re-joined before detokenising: the clitic 's and an Irish/French "O'"/"D'"/"L'".
_APOSTROPHE_SPLITTING = {"en", "fr", "it"}
_CLITIC_S = re.compile(r"(?<=\w) (&apos;|') (?=s( |$))")
_NAME_PREFIX = re.compile(r"(?:(?<=^)|(?<= ))([ODL]) (&apos;|') (?=[A-Z])")


def join_split_apostrophes(line: str) -> str:
    """Tokenised text: ``gibt &apos; s`` -> ``gibt&apos;s``, ``O &apos; Malley`` -> ``O&apos;Malley``."""
    line = _CLITIC_S.sub(r"\1", line)
    return _NAME_PREFIX.sub(r"\1\2", line)


def repair_detokenized(line: str) -> str:
    """Join ``x / y`` -> ``x/y`` and ``10: 00`` -> ``10:00`` after Moses detokenisation (see above)."""
    return _SPACED_DIGIT_COLON.sub(":", _SPACED_SLASH.sub("/", line))


def load_callable(spec: str) -> LineStep:
    """Import ``"package.module:function"`` and return the function (for CLI plug-in steps)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ConfigError(f"plug-in step {spec!r}: expected 'package.module:function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(f"plug-in step {spec!r}: cannot import {module_name} ({error})") from None
    function = getattr(module, attribute, None)
    if not callable(function):
        raise ConfigError(f"plug-in step {spec!r}: {module_name} has no callable {attribute!r}")
    return function


@dataclass
class InverseChain:
    """One picklable line step for the whole inverse chain; switch off the steps a study skips.

    ``repair`` applies `join_split_apostrophes` before and `repair_detokenized` after detokenisation
    (off = plain Moses output).
    E.g. Multi30k is scored on lower-cased tokenised text: ``InverseChain("de", truecased=False,
    detokenize=False)`` only removes BPE. ``translit_reverse`` is the plug-in for Russian.
    """

    lang: str
    bpe: bool = True
    truecased: bool = True
    detokenize: bool = True
    repair: bool = True
    translit_reverse: LineStep | None = None
    _detruecase: Detruecaser = field(init=False, repr=False)
    _detokenize: Detokenizer = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._detruecase = Detruecaser()
        self._detokenize = Detokenizer(self.lang)

    def __call__(self, line: str) -> str:
        if self.bpe:
            line = remove_bpe(line)
        if self.translit_reverse is not None:
            line = self.translit_reverse(line)
        if self.truecased:
            line = self._detruecase(line)
        if self.detokenize:
            if self.repair and self.lang not in _APOSTROPHE_SPLITTING:
                line = join_split_apostrophes(line)
            line = self._detokenize(line)
            if self.repair:
                line = repair_detokenized(line)
            if self.lang in SEGMENTED_LANGUAGES:
                line = desegment(line)
        return line
