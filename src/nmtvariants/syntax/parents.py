"""Subword parent positions: map a word-level dependency parse onto the BPE tokens of the same line.

PASCAL (Bugliarello & Okazaki 2020, §2) and LISA need, for every source subword token, the position
of its dependency parent *in subword tokens*:

* ``middle`` (PASCAL): every subword of word w gets the **mean** index of the subword span of head(w)
  (the authors' ``np.mean``: tokens 6, 7, 8 give 7; tokens 6, 7 give 6.5). The root word points to
  its own span ("for the root word, we define its parent to be itself").
* ``first`` (LISA): every subword of w gets the index of the first subword of head(w) (the root:
  its own first subword).

Indices are 0-based over the BPE tokens of the line, ``</s>`` excluded.

**How positions are stored.** A middle position is a multiple of 1/2 (the mean of consecutive
integers), so it is exact as twice its value. Inside this module and on the model side every
position is an integer *doubled* position (``x2``); the text file written by ``nmtvariants parents``
holds the real positions as decimals, one line per sentence, one number per BPE token: ``7`` and
``6.5`` (``first`` mode only ever writes integers). The model's integer aux streams
(:class:`nmtvariants.models.interfaces.SourceInputs`, int, AUX_PAD = -1 at padding) carry:

* ``parents_x2`` (:data:`MIDDLE_STREAM`): 2 x the middle position, read by the PASCAL plug-in;
* ``parents_first`` (:data:`FIRST_STREAM`): the first-subword position itself, for LISA.

**The ``</s>`` rule.** The source sequence the model sees is ``tokens + </s>``; ``</s>`` is not a
word of the parse, and it points to itself (position n for n BPE tokens). :func:`stream_values` adds
it, so the data path turns a line of the text file into the aux stream with one call. (The authors'
code gives EOS the last *padded* index of the batch, which is ``</s>`` itself only for the longest
sentence of a batch; "itself" is the same rule without the dependence on batch composition.)

**Matching words.** The BPE line's words (subwords joined at ``@@ ``) must equal the parse's word
forms one by one, after undoing the Moses XML escapes on both sides (the corpus is Moses-escaped, a
gold treebank is not; the Stanza adapter restores the escapes). Any difference is an InputError
naming both files, the line and the first differing word.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, atomic_write, read_lines
from nmtvariants.syntax.conllu import Sentence, parse_conllu
from nmtvariants.text.subword_map import SEPARATOR

MIDDLE, FIRST = "middle", "first"
MODES = (MIDDLE, FIRST)
MIDDLE_STREAM = "parents_x2"
FIRST_STREAM = "parents_first"
STREAMS = {MIDDLE: MIDDLE_STREAM, FIRST: FIRST_STREAM}

# Moses tokenizer.perl's escapes (sacremoses ``escape_xml``); ``&amp;`` last when unescaping so that
# an escaped escape (``&amp;lt;``) comes back as the literal text ``&lt;``.
MOSES_ESCAPES = (
    ("&#124;", "|"),
    ("&lt;", "<"),
    ("&gt;", ">"),
    ("&apos;", "'"),
    ("&quot;", '"'),
    ("&#91;", "["),
    ("&#93;", "]"),
    ("&amp;", "&"),
)
_NUMBER = re.compile(r"^\d+(\.(0|5))?$")


def unescape_moses(token: str) -> str:
    """Undo the Moses tokenizer's XML escapes (``&amp;`` -> ``&``, ``&apos;`` -> ``'``, ...)."""
    if "&" not in token:
        return token
    for escaped, plain in MOSES_ESCAPES:
        token = token.replace(escaped, plain)
    return token


def escape_moses(token: str) -> str:
    """The Moses tokenizer's XML escapes, ``&`` first (the inverse of :func:`unescape_moses`)."""
    token = token.replace("&", "&amp;")
    for escaped, plain in MOSES_ESCAPES[:-1]:
        token = token.replace(plain, escaped)
    return token


def word_spans(tokens: Sequence[str], separator: str = SEPARATOR) -> tuple[list[str], list[range]]:
    """The words of a BPE-segmented token list and the token span of each.

    A token ending in ``separator`` continues into the next one. Raises ValueError if the last token
    continues (a truncated line), which the caller reports with its file and line.
    """
    words: list[str] = []
    spans: list[range] = []
    start = 0
    pieces: list[str] = []
    for index, token in enumerate(tokens):
        if token.endswith(separator):
            pieces.append(token[: -len(separator)])
            continue
        pieces.append(token)
        words.append("".join(pieces))
        spans.append(range(start, index + 1))
        start, pieces = index + 1, []
    if pieces:
        raise ValueError(f"the last token {tokens[-1]!r} ends with {separator!r}: the line is cut off")
    return words, spans


