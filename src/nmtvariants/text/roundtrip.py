"""How exactly does the inverse chain undo the preprocessing? A per-line report on real text.

For each line ``raw``:

    canonical = normalize(raw)                         (skipped with normalize=False)
    forward   = [bpe](truecase(tokenize(canonical)))
    output    = InverseChain(forward)                  (remove BPE, detruecase, detokenize)

Two comparisons are reported:

* ``inverse``: ``output == canonical``. Normalisation is *outside* this round trip because it is
  many-to-one by design (``„“”`` all become ``"``) and nothing downstream can or should undo it; this
  figure measures what the inverse chain is responsible for (target: >= 98% of lines).
* ``end_to_end``: ``output == raw``. This is what a perfect system would score against the raw
  reference, so it is the ceiling the design accepts by comparing raw references with detokenised
  output; mismatches here that are not in ``inverse`` are classed by what normalisation changed
  (quotes, dashes, whitespace, ...).

Every mismatch is also attributed to the first stage whose round trip fails: ``tokenize``
(``detokenize(tokenize(x)) != x``), ``truecase`` (adding truecase/detruecase breaks it) or ``bpe``.
"""

from __future__ import annotations

import difflib
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

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
    """Round-trip ``lines`` (raw text of language ``lang``) through the chain and its inverse.

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
    inverse = InverseChain(lang, bpe=bpe is not None, truecased=True)
    detokenize_only = InverseChain(lang, bpe=False, truecased=False)
    without_bpe = InverseChain(lang, bpe=False, truecased=True)

    def stage_of(number: int) -> str:
        tok = tokenized[number]
        if detokenize_only(tok) != canonical[number]:
            return "tokenize"
        if without_bpe(truecaser(tok)) != canonical[number]:
            return "truecase"
        return "bpe"

    outputs = []
    bpe_not_reversible = 0
    for tok in tokenized:
        forward = truecaser(tok)
        if bpe is not None:
            segmented = bpe(forward)
            bpe_not_reversible += remove_bpe(segmented) != forward
            forward = segmented
        outputs.append(inverse(forward))

    def compared(references: Sequence[str]) -> Iterable[tuple[int, str, str, str]]:
        for index, (reference, output) in enumerate(zip(references, outputs, strict=True)):
            stage = "" if reference == output else stage_of(index)
            if reference != output and outputs[index] == canonical[index]:
                stage = "normalize"
            yield index + 1, reference, output, stage

    report = {
        "lang": lang,
        "lines": len(lines),
        "settings": {
            "normalize": normalize,
            "aggressive_dash_splits": aggressive_dash_splits,
            "escape": escape,
            "truecase_trained_on": "the lines themselves" if truecase_training is None else "given text",
            "bpe": bpe is not None,
        },
        "inverse": _tally(compared(canonical), len(lines), max_examples),
        "bpe_lines_not_reversible": bpe_not_reversible,
    }
    if normalize:
        report["normalization_changed_lines"] = sum(a != b for a, b in zip(lines, canonical, strict=True))
        report["end_to_end"] = _tally(compared(lines), len(lines), max_examples)
    return report
