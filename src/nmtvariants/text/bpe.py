"""Joint BPE with subword-nmt: learn codes and per-language vocabularies, apply with a threshold, undo.

Everything that decides a segmentation is subword-nmt's own code (``learn_joint_bpe_and_vocab``,
``apply_bpe.BPE``, ``read_vocabulary``, ``get_vocab``), called the way its command-line tools call it,
so the files are byte-identical to ``subword-nmt learn-joint-bpe-and-vocab`` / ``apply-bpe`` (the
tests compare them). This module adds what a pipeline needs around it: atomic outputs, errors that
name the file and line, a picklable per-line segmenter for process pools, and Emelin et al.'s
transliterated joint BPE for Russian.

The Russian procedure (seed-implementation.md §1.9, the authors' ``scripts/preprocess.sh``):

1. the Russian training side is transliterated to Latin (ISO 9) and joint BPE is learned on
   English + transliterated Russian (``codes.latin``);
2. the merge list without its ``#version`` line is reverse-transliterated, and the final codes file is
   ``[version line] + Cyrillic merges + Latin merges`` (so Latin words inside Russian text still
   find their merges);
3. English is segmented with ``codes.latin`` (the authors' ``.bpe.latin`` file) and its vocabulary;
   Russian is segmented in Cyrillic with the final codes: first without a vocabulary, the sub-word
   counts of that output become ``vocab.ru`` ("true counts"), and every Russian file is then segmented
   with ``--vocabulary vocab.ru --vocabulary-threshold 50``. The model never sees Latin Russian.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import functools
import io
import logging
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

from subword_nmt import apply_bpe as subword_apply
from subword_nmt import get_vocab as subword_get_vocab
from subword_nmt import learn_joint_bpe_and_vocab as subword_joint

from nmtvariants.data.vocab import Vocabulary
from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, atomic_write, read_lines
from nmtvariants.text.subword_map import SEPARATOR
from nmtvariants.text.translit import Transliteration

log = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 50
LATIN_SUFFIX = ".latin"
# Word types a segmenting process remembers (benchmarks/bpe_memo_bound.py measured the bound).
MEMO_WORDS = 1 << 18


# --------------------------------------------------------------------------------------------------
# Applying


class BoundedMemo(dict):
    """subword-nmt's word -> segments memo, holding at most ``max_words`` words: the first ones met.

    ``apply_bpe.BPE`` remembers every word type it has segmented, so a process that segments WMT14's
    4.5M lines grows with the corpus's ~2M types (396 MB at 100% against 158 MB at 10%,
    benchmarks/results/scale_data_path.md). A memo only saves work, so a bounded one changes no
    output. By Zipf's law the first words met are the frequent ones, so a full memo stops taking new
    words instead of evicting: a later word is segmented again each time it occurs, and look-ups stay
    in C (only insertion is overridden). On 1M WMT-sized lines, :data:`MEMO_WORDS` costs 1.05x the
    time of the unbounded memo for half the peak memory; emptying the memo when full cost 1.34x
    (benchmarks/results/bpe_memo_bound.md).
    """

    def __init__(self, max_words: int):
        super().__init__()
        self.max_words = max_words

    def __setitem__(self, word: str, segments: tuple[str, ...]) -> None:
        if len(self) < self.max_words:
            super().__setitem__(word, segments)


class BPESegmenter:
    """Segment one line at a time exactly like ``subword-nmt apply-bpe``; picklable for process pools.

    Only the file names and settings are pickled; each process loads the codes and vocabulary on its
    first call, so a pool of workers (``pool.imap(segmenter, lines, chunksize=...)``) does not ship a
    large object per task.
    """

    def __init__(
        self,
        codes: PathLike,
        vocab: PathLike | None = None,
        threshold: int | None = DEFAULT_THRESHOLD,
        separator: str = SEPARATOR,
        merges: int = -1,
        memo_words: int = MEMO_WORDS,
    ):
        self.codes = Path(codes)
        self.vocab = Path(vocab) if vocab is not None else None
        self.threshold = threshold
        self.separator = separator
        self.merges = merges
        self.memo_words = memo_words
        self._bpe: subword_apply.BPE | None = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_bpe"] = None
        return state

    def _load(self) -> subword_apply.BPE:
        vocabulary = read_bpe_vocabulary(self.vocab, self.threshold) if self.vocab is not None else None
        if not self.codes.is_file():
            raise InputError(f"{self.codes}: BPE codes file not found; learn it with `nmtvariants bpe learn`")
        with codecs.open(str(self.codes), encoding="utf-8") as handle:
            text = handle.read()
        # the same split as BPE.__init__, so that a bad line is reported instead of sys.exit(1)
        for number, line in enumerate(text.rstrip("\n").split("\n"), start=1):
            if (number > 1 or not line.startswith("#version:")) and len(line.strip("\r\n ").split(" ")) != 2:
                raise InputError(
                    f"{self.codes}:{number}: not a BPE merge (two sub-words separated by one space): "
                    f"{line!r}; re-learn the codes with `nmtvariants bpe learn`"
                )
        self._bpe = subword_apply.BPE(io.StringIO(text), self.merges, self.separator, vocabulary, None)
        self._bpe.cache = BoundedMemo(self.memo_words)
        return self._bpe

    def __call__(self, line: str) -> str:
        """Segment one line given without its line end; empty lines stay empty."""
        bpe = self._bpe or self._load()
        pieces = line.splitlines(keepends=True)
        if len(pieces) <= 1:
            return bpe.process_line(line)
        # subword-nmt reads through `codecs`, which also breaks lines at U+2028, U+0085, ... and
        # segments each piece on its own; do the same so that the output stays byte-identical.
        return "".join(bpe.process_line(piece) for piece in pieces)


def read_bpe_vocabulary(path: PathLike, threshold: int | None) -> set[str]:
    """``subword_nmt.apply_bpe.read_vocabulary`` with a clean error for a malformed line."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: BPE vocabulary not found; `nmtvariants bpe learn` writes it")
    with codecs.open(str(path), encoding="utf-8") as handle:
        lines = handle.readlines()
    for number, line in enumerate(lines, start=1):
        fields = line.strip("\r\n ").split(" ")
        if len(fields) != 2 or not fields[1].lstrip("-").isdigit():
            raise InputError(
                f"{path}:{number}: not a 'subword count' line: {line.rstrip()!r}; "
                "use the vocabulary written by `nmtvariants bpe learn`"
            )
    return subword_apply.read_vocabulary(lines, threshold)


