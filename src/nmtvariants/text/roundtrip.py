"""How exactly does the inverse chain undo the preprocessing? A per-line report on real text.

The workflow measures the chain it ran (`roundtrip_files`, rule ``roundtrip``): for each line of a
test set it takes the files the preprocessing rules wrote (tokenised, truecased, BPE-segmented)
and the raw line, and applies the same inverse as rule ``postprocess``::

    canonical = normalize(raw)                         (as rule tokenize: same language, lowercase)
    forward   = the workflow's BPE file                (normalize | tokenize -> truecase -> BPE)
    output    = InverseChain(forward)                  (remove BPE, detruecase, detokenize)

so no second copy of the chain can disagree with the one that was run (escaping, lower-casing,
the truecaser trained on the cleaned text, the BPE vocabulary threshold all come with the files).
`roundtrip_report` runs the chain in memory on text outside a workflow run (for studying the Moses
inverse on a test set) and measures it the same way.

Two comparisons are reported:

* ``inverse``: ``output == canonical``. Normalisation is *outside* this round trip because it is
  many-to-one by design (``„“”`` all become ``"``) and nothing downstream can or should undo it; this
  figure measures what the inverse chain is responsible for (target: >= 98% of lines).
* ``end_to_end``: ``output == raw``. This is what a perfect system would score against the raw
  reference, so it is the ceiling the design accepts by comparing raw references with detokenised
  output; mismatches here that are not in ``inverse`` are classed by what normalisation changed
  (quotes, dashes, whitespace, ...).

Every mismatch is also attributed to the first stage whose round trip fails: ``tokenize``
(``detokenize(tokenized) != canonical``), ``truecase`` (detruecasing the truecased text breaks it)
or ``bpe``.
"""

from __future__ import annotations

import difflib
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, read_lines
from nmtvariants.text.moses import Normalizer, Tokenizer
from nmtvariants.text.postprocess import InverseChain, remove_bpe
from nmtvariants.text.truecase import Truecaser, train_truecaser

QUOTES = set("\"'`´‘’‚‛“”„‟«»‹›「」『』")
DASHES = set("-‐‑‒–—―−")
ELLIPSIS = set("….")


