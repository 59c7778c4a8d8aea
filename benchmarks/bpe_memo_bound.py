"""What bounding subword-nmt's word memo costs in speed and saves in memory, side by side in one run.

``apply_bpe.BPE`` remembers the segmentation of every word type it meets, so segmenting WMT-sized
text grows a process by the corpus's types. ``nmtvariants.text.bpe.BoundedMemo`` empties the memo at
``MEMO_WORDS`` words. Each setting segments the same lines in a fresh process (peak RSS is that
process's), the settings interleaved round by round:

    python benchmarks/bpe_memo_bound.py --codes <work>/data/wmt14_ende/en-de/bpe/codes \\
        --vocab <work>/data/wmt14_ende/en-de/bpe/vocab.en --input <work>/data/wmt14_ende/en-de/tc/train.en \\
        --lines 1000000 --rounds 2 --output benchmarks/results/bpe_memo_bound

Writes ``<output>.json`` and ``<output>.md``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from nmtvariants.hardware import cpu_model
from nmtvariants.text.bpe import MEMO_WORDS, BPESegmenter

UNBOUNDED = 0
SETTINGS = (UNBOUNDED, MEMO_WORDS, MEMO_WORDS // 2)


def segment(codes: Path, vocab: Path, source: Path, lines: int, memo_words: int) -> dict:
    """Segment the first ``lines`` lines of ``source`` in this process; time, memo size and peak RSS."""
    segmenter = BPESegmenter(codes, vocab, 50, memo_words=memo_words or 1)
    segmenter("warm")
    if memo_words == UNBOUNDED:
        segmenter._bpe.cache = {}  # subword-nmt's own memo
    largest = 0
    start, cpu = time.perf_counter(), time.process_time()
    with source.open(encoding="utf-8") as handle:
        for line in itertools.islice(handle, lines):
            segmenter(line.rstrip("\n"))
            largest = max(largest, len(segmenter._bpe.cache))
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return dict(
        memo_words=memo_words, seconds=seconds, cpu_seconds=cpu, largest_memo=largest, peak_mb=peak_mb
    )


def run_in_process(args: argparse.Namespace, memo_words: int) -> dict:
    command = [
        sys.executable, __file__, "--worker", str(memo_words), "--codes", str(args.codes),
        "--vocab", str(args.vocab), "--input", str(args.input), "--lines", str(args.lines),
    ]  # fmt: skip
    return json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)


def label(memo_words: int) -> str:
    return "unbounded (subword-nmt)" if memo_words == UNBOUNDED else f"{memo_words:,} words"


def markdown(result: dict) -> str:
    reference = result["summary"][str(UNBOUNDED)]["cpu_seconds"]
    lines = [
        "# A bounded BPE memo (benchmarks/bpe_memo_bound.py)",
        "",
        f"{result['date']}, {result['machine']}; {result['lines']:,} lines of `{result['input']}`,"
        f" {result['rounds']} rounds, settings interleaved, one fresh process each. {result['beside']}",
        "",
        "| memo | CPU s (median) | per round | vs unbounded | largest memo | peak RSS MB |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for memo_words in SETTINGS:
        summary = result["summary"][str(memo_words)]
        rounds = " / ".join(
            f"{r['cpu_seconds']:.1f}" for r in result["rounds_measured"] if r["memo_words"] == memo_words
        )
        lines.append(
            f"| {label(memo_words)} | {summary['cpu_seconds']:.1f} | {rounds} |"
            f" {summary['cpu_seconds'] / reference:.3f}x | {int(summary['largest_memo']):,}"
            f" | {summary['peak_mb']:,.0f} |"
        )
    lines += ["", f"Command: `{result['command']}`", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--codes", type=Path, required=True)
    parser.add_argument("--vocab", type=Path, required=True)
    parser.add_argument("--input", type=Path, required=True)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--beside", default="Nothing else ran.", help="what else ran, for the record")
    parser.add_argument("--output", type=Path)
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        print(json.dumps(segment(args.codes, args.vocab, args.input, args.lines, args.worker)))
        return
    measured = [run_in_process(args, memo_words) for _ in range(args.rounds) for memo_words in SETTINGS]
    summary = {
        str(memo_words): {
            key: statistics.median(r[key] for r in measured if r["memo_words"] == memo_words)
            for key in ("seconds", "cpu_seconds", "largest_memo", "peak_mb")
        }
        for memo_words in SETTINGS
    }
    result = dict(
        date=time.strftime("%Y-%m-%d"), machine=cpu_model(), lines=args.lines, rounds=args.rounds,
        input=args.input.name, beside=args.beside, rounds_measured=measured, summary=summary,
        command=f"python benchmarks/bpe_memo_bound.py --lines {args.lines} --rounds {args.rounds}"
        " --codes <codes> --vocab <vocab> --input <tc/train.en> (the 100% WMT rehearsal's files)",
    )  # fmt: skip
    print(markdown(result))
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
        args.output.with_suffix(".md").write_text(markdown(result))


if __name__ == "__main__":
    main()
