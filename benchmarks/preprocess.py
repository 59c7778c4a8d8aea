"""Preprocessing speed: our sharded steps on 1 and 2 processes beside the plain command-line tools.

    PYTHONPATH=src python benchmarks/preprocess.py [--lines 200000] [--out benchmarks/results]

Corpus: every English text in shared/data (Multi30k train, WMT newstest sets, FLORES-200 devtest, KFTT
dev/test), repeated up to ``--lines`` lines. Three steps, each file to file, wall time, process start
of the tools included:

* normalize+tokenize: `NormalizeTokenize("en")` via `sharding.process_file` vs
  ``sacremoses -l en -j 1 -q normalize tokenize``
* truecase apply: `Truecaser` vs ``sacremoses -l en -j 1 -q truecase -m MODEL`` (the tool uses
  sacremoses' default ``use_known=False``, so its output differs; speed only)
* BPE apply: subword-nmt's ``BPE.process_line`` via `sharding` vs ``subword-nmt apply-bpe -c CODES``
  (and ``--num-workers 2``)

Every sharded output is checked byte-identical to the 1-process output, and to the tool's output where
the settings agree. Writes ``preprocess.json`` and ``preprocess.md`` (with the load average: other
jobs share these 2 cores, so ratios taken in one run are the figures to read, not absolute rates).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from subword_nmt.apply_bpe import BPE
from subword_nmt.learn_bpe import learn_bpe

from nmtvariants.fileio import atomic_write, read_lines, write_lines
from nmtvariants.text.moses import NormalizeTokenize
from nmtvariants.text.sharding import process_file
from nmtvariants.text.truecase import Truecaser, train_truecaser

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
BIN = Path(sys.executable).parent
SOURCES = [
    "multi30k/task1/raw/train.en.gz",
    "wmt/newstest2013/newstest2013.en.gz",
    "wmt/en-de/newstest2014.en.gz",
    "wmt/en-cs/newstest2017.en.gz",
    "wmt/en-ru/newstest2017.en.gz",
    "wmt/en-tr/newstest2017.en.gz",
    "wmt/en-tr/newstest2018.en.gz",
    "wmt/en-ja/newstest2020.en.gz",
    "flores200-devtest/eng_Latn.devtest",
    "kftt/orig/kyoto-dev.en",
    "kftt/orig/kyoto-test.en",
]


def corpus(data: Path, size: int) -> tuple[list[str], int]:
    unique: list[str] = []
    for source in SOURCES:
        unique.extend(read_lines(data / source))
    repeats = -(-size // len(unique))
    return (unique * repeats)[:size], len(unique)


def _cpu() -> float:
    """CPU seconds of this process plus its finished children (pool workers, tools)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def wall(function: Callable[[], object]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (all processes) of one call."""
    start, cpu = time.perf_counter(), _cpu()
    function()
    return time.perf_counter() - start, _cpu() - cpu


def tool(command: list[str], stdin: Path, stdout: Path) -> tuple[float, float]:
    with open(stdin, "rb") as source, open(stdout, "wb") as sink:
        return wall(lambda: subprocess.run(command, stdin=source, stdout=sink, check=True))


class _SubwordNmt:
    """Picklable BPE step: the codes are read once per process (once in total under fork)."""

    def __init__(self, codes: Path) -> None:
        with open(codes, encoding="utf-8") as handle:
            self.bpe = BPE(handle)

    def __call__(self, line: str) -> str:
        return self.bpe.process_line(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--merges", type=int, default=8000)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()

    load_before = os.getloadavg()
    lines, unique = corpus(args.data, args.lines)
    results: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        write_lines(tmp / "raw", lines)
        n = len(lines)

        def run_step(name: str, step, source: Path, tool_commands: dict[str, list[str]], same_as_tool: bool):
            row: dict = {"step": name, "lines": n}
            for processes in (1, 2):
                seconds, cpu = wall(lambda p=processes: process_file(step, source, tmp / f"{name}.{p}", p))
                row[f"ours_{processes}p_s"] = round(seconds, 2)
                row[f"ours_{processes}p_cpu_s"] = round(cpu, 2)
                row[f"ours_{processes}p_lines_per_s"] = round(n / seconds)
            row["sharded_identical"] = (tmp / f"{name}.1").read_bytes() == (tmp / f"{name}.2").read_bytes()
            for label, command in tool_commands.items():
                seconds, cpu = tool(command, source, tmp / f"{name}.{label}")
                row[f"{label}_s"] = round(seconds, 2)
                row[f"{label}_cpu_s"] = round(cpu, 2)
                row[f"{label}_lines_per_s"] = round(n / seconds)
            first_tool = next(iter(tool_commands))
            row["identical_to_tool"] = (
                (tmp / f"{name}.1").read_bytes() == (tmp / f"{name}.{first_tool}").read_bytes()
                if same_as_tool
                else None
            )
            row["speedup_2p"] = round(row["ours_1p_s"] / row["ours_2p_s"], 2)
            row["ours_1p_vs_tool_1p"] = round(row[f"{first_tool}_s"] / row["ours_1p_s"], 2)
            # per core: lines per CPU-second, robust to other jobs taking the cores away
            row["ours_1p_vs_tool_1p_cpu"] = round(row[f"{first_tool}_cpu_s"] / row["ours_1p_cpu_s"], 2)
            results.append(row)
            print(json.dumps(row), flush=True)

        sacremoses = [str(BIN / "sacremoses"), "-l", "en", "-j", "1", "-q"]
        # The tool's normalizer has no perl parity option and no line-end fix: compare speed only.
        run_step(
            "normalize+tokenize",
            NormalizeTokenize("en"),
            tmp / "raw",
            {"tool_1p": [*sacremoses, "normalize", "tokenize"]},
            same_as_tool=False,
        )
        tokenized = list(read_lines(tmp / "normalize+tokenize.1"))
        train_truecaser(tokenized[:unique], tmp / "tc.model")
        run_step(
            "truecase apply",
            Truecaser(tmp / "tc.model"),
            tmp / "normalize+tokenize.1",
            {"tool_1p": [*sacremoses, "truecase", "-m", str(tmp / "tc.model")]},
            same_as_tool=False,
        )
        truecased = tmp / "truecase apply.1"
        codes = tmp / "codes"
        sample = io.StringIO("\n".join(list(read_lines(truecased))[:unique]))
        with atomic_write(codes) as out:
            learn_bpe(sample, out, args.merges)
        apply_bpe = [str(BIN / "subword-nmt"), "apply-bpe", "-c", str(codes)]
        run_step(
            "BPE apply",
            _SubwordNmt(codes),
            truecased,
            {"tool_1p": apply_bpe, "tool_2p": [*apply_bpe, "--num-workers", "2"]},
            same_as_tool=True,
        )

    meta = {
        "lines": args.lines,
        "unique_lines": unique,
        "sources": SOURCES,
        "cpu_count": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "bpe_merges": args.merges,
    }
    write_report(args.out, meta, results)


def write_report(out: Path, meta: dict, rows: list[dict]) -> None:
    with atomic_write(out / "preprocess.json") as handle:
        json.dump({"meta": meta, "results": rows}, handle, indent=2)
        handle.write("\n")
    table = [
        "# Preprocessing speed (lines/s, wall time, file to file)",
        "",
        f"{meta['lines']} English lines ({meta['unique_lines']} unique, repeated); {meta['cpu_count']} "
        f"cores; load average before {meta['load_average_before']}, after {meta['load_average_after']} "
        "(other jobs shared the cores).",
        "",
        "| step | ours 1 proc | ours 2 procs | speed-up 2/1 | tool 1 proc | ours 1p / tool 1p | "
        "CPU s ours 1p / tool 1p | tool 2 procs | sharded = 1 proc | = tool output |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        same_tool = {True: "yes", False: "no", None: "n/a"}[row["identical_to_tool"]]
        table.append(
            f"| {row['step']} | {row['ours_1p_lines_per_s']:,} | {row['ours_2p_lines_per_s']:,} | "
            f"{row['speedup_2p']}x | {row['tool_1p_lines_per_s']:,} | {row['ours_1p_vs_tool_1p']}x | "
            f"{row['ours_1p_cpu_s']} / {row['tool_1p_cpu_s']} ({row['ours_1p_vs_tool_1p_cpu']}x) | "
            f"{row.get('tool_2p_lines_per_s', '-')} | {'yes' if row['sharded_identical'] else 'NO'} | "
            f"{same_tool} |"
        )
    table += [
        "",
        "Tools: `sacremoses -l en -j 1 -q normalize tokenize`, `sacremoses ... truecase -m MODEL`, "
        "`subword-nmt apply-bpe -c CODES [--num-workers 2]`. `= tool output` is n/a where the settings "
        "differ on purpose (our perl-parity normaliser; Moses' known-word rule in truecasing). "
        "Rates are lines per wall-clock second; the CPU column (all processes, children included) "
        "compares per-core cost independently of what other jobs took.",
        "",
    ]
    with atomic_write(out / "preprocess.md") as handle:
        handle.write("\n".join(table))


if __name__ == "__main__":
    main()