def _changed_kinds(reference: str, output: str) -> list[str]:
    """Which kinds of characters differ between two strings (for naming normalisation effects)."""
    kinds: set[str] = set()
    matcher = difflib.SequenceMatcher(None, reference, output, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        changed = set(reference[i1:i2]) | set(output[j1:j2])
        if changed <= set(" \t\u00a0\u2009\u202f\u3000"):
            kinds.add("whitespace")
        elif changed <= QUOTES | {" "}:
            kinds.add("quotes")
        elif changed <= DASHES | {" "}:
            kinds.add("dashes")
        elif changed <= ELLIPSIS | {" "}:
            kinds.add("ellipsis")
        elif changed <= set("0123456789,. "):
            kinds.add("numbers")
        else:
            kinds.add("other")
    return sorted(kinds)


def classify_mismatch(reference: str, output: str) -> str:
    """Name the kind of difference between a reference line and a round-tripped line."""
    if reference.lower() == output.lower():
        return "case"
    if "".join(reference.split()) == "".join(output.split()):
        return "spacing"
    if "".join(reference.lower().split()) == "".join(output.lower().split()):
        return "case+spacing"
    return "+".join(_changed_kinds(reference, output)) or "other"


def _tally(pairs: Iterable[tuple[int, str, str, str]], total: int, max_examples: int) -> dict:
    """Count identical lines, mismatch classes (and stages) and keep a few examples per class."""
    identical = 0
    classes: Counter = Counter()
    stages: Counter = Counter()
    examples: dict[str, list[dict]] = {}
    for number, reference, output, stage in pairs:
        if reference == output:
            identical += 1
            continue
        kind = classify_mismatch(reference, output)
        classes[kind] += 1
        stages[stage] += 1
        bucket = examples.setdefault(kind, [])
        if len(bucket) < max_examples:
            bucket.append({"line": number, "reference": reference, "output": output, "stage": stage})
    return {
        "identical": identical,
        "identical_fraction": identical / total if total else 1.0,
        "mismatches": total - identical,
        "classes": dict(classes.most_common()),
        "stages": dict(stages.most_common()),
        "examples": examples,
    }


@dataclass(frozen=True)
class ForwardText:
    """One text at every stage of the forward chain, line for line (``segmented``: None = no BPE)."""

    raw: Sequence[str]
    canonical: Sequence[str]
    tokenized: Sequence[str]
    truecased: Sequence[str]
    segmented: Sequence[str] | None


def measure(text: ForwardText, lang: str, *, detruecase: bool, normalized: bool, max_examples: int) -> dict:
    """Invert ``text``'s last stage as rule ``postprocess`` does and compare with the canonical (and,
    when ``normalized``, the raw) lines; mismatches are attributed to the first stage that breaks."""
    inverse = InverseChain(lang, bpe=text.segmented is not None, truecased=detruecase)
    detokenize_only = InverseChain(lang, bpe=False, truecased=False)
    without_bpe = InverseChain(lang, bpe=False, truecased=detruecase)
    last = text.segmented if text.segmented is not None else text.truecased
    outputs = [inverse(line) for line in last]
    bpe_not_reversible = 0
    if text.segmented is not None:
        bpe_not_reversible = sum(
            remove_bpe(segmented) != truecased
            for segmented, truecased in zip(text.segmented, text.truecased, strict=True)
        )

    def stage_of(index: int) -> str:
        if detokenize_only(text.tokenized[index]) != text.canonical[index]:
            return "tokenize"
        if without_bpe(text.truecased[index]) != text.canonical[index]:
            return "truecase"
        return "bpe"

    def compared(references: Sequence[str]) -> Iterable[tuple[int, str, str, str]]:
        for index, (reference, output) in enumerate(zip(references, outputs, strict=True)):
            stage = "" if reference == output else stage_of(index)
            if reference != output and output == text.canonical[index]:
                stage = "normalize"
            yield index + 1, reference, output, stage

    lines = len(text.raw)
    report = {
        "lang": lang,
        "lines": lines,
        "inverse": _tally(compared(text.canonical), lines, max_examples),
        "bpe_lines_not_reversible": bpe_not_reversible,
    }
    if normalized:
        report["normalization_changed_lines"] = sum(
            a != b for a, b in zip(text.raw, text.canonical, strict=True)
        )
        report["end_to_end"] = _tally(compared(text.raw), lines, max_examples)
    return report


def roundtrip_files(
    lang: str,
    raw: PathLike,
    tokenized: PathLike,
    truecased: PathLike,
    segmented: PathLike,
    *,
    lowercase: bool = False,
    detruecase: bool = True,
    max_examples: int = 5,
) -> dict:
    """The round trip of the files one workflow run wrote for a test set of language ``lang``.

    ``tokenized``: data/<corpus>/tok/<split>.<lang> (rule tokenize, which normalised with
    ``lowercase``); ``truecased`` and ``segmented``: data/<corpus>/<pair>/{tc,bpe}/<split>.<lang>.
    ``detruecase`` is what rule postprocess does (the corpus's ``preprocess.truecase``).
    """
    paths = {"raw": raw, "tokenized": tokenized, "truecased": truecased, "segmented": segmented}
    texts = {name: list(read_lines(path)) for name, path in paths.items()}
    counts = {name: len(lines) for name, lines in texts.items()}
    if len(set(counts.values())) != 1:
        listed = ", ".join(f"{paths[name]} has {count}" for name, count in counts.items())
        raise InputError(
            f"{segmented}: the stages of one text must have as many lines ({listed}); "
            "rerun the preprocessing of this split"
        )
    normalizer = Normalizer(lang, lowercase=lowercase)
    forward = ForwardText(canonical=[normalizer(line) for line in texts["raw"]], **texts)
    report = measure(forward, lang, detruecase=detruecase, normalized=True, max_examples=max_examples)
    report["settings"] = {"lowercase": lowercase, "detruecase": detruecase, "bpe": True}
    report["files"] = {"raw": str(raw), "tok": str(tokenized), "tc": str(truecased), "bpe": str(segmented)}
    return report


def roundtrip_report(
    lines: Sequence[str],
    lang: str,
    *,
    normalize: bool = True,
    aggressive_dash_splits: bool = False,
    escape: bool = True,
    truecase_training: Iterable[str] | None = None,
    bpe: Callable[[str], str] | None = None,
    max_examples: int = 5,
) -> dict:
    """Round-trip ``lines`` (raw text of language ``lang``, outside a workflow run) through a chain
    built here and its inverse; a workflow run's own files are measured by `roundtrip_files`.

    ``truecase_training``: raw training text for the truecaser (normalised and tokenised like
    ``lines``); by default the truecaser is trained on ``lines`` themselves. ``bpe``: a subword
    segmenter ``str -> str`` producing ``@@ `` markers (e.g. subword-nmt's ``BPE.process_line``).
    Returns counts, fractions, mismatch classes, failing stages and examples (1-based line numbers).
    """
    normalizer = Normalizer(lang) if normalize else None
    tokenizer = Tokenizer(lang, aggressive_dash_splits=aggressive_dash_splits, escape=escape)
    canonical = [normalizer(line) if normalizer else line for line in lines]
    tokenized = [tokenizer(line) for line in canonical]
    if truecase_training is None:
        training = tokenized
    else:
        training = [tokenizer(normalizer(line) if normalizer else line) for line in truecase_training]
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "truecase.model"
        train_truecaser(training, model)
        truecaser = Truecaser(model)
    truecased = [truecaser(line) for line in tokenized]
    forward = ForwardText(
        raw=lines,
        canonical=canonical,
        tokenized=tokenized,
        truecased=truecased,
        segmented=[bpe(line) for line in truecased] if bpe is not None else None,
    )
    report = measure(forward, lang, detruecase=True, normalized=normalize, max_examples=max_examples)
    report["settings"] = {
        "normalize": normalize,
        "aggressive_dash_splits": aggressive_dash_splits,
        "escape": escape,
        "truecase_trained_on": "the lines themselves" if truecase_training is None else "given text",
        "bpe": bpe is not None,
    }
    return report