def apply_bpe(
    codes: PathLike,
    vocab: PathLike | None,
    threshold: int | None,
    input_path: PathLike,
    output_path: PathLike,
    separator: str = SEPARATOR,
) -> int:
    """Segment ``input_path`` into ``output_path`` (atomically); return the number of lines.

    Same output as ``subword-nmt apply-bpe -c CODES [--vocabulary VOCAB --vocabulary-threshold T]``.
    """
    segmenter = BPESegmenter(codes, vocab, threshold, separator)
    count = 0
    with atomic_write(output_path) as out:
        for line in read_lines(input_path):
            out.write(segmenter(line))
            out.write("\n")
            count += 1
    return count


def undo_bpe(line: str, separator: str = SEPARATOR) -> str:
    """Join sub-words: the standard ``sed -r 's/(@@ )|(@@ ?$)//g'``."""
    return _undo_pattern(separator).sub("", line)


@functools.cache
def _undo_pattern(separator: str) -> re.Pattern[str]:
    return re.compile(f"({re.escape(separator)} )|({re.escape(separator)} ?$)")


# --------------------------------------------------------------------------------------------------
# Learning


@dataclass(frozen=True)
class JointBPE:
    """What `learn_joint_bpe` wrote: the codes file and the vocabulary to apply, per language."""

    codes: dict[str, Path]
    vocab: dict[str, Path]


def latin_codes_path(codes_out: PathLike) -> Path:
    """Where the Latin-only codes go when a transliteration is used (``<codes>.latin``)."""
    return Path(str(codes_out) + LATIN_SUFFIX)


def codes_path_for(codes_out: PathLike, lang: str, translit_langs: Iterable[str] = ()) -> Path:
    """The codes file that segments ``lang``: the final codes for transliterated languages and for
    every language when nothing is transliterated, the Latin codes otherwise (as the authors did)."""
    translit_langs = list(translit_langs)
    if not translit_langs or lang in translit_langs:
        return Path(codes_out)
    return latin_codes_path(codes_out)


