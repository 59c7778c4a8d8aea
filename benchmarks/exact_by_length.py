"""Which sentences a toy model has not learned yet: exact translations by source length.

A corpus-level BLEU says how far a run is from its plateau, not where: the toy world's long sentences
(a subordinate clause, relative clauses, PP attachments) carry its long-distance structure, and a run
stopped early may translate its short sentences perfectly and its long ones not at all. This counts,
per bin of source words, the share of hypotheses equal to their reference, with German quotation
marks mapped to ``"`` (the pipeline's punctuation normalisation does the same to the training
targets, so no model can produce them; sacreBLEU on raw references charges every model for it).

    python benchmarks/exact_by_length.py --source WORK/data/toyworld/raw/test.en \\
        --reference WORK/data/toyworld/raw/test.de --hyp "1,600 updates=WORK/results/.../test.hyp" \\
        --hyp "800 updates=RUN/decode-last3/test.hyp" --out benchmarks/results/NAME

writes ``NAME.json`` and ``NAME.md``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from result_files import write_record

BINS = ((0, 9), (10, 14), (15, 19), (20, 24), (25, None))
QUOTES = str.maketrans({"„": '"', "“": '"'})


def bin_label(low: int, high: int | None) -> str:
    return f"{low}+" if high is None else f"{low}-{high}"


def bin_of(words: int) -> str:
    for low, high in BINS:
        if words >= low and (high is None or words <= high):
            return bin_label(low, high)
    raise AssertionError(words)


def exact_by_length(source: list[str], reference: list[str], hypothesis: list[str]) -> dict[str, dict]:
    """Per source-length bin: sentences, exact hypotheses and their share (quotation marks mapped)."""
    if not len(source) == len(reference) == len(hypothesis):
        raise SystemExit(f"line counts differ: {len(source)} / {len(reference)} / {len(hypothesis)}")
    counts = {bin_label(low, high): [0, 0] for low, high in BINS}
    for src, ref, hyp in zip(source, reference, hypothesis, strict=True):
        cell = counts[bin_of(len(src.split()))]
        cell[0] += 1
        cell[1] += hyp.translate(QUOTES) == ref.translate(QUOTES)
    total = [sum(c[0] for c in counts.values()), sum(c[1] for c in counts.values())]
    counts["all"] = total
    return {
        name: dict(sentences=n, exact=exact, share=exact / n if n else None)
        for name, (n, exact) in counts.items()
    }


def markdown(record: dict) -> str:
    bins = [*(bin_label(low, high) for low, high in BINS), "all"]
    first = record["systems"][0]["bins"]
    lines = [
        "# Exact translations by source length (benchmarks/exact_by_length.py)",
        "",
        f"Measured {record['date']}. Share of test hypotheses equal to their reference, per bin of source"
        " words (German quotation marks mapped to `\"` on both sides, as the pipeline's normalisation maps"
        " them in training).",
        "",
        *(f"{note}" for note in record["notes"]),
        "",
        f"Command: `{record['command']}`",
        "",
        "| system | " + " | ".join(f"{name} words ({first[name]['sentences']})" for name in bins) + " |",
        "|---|" + "---:|" * len(bins),
    ]
    for system in record["systems"]:
        cells = [f"{100 * system['bins'][name]['share']:.0f}%" for name in bins]
        lines.append(f"| {system['label']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--reference", type=Path, required=True)
    parser.add_argument("--hyp", action="append", required=True, help="LABEL=PATH (repeatable)")
    parser.add_argument("--note", action="append", default=[], help="a paragraph for the markdown")
    parser.add_argument("--date", default=time.strftime("%Y-%m-%d"))
    parser.add_argument("--out", type=Path, required=True, help="results/NAME (writes NAME.json, NAME.md)")
    args = parser.parse_args()
    source = args.source.read_text(encoding="utf-8").splitlines()
    reference = args.reference.read_text(encoding="utf-8").splitlines()
    systems = []
    for item in args.hyp:
        label, _, path = item.partition("=")
        hypothesis = Path(path).read_text(encoding="utf-8").splitlines()
        systems.append(dict(label=label, bins=exact_by_length(source, reference, hypothesis)))
    record = dict(
        benchmark="exact_by_length",
        date=args.date,
        notes=args.note,
        systems=systems,
        command="python benchmarks/exact_by_length.py " + shlex.join(sys.argv[1:]),
    )
    write_record(args.out.parent, args.out.name, record, markdown(record))


if __name__ == "__main__":
    main()
