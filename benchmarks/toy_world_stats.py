"""What a toy world holds for the syntax studies: sentence lengths and the long-distance constructions.

The demo's toy world is sized so that tiny models converge within the budget; a smaller world is
cheaper to learn but may no longer contain what PASCAL, LISA and the decoder probes are compared on.
This counts, per split of one or more generated worlds (their gold English trees,
``raw/<split>.en.conllu``): sentences, tokens per sentence, the share of sentences of 20 tokens or
more, the share of sentences with each construction that puts structure at a distance (relative
clause ``acl:relcl``, noun-modifying PP ``nmod``, adverbial clause ``advcl``, clausal complement
``ccomp``, coordination ``conj``), and how far a relative clause's verb is from the noun it modifies.

    python benchmarks/toy_world_stats.py --world "capped=WORK/data/toyworld" \\
        --world "uncapped=OLD/data/toyworld" --out benchmarks/results/NAME

writes ``NAME.json`` and ``NAME.md``.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
from pathlib import Path

from result_files import write_record

from nmtvariants.syntax.conllu import Sentence, read_conllu

CONSTRUCTIONS = ("acl:relcl", "nmod", "advcl", "ccomp", "conj")
LONG_TOKENS = 20
SPLITS = ("train", "test")


def split_stats(sentences: list[Sentence]) -> dict[str, object]:
    """Counts of one split (see the module docstring); shares are of sentences."""
    lengths = [len(sentence.words) for sentence in sentences]
    with_construction = dict.fromkeys(CONSTRUCTIONS, 0)
    distances = []
    for sentence in sentences:
        relations = {word.deprel for word in sentence.words}
        for construction in CONSTRUCTIONS:
            with_construction[construction] += construction in relations
        distances += [abs(word.head - word.id) for word in sentence.words if word.deprel == "acl:relcl"]
    n = len(sentences)
    return {
        "sentences": n,
        "mean_tokens": statistics.fmean(lengths),
        "max_tokens": max(lengths),
        "share_long": sum(length >= LONG_TOKENS for length in lengths) / n,
        "share_with": {name: count / n for name, count in with_construction.items()},
        "relcl_distance": statistics.fmean(distances) if distances else None,
    }


def markdown(record: dict) -> str:
    lines = [
        "# What a toy world holds for the syntax studies (benchmarks/toy_world_stats.py)",
        "",
        f"Measured {record['date']} from the gold English trees (`raw/<split>.en.conllu`). Tokens are Moses"
        f" tokens (punctuation included); *long*: {LONG_TOKENS} tokens or more; the construction columns"
        " are the share of sentences with at least one; *relcl distance*: mean tokens between a relative"
        " clause's verb and its noun.",
        "",
        *(f"{note}\n" for note in record["notes"]),
        f"Command: `{record['command']}`",
        "",
        "| world | split | sentences | tokens (mean / max) | long | "
        + " | ".join(CONSTRUCTIONS)
        + " | relcl distance |",
        "|---|---|---:|---:|---:|" + "---:|" * len(CONSTRUCTIONS) + "---:|",
    ]
    for world in record["worlds"]:
        for split, stats in world["splits"].items():
            shares = " | ".join(f"{100 * stats['share_with'][name]:.1f}%" for name in CONSTRUCTIONS)
            distance = "-" if stats["relcl_distance"] is None else f"{stats['relcl_distance']:.2f}"
            lines.append(
                f"| {world['label']} | {split} | {stats['sentences']:,} | {stats['mean_tokens']:.1f} /"
                f" {stats['max_tokens']} | {100 * stats['share_long']:.1f}% | {shares} | {distance} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--world", action="append", required=True, help="LABEL=data/toyworld folder")
    parser.add_argument("--note", action="append", default=[], help="a paragraph for the markdown")
    parser.add_argument("--date", default=time.strftime("%Y-%m-%d"))
    parser.add_argument("--out", type=Path, required=True, help="results/NAME (writes NAME.json, NAME.md)")
    args = parser.parse_args()
    worlds = []
    for item in args.world:
        label, _, root = item.partition("=")
        splits = {
            split: split_stats(read_conllu(Path(root) / "raw" / f"{split}.en.conllu")) for split in SPLITS
        }
        worlds.append({"label": label, "splits": splits})
    record = {
        "benchmark": "toy_world_stats",
        "date": args.date,
        "notes": args.note,
        "worlds": worlds,
        "command": "python benchmarks/toy_world_stats.py " + shlex.join(sys.argv[1:]),
    }
    write_record(args.out.parent, args.out.name, record, markdown(record))


if __name__ == "__main__":
    main()