def vocab_path_for(vocab_out_dir: PathLike, lang: str) -> Path:
    return Path(vocab_out_dir) / f"vocab.{lang}"


def _publish(source: Path, target: Path) -> None:
    """Move a finished temporary file onto its final name atomically (any file system)."""
    with open(source, "rb") as handle, atomic_write(target, "wb") as out:
        shutil.copyfileobj(handle, out)
    source.unlink()


def _check_utf8(path: Path) -> None:
    """Find and report the first undecodable line (subword-nmt would fail with a bare traceback)."""
    for _ in read_lines(path):
        pass


def _plain_copy(path: Path, workdir: Path, name: str) -> Path:
    """subword-nmt reads plain files by name: decompress a ``.gz`` input first."""
    if path.suffix != ".gz":
        return path
    target = workdir / name
    with atomic_write(target) as out:
        for line in read_lines(path):
            out.write(line + "\n")
    return target


def _run_subword_joint(
    inputs: list[Path], codes: Path, vocabs: list[Path], merges: int, min_frequency: int, num_workers: int
) -> None:
    """Call subword-nmt's own ``learn_joint_bpe_and_vocab`` as its CLI does (it reopens files by name)."""
    args = argparse.Namespace(
        input=[argparse.Namespace(name=str(path)) for path in inputs],
        output=argparse.Namespace(name=str(codes)),
        vocab=[argparse.Namespace(name=str(path)) for path in vocabs],
        symbols=merges,
        separator=SEPARATOR,
        min_frequency=min_frequency,
        total_symbols=False,
        num_workers=num_workers,
        verbose=False,
    )
    try:
        subword_joint.learn_joint_bpe_and_vocab(args)
    except UnicodeDecodeError:
        for path in inputs:
            _check_utf8(path)
        raise
    finally:
        for handle in chain(args.input, args.vocab):
            with contextlib.suppress(AttributeError):
                handle.close()


def true_counts(codes: PathLike, train_file: PathLike, vocab_out: PathLike) -> None:
    """Segment ``train_file`` without a vocabulary and write its sub-word counts (``get-vocab``)."""
    with tempfile.TemporaryDirectory(dir=Path(vocab_out).parent) as tmp:
        segmented = Path(tmp) / "segmented"
        apply_bpe(codes, None, None, train_file, segmented)
        with codecs.open(str(segmented), encoding="utf-8") as source, atomic_write(vocab_out) as out:
            subword_get_vocab.get_vocab(source, out)


