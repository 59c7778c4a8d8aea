"""A small CoNLL-U reader/writer that round-trips real treebanks and validates dependency trees.

Why our own and not a parser library: the pipeline needs exactly three things from CoNLL-U files
(gold toyworld trees, Stanza output, PUD test sets): the word lines with integer heads, the comment
lines kept verbatim, and errors that name the file and line of a broken tree so a user can fix it.
Multiword-token lines (``1-2``) and empty nodes (``8.1``) are kept as raw columns and written back in
their standard places, so reading and writing a valid file gives the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, atomic_write, read_lines

COLUMNS = ("ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS", "MISC")
_RANGE = re.compile(r"^(\d+)-(\d+)$")
_EMPTY = re.compile(r"^(\d+)\.(\d+)$")
_WORD = re.compile(r"^[1-9]\d*$")


@dataclass
class Word:
    """One syntactic word. ``head`` is 0 for the root and None where the file has ``_``."""

    id: int
    form: str
    lemma: str = "_"
    upos: str = "_"
    xpos: str = "_"
    feats: str = "_"
    head: int | None = None
    deprel: str = "_"
    deps: str = "_"
    misc: str = "_"
    line: int = field(default=0, compare=False, repr=False)

    def columns(self) -> list[str]:
        head = "_" if self.head is None else str(self.head)
        return [
            str(self.id),
            self.form,
            self.lemma,
            self.upos,
            self.xpos,
            self.feats,
            head,
            self.deprel,
            self.deps,
            self.misc,
        ]


@dataclass
class Sentence:
    """A sentence: verbatim comment lines, words, and the raw columns of range and empty-node lines."""

    words: list[Word] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    multiword: list[list[str]] = field(default_factory=list)
    empty_nodes: list[list[str]] = field(default_factory=list)
    line: int = field(default=0, compare=False, repr=False)

    def meta(self, key: str) -> str | None:
        """The value of a ``# key = value`` comment, or None."""
        prefix = f"# {key} ="
        for comment in self.comments:
            if comment.startswith(prefix):
                return comment[len(prefix) :].strip()
        return None

    @property
    def sent_id(self) -> str | None:
        return self.meta("sent_id")

    @property
    def text(self) -> str | None:
        return self.meta("text")

    @property
    def forms(self) -> list[str]:
        return [word.form for word in self.words]

    @property
    def heads(self) -> list[int | None]:
        return [word.head for word in self.words]


def _where(source: str, line: int, sentence: Sentence) -> str:
    sid = sentence.sent_id
    return f"{source}:{line}" + (f" (sent_id {sid})" if sid else "")


def validate_tree(sentence: Sentence, source: str = "<input>") -> None:
    """Check ids 1..n, exactly one root, heads in range and no cycle; raise InputError otherwise."""
    words = sentence.words
    if not words:
        raise InputError(
            f"{_where(source, sentence.line, sentence)}: sentence has no word lines; "
            "remove the stray comment lines or add the words"
        )
    for index, word in enumerate(words, start=1):
        if word.id != index:
            raise InputError(
                f"{_where(source, word.line, sentence)}: word id {word.id}, expected {index}; "
                "word ids must run 1, 2, 3, ... within a sentence"
            )
    n = len(words)
    roots = [word for word in words if word.head == 0]
    for word in words:
        if word.head is None:
            raise InputError(
                f"{_where(source, word.line, sentence)}: word {word.id} has no head ('_'); "
                "give every word an integer HEAD (0 for the root)"
            )
        if not 0 <= word.head <= n:
            raise InputError(
                f"{_where(source, word.line, sentence)}: head {word.head} of word {word.id} is "
                f"out of range 0..{n}; point HEAD at a word of the same sentence"
            )
        if word.head == word.id:
            raise InputError(
                f"{_where(source, word.line, sentence)}: word {word.id} is its own head; "
                "a word must depend on another word or on 0"
            )
    if len(roots) != 1:
        line = roots[1].line if len(roots) > 1 else sentence.line
        raise InputError(
            f"{_where(source, line, sentence)}: {len(roots)} root words (HEAD 0), expected "
            "exactly one; attach the other words to the root"
        )
    if roots[0].deprel.split(":")[0] != "root" or any(
        w.deprel.split(":")[0] == "root" for w in words if w.head != 0
    ):
        bad = next((w for w in words if (w.head == 0) != (w.deprel.split(":")[0] == "root")), roots[0])
        raise InputError(
            f"{_where(source, bad.line, sentence)}: word {bad.id} has HEAD {bad.head} and DEPREL "
            f"{bad.deprel!r}; the deprel 'root' goes with HEAD 0 and only there"
        )
    # Acyclic: from every word, following heads must reach 0 within n steps.
    for word in words:
        seen: set[int] = set()
        current = word.id
        while current != 0:
            if current in seen:
                raise InputError(
                    f"{_where(source, word.line, sentence)}: word {word.id} is on a head cycle "
                    f"through words {sorted(seen)}; break the cycle so every word reaches the root"
                )
            seen.add(current)
            current = words[current - 1].head  # type: ignore[assignment]


