"""Dependency-parse a Moses-tokenised corpus with Stanza, one CoNLL-U sentence per corpus line.

Why this shape: PASCAL and LISA need a parse whose words are exactly the corpus's Moses tokens, so
that :mod:`nmtvariants.syntax.parents` can map words onto BPE tokens. Stanza therefore runs
pretokenised (one parser word per Moses token, no sentence splitting, no multi-word expansion), on
the tokens with the Moses XML escapes undone (the parser was trained on ``'s`` and ``&``, not on
``&apos;s`` and ``&amp;``); the escaped tokens are put back as the FORM of the output, so the CoNLL-U
matches the corpus line by line and token by token. The lemma column is the word itself (Stanza's
identity lemmatiser: dependency parsing needs a lemma processor, PASCAL needs no lemmas).

Models come from a directory (``model_dir``) holding ``<lang>_tagger.pt`` and ``<lang>_parser.pt``
as Stanza's own training entry points write them (:mod:`nmtvariants.syntax.stanza_train` trains them
offline on a UD treebank). Stanza's hub cannot be reached from the offline machines, so the pipeline
is built with ``download_method=None`` from an empty ``resources.json`` and explicit model paths.

Sentences go to Stanza in batches of ``batch_size`` lines (Stanza batches words inside them again);
on a GPU when one is available unless ``device`` says otherwise.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, atomic_write, read_lines
from nmtvariants.syntax.conllu import Sentence, Word, format_sentence
from nmtvariants.syntax.parents import unescape_moses

log = logging.getLogger(__name__)

TAGGER_FILE = "{lang}_tagger.pt"
PARSER_FILE = "{lang}_parser.pt"
DEFAULT_BATCH = 256
HOW_TO_GET = (
    "train them offline with `nmtvariants stanza-train --train TREEBANK.conllu --dev DEV.conllu "
    "--lang {lang} --model-dir {dir}` (Stanza's hub models cannot be downloaded on the offline machines)"
)


@dataclass(frozen=True)
class StanzaModels:
    """Where a language's tagger and parser live; :meth:`check` raises a helpful InputError."""

    model_dir: Path
    lang: str

    @property
    def tagger(self) -> Path:
        return self.model_dir / TAGGER_FILE.format(lang=self.lang)

    @property
    def parser(self) -> Path:
        return self.model_dir / PARSER_FILE.format(lang=self.lang)

    def check(self) -> None:
        missing = [path.name for path in (self.tagger, self.parser) if not path.is_file()]
        if missing:
            raise InputError(
                f"{self.model_dir}: no Stanza model(s) {', '.join(missing)} for language {self.lang!r}; "
                + HOW_TO_GET.format(lang=self.lang, dir=self.model_dir)
            )


def build_pipeline(models: StanzaModels, device: str | None = None):
    """A pretokenised tagger + parser pipeline that never touches the network."""
    models.check()
    import stanza  # heavy; only the parse step needs it
    import torch

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    # Stanza insists on a resources.json in `dir`; an empty one is enough with explicit model paths.
    # The directory lives as long as the pipeline (it is attached to it below).
    resources = tempfile.TemporaryDirectory(prefix="stanza-resources-")
    (Path(resources.name) / "resources.json").write_text(json.dumps({}))
    pipeline = stanza.Pipeline(
        lang=models.lang,
        dir=resources.name,
        processors="tokenize,pos,lemma,depparse",
        tokenize_pretokenized=True,
        lemma_use_identity=True,
        pos_model_path=str(models.tagger),
        pos_pretrain_path=None,
        depparse_model_path=str(models.parser),
        depparse_pretrain_path=None,
        allow_unknown_language=True,
        download_method=None,
        device=device,
        logging_level="WARN",
    )
    pipeline.nmtvariants_resources = resources
    return pipeline


def _batches(lines: Iterable[str], size: int, source: str) -> Iterator[list[list[str]]]:
    batch: list[list[str]] = []
    for number, line in enumerate(lines, start=1):
        tokens = line.split()
        if not tokens:
            raise InputError(
                f"{source}:{number}: empty line; a parse needs at least one token per line "
                "(clean the corpus before parsing)"
            )
        batch.append(tokens)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _stanza_words(pipeline, batch: Sequence[Sequence[str]]) -> list[list]:
    """Stanza's words for pretokenised word lists, checked to be one per given word."""
    document = pipeline([list(words) for words in batch])
    if len(document.sentences) != len(batch):
        raise RuntimeError(f"Stanza returned {len(document.sentences)} sentences for {len(batch)} lines")
    out = []
    for tokens, parsed in zip(batch, document.sentences, strict=True):
        if len(parsed.words) != len(tokens):
            raise RuntimeError(
                f"Stanza returned {len(parsed.words)} words for {len(tokens)} pretokenised tokens"
            )
        out.append(parsed.words)
    return out


def parse_batch(pipeline, batch: Sequence[Sequence[str]]) -> list[Sentence]:
    """Parse Moses token lists; the sentences' FORMs are the tokens as given (escapes kept)."""
    parsed_words = _stanza_words(pipeline, [[unescape_moses(token) for token in tokens] for tokens in batch])
    out = []
    for tokens, words in zip(batch, parsed_words, strict=True):
        out.append(
            Sentence(
                words=[
                    Word(
                        id=index,
                        form=token,
                        lemma=token,
                        upos=word.upos or "_",
                        xpos=word.xpos or "_",
                        feats=word.feats or "_",
                        head=word.head,
                        deprel=word.deprel or "_",
                    )
                    for index, (token, word) in enumerate(zip(tokens, words, strict=True), start=1)
                ]
            )
        )
    return out


def parse_file(
    source: PathLike,
    output: PathLike,
    models: StanzaModels,
    batch_size: int = DEFAULT_BATCH,
    device: str | None = None,
) -> int:
    """Parse every line of ``source`` into ``output`` (CoNLL-U, atomically); return the line count."""
    models.check()  # before reading anything, so a missing model is the first thing a user hears
    pipeline = build_pipeline(models, device)
    count = 0
    with atomic_write(output) as out:
        for batch in _batches(read_lines(source), batch_size, str(source)):
            for sentence in parse_batch(pipeline, batch):
                out.write(format_sentence(sentence))
            count += len(batch)
            log.info("%s: parsed %d lines", source, count)
    return count


def parse_treebank(
    gold: Sequence[Sentence], models: StanzaModels, batch_size: int = DEFAULT_BATCH, device: str | None = None
) -> list[Sentence]:
    """Re-tag and re-parse a treebank on its gold words (for UAS/LAS, :mod:`attachment`): each gold
    sentence with Stanza's UPOS, XPOS, FEATS, HEAD and DEPREL; comments and multiword-token lines kept,
    empty nodes and enhanced dependencies dropped (they are gold annotation the parser does not make)."""
    pipeline = build_pipeline(models, device)
    out = []
    for start in range(0, len(gold), batch_size):
        chunk = gold[start : start + batch_size]
        for sentence, words in zip(chunk, _stanza_words(pipeline, [s.forms for s in chunk]), strict=True):
            predicted = [
                dataclasses.replace(
                    word,
                    upos=parsed.upos or "_",
                    xpos=parsed.xpos or "_",
                    feats=parsed.feats or "_",
                    head=parsed.head,
                    deprel=parsed.deprel or "_",
                    deps="_",
                )
                for word, parsed in zip(sentence.words, words, strict=True)
            ]
            out.append(dataclasses.replace(sentence, words=predicted, empty_nodes=[]))
        log.info("parsed %d of %d gold sentences", len(out), len(gold))
    return out
