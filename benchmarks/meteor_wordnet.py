"""Start-up of METEOR's WordNet: NLTK's stock reader against ours without the OMW map, in one run.

Every multimodal and multi-source score job (22 in ``make demo``) is a fresh process that loads
WordNet before it scores. NLTK's ``WordNetCorpusReader`` also builds, at start-up, a map from WordNet
3.0 onto the loaded version for the Open Multilingual Wordnet, which METEOR does not use;
``meteor_ribes.english_wordnet_reader`` skips it. Both readers load in fresh processes, interleaved
round by round so that load from other processes hits both alike; the median wall and CPU seconds and
the ratio stock / ours are written, with one METEOR score from each reader (they must be equal).

    PYTHONPATH=src python benchmarks/meteor_wordnet.py [--rounds 5] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from nmtvariants.fileio import atomic_write

LOAD = """
import sys
import nltk
from nltk.corpus.reader.wordnet import WordNetCorpusReader
from nltk.translate.meteor_score import meteor_score
from nmtvariants.evaluation.meteor_ribes import english_wordnet_reader, prepare_wordnet
prepared = prepare_wordnet(sys.argv[2]).resolve()
nltk.data.path.append(str(prepared))  # NLTK >= 3.10 reads corpora under nltk.data.path only
root = prepared / "corpora" / "wordnet"
reader = english_wordnet_reader() if sys.argv[1] == "ours" else WordNetCorpusReader
wordnet = reader(str(root), None)
hyp, ref = "the big dog ran to the bank".split(), "a large hound runs to the shore".split()
print(meteor_score([ref], hyp, wordnet=wordnet))
"""
READERS = ("stock", "ours")


def timed_load(reader: str, data_dir: Path) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds of the child and its METEOR score, in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", LOAD, reader, str(data_dir)], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise RuntimeError(f"{reader}: exit {result.returncode}: {result.stderr.strip()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, result.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="fresh processes per reader")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument(
        "--nltk-data", type=Path, default=Path("data/nltk_data"), help="where Debian's WordNet is prepared"
    )
    args = parser.parse_args()
    runs: dict[str, list[tuple[float, float, str]]] = {reader: [] for reader in READERS}
    timed_load("ours", args.nltk_data)  # prepares the WordNet copy once, outside the rounds
    load = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for reader in READERS:
            runs[reader].append(timed_load(reader, args.nltk_data))
        load.append(os.getloadavg()[0])
    scores = {reader: sorted({score for _, _, score in rounds}) for reader, rounds in runs.items()}
    if scores["stock"] != scores["ours"]:
        raise SystemExit(f"the readers score differently: {scores}")
    median = {
        reader: {
            "wall_s": statistics.median(wall for wall, _, _ in rounds),
            "cpu_s": statistics.median(cpu for _, cpu, _ in rounds),
        }
        for reader, rounds in runs.items()
    }
    record = {
        "command": " ".join(["benchmarks/meteor_wordnet.py", *sys.argv[1:]]),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "rounds": args.rounds,
        "load_average_1min": load,
        "meteor": scores["ours"],
        "median": median,
        "ratio_stock_over_ours": {
            key: median["stock"][key] / median["ours"][key] for key in ("wall_s", "cpu_s")
        },
    }
    args.out.mkdir(parents=True, exist_ok=True)
    with atomic_write(args.out / "meteor_wordnet.json") as out:
        out.write(json.dumps(record, indent=2) + "\n")
    lines = [
        "# METEOR's WordNet start-up: NLTK's stock reader against ours without the OMW map",
        "",
        f"{time.strftime('%Y-%m-%d', time.gmtime())}: `{record['command']}`; {record['machine']}; "
        f"{args.rounds} rounds, interleaved; load average "
        f"{min(load):.2f}-{max(load):.2f}. Each round loads WordNet in a fresh process and scores one "
        f"sentence (METEOR {scores['ours'][0]} with both readers).",
        "",
        "| reader | median wall s | median CPU s |",
        "|---|---:|---:|",
        *(f"| {reader} | {m['wall_s']:.2f} | {m['cpu_s']:.2f} |" for reader, m in median.items()),
        f"| stock / ours | {record['ratio_stock_over_ours']['wall_s']:.2f}x | "
        f"{record['ratio_stock_over_ours']['cpu_s']:.2f}x |",
    ]
    with atomic_write(args.out / "meteor_wordnet.md") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