def parse_conllu(lines: Iterable[str], source: str = "<input>", validate: bool = True) -> Iterator[Sentence]:
    """Parse CoNLL-U lines (without line ends) into sentences; ``source`` names the file in errors."""
    sentence = Sentence()
    started = False
    number = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            if started:
                if validate:
                    validate_tree(sentence, source)
                yield sentence
            sentence, started = Sentence(line=number + 1), False
            continue
        if not started:
            sentence.line, started = number, True
        if line.startswith("#"):
            if sentence.words or sentence.multiword or sentence.empty_nodes:
                raise InputError(
                    f"{source}:{number}: comment line inside a sentence; comments go before the "
                    "first word line, and sentences end with a blank line"
                )
            sentence.comments.append(line)
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise InputError(
                f"{source}:{number}: {len(cols)} tab-separated columns, expected 10 "
                f"({' '.join(COLUMNS)}); check for spaces used instead of tabs"
            )
        if _RANGE.match(cols[0]):
            sentence.multiword.append(cols)
        elif _EMPTY.match(cols[0]):
            sentence.empty_nodes.append(cols)
        elif _WORD.match(cols[0]):
            head_col = cols[6]
            if head_col != "_" and not head_col.isdigit():
                raise InputError(
                    f"{source}:{number}: HEAD {head_col!r} is not a number; use the id of the "
                    "head word, 0 for the root"
                )
            sentence.words.append(
                Word(
                    int(cols[0]),
                    cols[1],
                    cols[2],
                    cols[3],
                    cols[4],
                    cols[5],
                    None if head_col == "_" else int(head_col),
                    cols[7],
                    cols[8],
                    cols[9],
                    line=number,
                )
            )
        else:
            raise InputError(
                f"{source}:{number}: bad ID {cols[0]!r}; use 1, 2, ... (ranges 1-2, empty nodes 1.1)"
            )
    if started:
        if validate:
            validate_tree(sentence, source)
        yield sentence
    elif number == 0:
        return


def read_conllu(path: PathLike, validate: bool = True) -> list[Sentence]:
    """Read a plain or gzipped CoNLL-U file; with ``validate`` every tree is checked."""
    return list(parse_conllu(read_lines(path), source=str(path), validate=validate))


def format_sentence(sentence: Sentence) -> str:
    """The CoNLL-U block of one sentence, ending with its blank line.

    Range lines go right before the word that starts them, empty nodes right after the word they
    follow (in file order), which is where the CoNLL-U format requires them.
    """
    before: dict[int, list[list[str]]] = {}
    for cols in sentence.multiword:
        before.setdefault(int(cols[0].split("-")[0]), []).append(cols)
    after: dict[int, list[list[str]]] = {}
    for cols in sentence.empty_nodes:
        after.setdefault(int(cols[0].split(".")[0]), []).append(cols)
    out = list(sentence.comments)
    for cols in after.get(0, []):
        out.append("\t".join(cols))
    for word in sentence.words:
        out.extend("\t".join(cols) for cols in before.get(word.id, []))
        out.append("\t".join(word.columns()))
        out.extend("\t".join(cols) for cols in after.get(word.id, []))
    return "\n".join(out) + "\n\n"


def write_conllu(path: PathLike, sentences: Iterable[Sentence]) -> int:
    """Write sentences atomically (``.gz`` compresses); return how many were written."""
    count = 0
    with atomic_write(path) as out:
        for sentence in sentences:
            out.write(format_sentence(sentence))
            count += 1
    return count


def make_sentence(
    forms: Sequence[str],
    heads: Sequence[int],
    deprels: Sequence[str],
    upos: Sequence[str] | None = None,
    lemmas: Sequence[str] | None = None,
    space_after: Sequence[bool] | None = None,
    comments: Sequence[str] = (),
) -> Sentence:
    """Build a sentence from parallel columns (heads 1-based, 0 = root); MISC gets ``SpaceAfter=No``."""
    words = []
    for i, form in enumerate(forms):
        misc = "SpaceAfter=No" if space_after is not None and not space_after[i] else "_"
        words.append(
            Word(
                i + 1,
                form,
                lemmas[i] if lemmas else "_",
                upos[i] if upos else "_",
                "_",
                "_",
                heads[i],
                deprels[i],
                "_",
                misc,
            )
        )
    return Sentence(words=words, comments=list(comments))
