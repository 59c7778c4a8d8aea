"""Run foreign text through a trained preprocessing chain, with a token-count check.

Studies feed the model text that never went through the workflow's preprocessing: ContraWSD
candidates, gold-alignment sentences, adversarial sets. It has to reach the model exactly as the
training data did, so this module replays `rules/preprocess.smk` with the files one workflow run
trained (``data/<corpus>/<pair>/``)::

    normalise (Moses, optionally lower-case) -> tokenise (Moses, -a and escaping as configured)
    -> truecase (the pair's trained model; none with ``truecase: false``)
    -> BPE (the pair's codes, vocabulary and threshold)

With Emelin et al.'s transliterated joint BPE (``bpe.translit``), the transliteration is in the
codes: a transliterated language is segmented in its own script with the final codes and the other
language with ``codes.latin`` (`nmtvariants.text.bpe.codes_path_for`), as the workflow does.

Pre-tokenised text (gold alignments over given tokens) must keep its tokens: the chain then
normalises and escapes token by token and applies only the hyphen split that the word map undoes,
never the Moses tokenizer. Either way every output line is checked: the words behind its pieces
(`nmtvariants.text.subword_map.words`) must be as many as the text's own tokens (the given ones, or
Moses' tokens without hyphen splitting), else the error names the file and line.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from sacremoses import MosesTokenizer

from nmtvariants.errors import ConfigError, InputError, MissingResourceError
from nmtvariants.fileio import PathLike
from nmtvariants.text.bpe import BPESegmenter, codes_path_for, vocab_path_for
from nmtvariants.text.moses import Normalizer, Tokenizer
from nmtvariants.text.subword_map import HYPHEN, words
from nmtvariants.text.truecase import Truecaser

_HYPHEN_PATTERN, _HYPHEN_REPLACEMENT = MosesTokenizer.AGGRESSIVE_HYPHEN_SPLIT


@dataclass(frozen=True)
class ChainSettings:
    """The ``corpora.<name>.preprocess`` keys that shape a line; defaults are the schema's."""

    lowercase: bool = False
    aggressive_hyphen: bool = True
    escape: bool = False
    truecase: bool = True
    threshold: int = 50
    translit: tuple[str, ...] = ()

    @classmethod
    def from_preprocess(cls, preprocess: Mapping[str, Any]) -> ChainSettings:
        bpe = preprocess.get("bpe") or {}
        return cls(
            lowercase=bool(preprocess.get("lowercase", cls.lowercase)),
            aggressive_hyphen=bool(preprocess.get("aggressive_hyphen", cls.aggressive_hyphen)),
            escape=bool(preprocess.get("escape", cls.escape)),
            truecase=bool(preprocess.get("truecase", cls.truecase)),
            threshold=int(bpe.get("threshold", cls.threshold)),
            translit=tuple(bpe.get("translit", cls.translit)),
        )


def load_settings(config: PathLike, corpus: str) -> ChainSettings:
    """The chain settings of ``corpus`` in a workflow config file (e.g. config.yaml)."""
    path = Path(config)
    if not path.is_file():
        raise ConfigError(f"{path}: config not found; give the file the workflow ran with (--config)")
    with open(path, encoding="utf-8") as handle:
        loaded = yaml.safe_load(handle) or {}
    corpora = loaded.get("corpora") or {}
    if corpus not in corpora:
        raise ConfigError(
            f"{path}: no corpus '{corpus}' under corpora (known: {sorted(corpora)}); give --corpus"
        )
    return ChainSettings.from_preprocess(corpora[corpus].get("preprocess") or {})


def _required(path: Path, what: str) -> Path:
    if not path.is_file():
        raise MissingResourceError(
            f"{path}: {what} not found; run the workflow's preprocessing for this pair"
        )
    return path


class TrainedChain:
    """The forward chain of one language of a trained pair; a callable ``str -> str`` per line."""

    def __init__(
        self,
        lang: str,
        settings: ChainSettings,
        truecase_model: PathLike | None = None,
        codes: PathLike | None = None,
        vocab: PathLike | None = None,
    ):
        self.lang = lang
        self.settings = settings
        self._normalize = Normalizer(lang, lowercase=settings.lowercase)
        self._tokenize = Tokenizer(lang, settings.aggressive_hyphen, settings.escape)
        self._words = Tokenizer(lang, aggressive_dash_splits=False, escape=settings.escape)
        self._escape = MosesTokenizer(lang).escape_xml
        self._truecase = Truecaser(truecase_model) if truecase_model is not None else None
        self._bpe = (
            BPESegmenter(codes, vocab, settings.threshold if vocab is not None else None)
            if codes is not None
            else None
        )

    @classmethod
    def from_corpus_dir(cls, corpus_dir: PathLike, lang: str, settings: ChainSettings) -> TrainedChain:
        """The chain a workflow run trained under ``data/<corpus>/<src>-<tgt>`` for ``lang``."""
        folder = Path(corpus_dir)
        langs = folder.name.split("-")
        if len(langs) != 2 or lang not in langs:
            raise InputError(
                f"{folder}: expected a pair folder data/<corpus>/<src>-<tgt> containing '{lang}'"
            )
        translit = [other for other in settings.translit if other in langs]
        codes = codes_path_for(folder / "bpe" / "codes", lang, translit)
        model = folder / "truecase" / f"model.{lang}"
        return cls(
            lang,
            settings,
            truecase_model=_required(model, "truecase model") if settings.truecase else None,
            codes=_required(codes, "BPE codes"),
            vocab=_required(vocab_path_for(folder / "bpe", lang), "BPE vocabulary"),
        )

    def tokenize(self, line: str, pretokenized: bool = False) -> str:
        """Normalised, tokenised text (the input of truecasing); given tokens are never re-split."""
        if not pretokenized:
            return self._tokenize(self._normalize(line))
        tokens = []
        for token in line.split():
            token = self._normalize(token)
            if self.settings.aggressive_hyphen:
                token = _HYPHEN_PATTERN.sub(_HYPHEN_REPLACEMENT, token)
            tokens.append(self._escape(token) if self.settings.escape else token)
        return " ".join(" ".join(tokens).split())

    def own_tokens(self, line: str, pretokenized: bool = False) -> list[str]:
        """The text's own tokens: the given ones, or Moses' without hyphen splitting."""
        return line.split() if pretokenized else self._words(self._normalize(line)).split()

    def __call__(self, line: str, pretokenized: bool = False) -> str:
        text = self.tokenize(line, pretokenized)
        if self._truecase is not None:
            text = self._truecase(text)
        if self._bpe is not None:
            text = self._bpe(text)
        return text

    def apply(self, lines: Iterable[str], source: str, pretokenized: bool = False) -> Iterator[str]:
        """Each line through the chain, checked against its own tokens (``source`` names the file)."""
        hyphen = HYPHEN if self.settings.aggressive_hyphen else None
        for number, line in enumerate(lines, start=1):
            out = self(line, pretokenized)
            got = words(out.split(), hyphen=hyphen)
            expected = self.own_tokens(line, pretokenized)
            if len(got) != len(expected):
                kind = "given" if pretokenized else "Moses"
                raise InputError(
                    f"{source}:{number}: the chain gives {len(got)} words but the line has "
                    f"{len(expected)} {kind} tokens ({line!r} -> {out!r}); fix the line or the tokenisation"
                )
            yield out
