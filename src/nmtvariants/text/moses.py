"""Moses punctuation normalisation, tokenisation and detokenisation through sacremoses.

Each step is a small picklable callable ``str -> str`` (one line in, one line out) so that the same
object runs in-process, in a `sharding` worker pool, or from the command line. The sacremoses object
is built once per step (hence once per worker process), never once per line.

Moses-parity choices, each measured against the upstream Multi30k files that were produced by the
perl scripts (see tests/test_multi30k_parity.py):

* ``normalize-punctuation.perl`` reads lines *with* their trailing newline, and one of its German /
  French / Spanish rules (``s/(\\.+)\\"(\\s*[^<])/\\"$1$2/``) matches that newline, so a sentence-final
  ``."`` becomes ``".`` in perl. sacremoses receives lines without the newline and misses this. We
  hand the normaliser ``line + "\\n"`` (it strips the result), which restores perl's behaviour.
* sacremoses' ``perl_parity=True`` maps a ``’`` that is not between two letters to ``"`` as the perl
  script does (sacremoses' own default maps it to ``'``). We default to perl parity.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sacremoses import MosesDetokenizer, MosesPunctNormalizer, MosesTokenizer


@dataclass
class Normalizer:
    """``normalize-punctuation.perl -l LANG`` (optionally after ``lowercase.perl``)."""

    lang: str
    lowercase: bool = False
    perl_parity: bool = True
    _impl: MosesPunctNormalizer = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._impl = MosesPunctNormalizer(self.lang, perl_parity=self.perl_parity)

    def __call__(self, line: str) -> str:
        if self.lowercase:
            line = line.lower()
        # The newline lets the perl rule that needs "any character after the quote" fire at the end
        # of the line, as it does in perl; sacremoses strips it again.
        return self._impl.normalize(line + "\n")


@dataclass
class Tokenizer:
    """``tokenizer.perl -l LANG [-a] [-no-escape]``: split punctuation, optionally escape XML chars.

    ``aggressive_dash_splits`` (``-a``) writes intra-word hyphens as `` @-@ ``; Emelin et al. use it,
    the Multi30k upstream files do not. ``escape`` turns ``& | < > ' " [ ]`` into HTML entities as
    Moses does by default.
    """

    lang: str
    aggressive_dash_splits: bool = False
    escape: bool = True
    _impl: MosesTokenizer = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._impl = MosesTokenizer(self.lang)

    def __call__(self, line: str) -> str:
        return self._impl.tokenize(
            line,
            aggressive_dash_splits=self.aggressive_dash_splits,
            escape=self.escape,
            return_str=True,
        )


@dataclass
class NormalizeTokenize:
    """Normalisation then tokenisation in one step, so a worker pool ships each line only once."""

    lang: str
    lowercase: bool = False
    perl_parity: bool = True
    aggressive_dash_splits: bool = False
    escape: bool = True
    _normalize: Normalizer = field(init=False, repr=False)
    _tokenize: Tokenizer = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._normalize = Normalizer(self.lang, lowercase=self.lowercase, perl_parity=self.perl_parity)
        self._tokenize = Tokenizer(
            self.lang, aggressive_dash_splits=self.aggressive_dash_splits, escape=self.escape
        )

    def __call__(self, line: str) -> str:
        return self._tokenize(self._normalize(line))


@dataclass
class Detokenizer:
    """``detokenizer.perl -l LANG``: re-attach punctuation, undo `` @-@ `` and the XML escapes.

    For Chinese and Japanese it also joins adjacent CJK tokens, which is the inverse of `segment`.
    """

    lang: str
    unescape: bool = True
    _impl: MosesDetokenizer = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._impl = MosesDetokenizer(self.lang)

    def __call__(self, line: str) -> str:
        return self._impl.detokenize(line.split(), return_str=True, unescape=self.unescape)