def parent_positions_x2(heads: Sequence[int], spans: Sequence[range], mode: str = MIDDLE) -> list[int]:
    """Doubled parent position of every subword token, given 1-based word heads (0 = root).

    ``middle``: first + last index of the head word's span (= 2 x its mean); ``first``: 2 x its first
    index. The root word's "head" is the word itself.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    out: list[int] = []
    for index, (head, span) in enumerate(zip(heads, spans, strict=True)):
        target = spans[head - 1] if head else spans[index]
        value = target[0] + target[-1] if mode == MIDDLE else 2 * target[0]
        out.extend([value] * len(span))
    return out


def sentence_parents_x2(sentence: Sentence, bpe_line: str, mode: str, where: str) -> list[int]:
    """Doubled parent positions for one BPE line and its parse; ``where`` names the line in errors."""
    tokens = bpe_line.split()
    try:
        words, spans = word_spans(tokens)
    except ValueError as error:
        raise InputError(f"{where}: {error}; re-segment the corpus with `nmtvariants bpe apply`") from None
    forms = sentence.forms
    sid = f" (sent_id {sentence.sent_id})" if sentence.sent_id else ""
    if len(words) != len(forms):
        raise InputError(
            f"{where}: the BPE line has {len(words)} words but its parse{sid} has {len(forms)}; "
            "parse the same tokenised text that was segmented with BPE"
        )
    for number, (word, form) in enumerate(zip(words, forms, strict=True), start=1):
        if unescape_moses(word) != unescape_moses(form):
            raise InputError(
                f"{where}: word {number} is {word!r} in the BPE line but {form!r} in its parse{sid}; "
                "parse the same tokenised text that was segmented with BPE"
            )
    heads = [word.head for word in sentence.words]
    if any(head is None for head in heads):
        raise InputError(f"{where}: the parse{sid} has words without a HEAD; parents need a full tree")
    return parent_positions_x2(heads, spans, mode)  # type: ignore[arg-type]


def format_x2(values: Iterable[int]) -> str:
    """Doubled positions as the decimals of the text file: 14 -> ``7``, 13 -> ``6.5``."""
    return " ".join(f"{v // 2}.5" if v % 2 else str(v // 2) for v in values)


def parse_x2(line: str, where: str) -> list[int]:
    """A line of the text file back to doubled positions (accepts ``7``, ``7.0`` and ``6.5``)."""
    values = []
    for field in line.split():
        if not _NUMBER.match(field):
            raise InputError(
                f"{where}: {field!r} is not a parent position (a non-negative multiple of 0.5); "
                "regenerate the file with `nmtvariants parents`"
            )
        whole, _, fraction = field.partition(".")
        values.append(2 * int(whole) + (fraction == "5"))
    return values


def stream_values(values_x2: Sequence[int], mode: str) -> list[int]:
    """The aux stream for ``tokens + </s>``: ``</s>`` (position n) points to itself; ``middle``
    streams stay doubled (:data:`MIDDLE_STREAM`), ``first`` ones are halved back to integers."""
    full = [*values_x2, 2 * len(values_x2)]
    return full if mode == MIDDLE else [v // 2 for v in full]


def iter_parents_x2(conllu: PathLike, bpe: PathLike, mode: str = MIDDLE) -> Iterator[list[int]]:
    """Doubled parent positions per line of ``bpe``, checked against the parse in ``conllu``."""
    sentences = parse_conllu(read_lines(conllu), source=str(conllu))
    number = 0
    for number, line in enumerate(read_lines(bpe), start=1):
        sentence = next(sentences, None)
        if sentence is None:
            raise InputError(
                f"{bpe}:{number}: {conllu} has only {number - 1} sentences; the parse must have one "
                "sentence per line of the BPE file"
            )
        yield sentence_parents_x2(sentence, line, mode, f"{bpe}:{number} vs {conllu}:{sentence.line}")
    extra = next(sentences, None)
    if extra is not None:
        raise InputError(
            f"{conllu}:{extra.line}: more sentences than the {number} lines of {bpe}; the parse must "
            "have one sentence per line of the BPE file"
        )


def read_stream(path: PathLike, mode: str) -> Iterator[list[int]]:
    """The aux stream of every line of a parents text file (``</s>`` included; see stream_values)."""
    for number, line in enumerate(read_lines(path), start=1):
        values = parse_x2(line, f"{path}:{number}")
        if mode == FIRST and any(v % 2 for v in values):
            raise InputError(
                f"{path}:{number}: half positions in a first-subword (LISA) parents file; "
                "regenerate it with `nmtvariants parents --mode first`"
            )
        if any(v > 2 * (len(values) - 1) for v in values):
            raise InputError(
                f"{path}:{number}: a parent position points past the {len(values)} tokens of the line; "
                "regenerate the file with `nmtvariants parents` from the same BPE file"
            )
        yield stream_values(values, mode)


def write_parents(conllu: PathLike, bpe: PathLike, output: PathLike, mode: str = MIDDLE) -> int:
    """Write the parents text file atomically; return the number of lines."""
    count = 0
    with atomic_write(output) as out:
        for values in iter_parents_x2(conllu, bpe, mode):
            out.write(format_x2(values) + "\n")
            count += 1
    return count
