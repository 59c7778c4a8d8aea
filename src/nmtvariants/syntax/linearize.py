"""The multi-task parse-and-translate baseline (Currey & Heafield 2019) as a derived corpus.

Bugliarello & Okazaki's version (seed brief §2.5, ``scripts/bpe_lin_parses.py``) changes only the data:
a standard Transformer is trained on every training source twice,

    <TR> source <TR>  ->  target translation
    <PA> source <PA>  ->  linearised parse of the source

and the valid/test sources are tagged ``<TR> ... <TR>``. The tags are the authors' tokens; in
Moses-escaped text ``<`` is ``&lt;``, so they never collide with a real word.

**Linearisation.** The authors linearise a CoreNLP *constituency* parse with the words and the POS
pre-terminals removed, e.g. ``(ROOT (S (NP ) (VP (NP ) ) ) )``, brackets as separate tokens. Our parses
are *dependency* trees (Stanza, UD gold), so we linearise the dependency tree the same way:
depth-first from the root, each word is a bracket opened by its relation, glued to the parenthesis
like the authors' ``(NP``, holding its dependents in surface order and closed by a separate ``)``;
words and POS are removed. For "The cat sat on the mat ." (det, nsubj, root, case, det, obl, punct):

    (root (nsubj (det ) ) (obl (case ) (det ) ) (punct ) )

There is one bracket per syntactic word, so the target encodes the sentence's length and its tree
shape with labels; as in the authors' format the words' positions relative to their heads are not
written. Relations keep their subtypes (``(nmod:poss``): the parse target is what the parser said.

**Subwords.** The source copies are the BPE'd source unchanged. The parse tokens are not BPE-split:
they are a closed set of about 40 bracket-label tokens plus ``)``, and a joint vocabulary built from the
augmented files holds each as one token. (The authors learned a new BPE on the augmented data, which
for such frequent strings also leaves them whole.)

**Order.** The translation pairs come first, then the parse pairs, in corpus order; the trainer's
batch sampler shuffles, so the authors' file-level shuffle would change nothing but the file.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from nmtvariants.errors import InputError
from nmtvariants.syntax.conllu import Sentence
from nmtvariants.syntax.dep_labels import check_alignment

TRANSLATE_TAG = "<TR>"
PARSE_TAG = "<PA>"
CLOSE = ")"


def linearize(sentence: Sentence) -> str:
    """The bracketed, word-free linearisation of a (validated) dependency tree (module docstring)."""
    children: dict[int, list[int]] = {word.id: [] for word in sentence.words}
    children[0] = []
    for word in sentence.words:
        children[int(word.head)].append(word.id)  # ids ascend: dependents in surface order
    out: list[str] = []
    stack: list[tuple[int, bool]] = [(children[0][0], False)]
    while stack:  # iterative pre-order: deep trees cannot hit the recursion limit
        word_id, closing = stack.pop()
        if closing:
            out.append(CLOSE)
            continue
        out.append(f"({sentence.words[word_id - 1].deprel}")
        stack.append((word_id, True))
        stack.extend((child, False) for child in reversed(children[word_id]))
    return " ".join(out)


def tag(line: str, task_tag: str) -> str:
    return f"{task_tag} {line} {task_tag}" if line.strip() else f"{task_tag} {task_tag}"


def translation_sources(bpe_lines: Iterable[str]) -> Iterator[str]:
    """Valid/test sources of a multi-task model: ``<TR> source <TR>``."""
    for line in bpe_lines:
        yield tag(line, TRANSLATE_TAG)


def multitask_pairs(
    bpe_lines: Sequence[str],
    target_lines: Sequence[str],
    sentences: Sequence[Sentence],
    names: tuple[str, str, str],
) -> tuple[list[str], list[str]]:
    """(sources, targets) of the augmented training corpus: the tagged translation pairs, then the
    tagged parse pairs. ``names``: the BPE, target and CoNLL-U file names for error messages; each
    parse must have the words of its BPE line."""
    bpe_name, target_name, conllu_name = names
    if not len(bpe_lines) == len(target_lines) == len(sentences):
        raise InputError(
            f"{bpe_name} has {len(bpe_lines)} lines, {target_name} {len(target_lines)} and {conllu_name} "
            f"{len(sentences)} sentences; give line-parallel files of the same corpus"
        )
    parses = []
    for number, (line, sentence) in enumerate(zip(bpe_lines, sentences, strict=True), start=1):
        check_alignment(sentence, line, f"{bpe_name}:{number} vs {conllu_name}:{sentence.line}")
        parses.append(linearize(sentence))
    sources = [tag(line, TRANSLATE_TAG) for line in bpe_lines] + [tag(line, PARSE_TAG) for line in bpe_lines]
    return sources, [*target_lines, *parses]