def learn_joint_bpe(
    train_files: Mapping[str, PathLike],
    merges: int,
    codes_out: PathLike,
    vocab_out_dir: PathLike,
    translit: Mapping[str, Transliteration] | None = None,
    min_frequency: int = 2,
    num_workers: int = 1,
    vocab_langs: Iterable[str] | None = None,
) -> JointBPE:
    """Learn joint BPE on the training files (one per language) and write per-language vocabularies.

    Without ``translit`` this is ``subword-nmt learn-joint-bpe-and-vocab --input F1 F2 -s MERGES -o
    CODES --write-vocabulary vocab.L1 vocab.L2``. With ``translit={"ru": ISO9}`` it is the Russian
    procedure in the module docstring: ``codes_out`` holds version + Cyrillic + Latin merges (apply it
    to Russian), ``<codes_out>.latin`` the learned Latin merges (apply it to the other languages),
    ``vocab.ru`` the true Cyrillic sub-word counts and ``vocab.ru.latin`` the learner's own vocabulary
    of the transliterated side (kept for inspection only).

    ``vocab_langs`` (default: all) are the languages whose ``vocab.<lang>`` is written; the merges are
    learned on every file. A further language that only shares the codes (``preprocess.bpe.shared_with``)
    gets its vocabulary from :func:`true_counts` in a job of its own, which writes the same counts.
    """
    if merges < 1:
        raise InputError(f"bpe merges must be a positive number, got {merges}")
    translit = dict(translit or {})
    unknown = sorted(set(translit) - set(train_files))
    if unknown:
        raise InputError(
            f"--translit names {unknown} but there are training files only for {sorted(train_files)}"
        )
    sources = {lang: Path(path) for lang, path in train_files.items()}
    for lang, path in sources.items():
        if not path.is_file():
            raise InputError(f"{path}: training file for '{lang}' not found")
    codes_out, vocab_dir = Path(codes_out), Path(vocab_out_dir)
    vocab_dir.mkdir(parents=True, exist_ok=True)
    codes_out.parent.mkdir(parents=True, exist_ok=True)
    langs = list(sources)
    written = set(langs if vocab_langs is None else vocab_langs)
    unknown = sorted(written - set(langs))
    if unknown:
        raise InputError(f"vocabularies asked for {unknown} but there are training files only for {langs}")

    with tempfile.TemporaryDirectory(prefix=".bpe-learn-", dir=vocab_dir) as tmp_name:
        tmp = Path(tmp_name)
        inputs: list[Path] = []
        for lang in langs:
            plain = _plain_copy(sources[lang], tmp, f"train.{lang}")
            if lang in translit:
                latin = tmp / f"train.{lang}{LATIN_SUFFIX}"
                forward = translit[lang].forward
                with atomic_write(latin) as out:
                    for line in read_lines(plain):
                        out.write(forward(line) + "\n")
                plain = latin
            inputs.append(plain)
        learned_codes = tmp / "codes"
        learned_vocabs = [tmp / f"vocab.{lang}" for lang in langs]
        log.info("learning %d joint BPE merges on %s", merges, ", ".join(map(str, inputs)))
        _run_subword_joint(inputs, learned_codes, learned_vocabs, merges, min_frequency, num_workers)

        codes: dict[str, Path] = {}
        vocab: dict[str, Path] = {}
        if not translit:
            _publish(learned_codes, codes_out)
            for lang, learned in zip(langs, learned_vocabs, strict=True):
                codes[lang] = codes_out
                if lang in written:
                    vocab[lang] = vocab_path_for(vocab_dir, lang)
                    _publish(learned, vocab[lang])
            return JointBPE(codes, vocab)

        latin_codes = latin_codes_path(codes_out)
        _write_mapped_back_codes(learned_codes, codes_out, [translit[lang] for lang in translit])
        _publish(learned_codes, latin_codes)
        for lang, learned in zip(langs, learned_vocabs, strict=True):
            if lang not in written:
                codes[lang] = latin_codes if lang not in translit else codes_out
                continue
            vocab[lang] = vocab_path_for(vocab_dir, lang)
            if lang in translit:
                _publish(learned, Path(str(vocab[lang]) + LATIN_SUFFIX))
                true_counts(codes_out, sources[lang], vocab[lang])
                codes[lang] = codes_out
            else:
                _publish(learned, vocab[lang])
                codes[lang] = latin_codes
        return JointBPE(codes, vocab)


def _write_mapped_back_codes(latin_codes: Path, codes_out: Path, schemes: list[Transliteration]) -> None:
    """``[version line] + reverse-transliterated merges + Latin merges`` (one block per scheme)."""
    lines = list(read_lines(latin_codes))
    if not lines or not lines[0].startswith("#version:"):
        raise InputError(f"{latin_codes}:1: expected a '#version:' line from subword-nmt")
    version, merges = lines[0], lines[1:]
    with atomic_write(codes_out) as out:
        out.write(version + "\n")
        for scheme in dict.fromkeys(schemes):
            for merge in merges:
                out.write(scheme.reverse(merge) + "\n")
        for merge in merges:
            out.write(merge + "\n")


# --------------------------------------------------------------------------------------------------
# The network's vocabulary


def build_network_vocab(bpe_train_files: Iterable[PathLike], out: PathLike, min_count: int = 1) -> Vocabulary:
    """The joint vocabulary of the segmented training data (all sides), specials first.

    Like the authors' ``build_dictionary.py`` run on ``cat corpus.bpe.src corpus.bpe.tgt``: every
    sub-word type of the concatenated segmented training corpus, most frequent first.
    """
    files = [Path(path) for path in bpe_train_files]
    if not files:
        raise InputError("build_network_vocab needs at least one segmented training file")
    vocabulary = Vocabulary.build(chain.from_iterable(read_lines(path) for path in files), min_count)
    vocabulary.save(out)
    log.info("network vocabulary: %d entries from %d files -> %s", len(vocabulary), len(files), out)
    return vocabulary
