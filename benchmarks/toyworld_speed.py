"""How long toyworld takes at the default size, phase by phase, in one process.

Phases: drawing + realising the plans (four languages), gold CoNLL-U and alignments, PNG rendering,
and the whole ``generate()`` with every file written atomically. For comparison, the cost that the
generator avoids by producing Moses tokens itself: running sacremoses over the same four texts.
Wall time and process CPU time are both reported because the development machines are shared.

    PYTHONPATH=src python benchmarks/toyworld_speed.py [--train 20000] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sacremoses import MosesTokenizer

from nmtvariants.corpora.toyworld import LANGUAGES, conllu_block, generate, generate_split
from nmtvariants.corpora.toyworld_grammar import TARGETS, align
from nmtvariants.corpora.toyworld_image import render_png
from nmtvariants.fileio import atomic_write


def _timed(function: Callable[[], object]) -> tuple[object, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = function()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=20000)
    parser.add_argument("--valid", type=int, default=500)
    parser.add_argument("--test", type=int, default=500)
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args()
    total = args.train + args.valid + args.test
    rows: list[dict[str, object]] = []

    def record(phase: str, wall: float, cpu: float, items: int) -> None:
        rows.append({"phase": phase, "items": items, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                     "cpu_ms_per_item": round(1000 * cpu / max(items, 1), 4)})  # fmt: skip

    items, wall, cpu = _timed(lambda: generate_split(random.Random("bench"), total))
    record("plans + 4 realisations", wall, cpu, total)
    _, wall, cpu = _timed(
        lambda: [
            (
                conllu_block(i.tokens["en"], "x", i.text["en"]),
                [align(i.tokens["en"], i.tokens[t]) for t in TARGETS],
            )
            for i in items  # type: ignore[attr-defined]
        ]
    )
    record("CoNLL-U + 3 alignments", wall, cpu, total)
    rng = random.Random("images")
    pngs, wall, cpu = _timed(lambda: [render_png(i.plan.objects, i.plan.relations, rng) for i in items])  # type: ignore[attr-defined]
    record("PNG 64x64 rendering", wall, cpu, total)
    with tempfile.TemporaryDirectory() as tmp:

        def write_all() -> None:
            for k, data in enumerate(pngs):  # type: ignore[arg-type]
                with atomic_write(Path(tmp) / f"{k}.png", "wb") as out:
                    out.write(data)

        _, wall, cpu = _timed(write_all)
        record("atomic PNG writes", wall, cpu, total)
    sample = items[:2000]  # type: ignore[index]
    tokenizers = {lang: MosesTokenizer(lang) for lang in LANGUAGES}
    _, wall, cpu = _timed(
        lambda: [
            tokenizers[lang].tokenize(i.text[lang], escape=False, aggressive_dash_splits=False)
            for i in sample
            for lang in LANGUAGES
        ]
    )
    record(
        "(avoided) sacremoses on 4 languages", wall * total / len(sample), cpu * total / len(sample), total
    )
    with tempfile.TemporaryDirectory() as tmp:
        _, wall, cpu = _timed(lambda: generate(tmp, train=args.train, valid=args.valid, test=args.test))
    record("generate() end to end, all files", wall, cpu, total)

    end_to_end = rows[-1]["cpu_s"]
    for row in rows:
        row["cpu_vs_end_to_end"] = round(row["cpu_s"] / end_to_end, 3)  # type: ignore[operator]
    result = {
        "benchmark": "toyworld_speed",
        "sizes": {"train": args.train, "valid": args.valid, "test": args.test},
        "python": platform.python_version(),
        "machine": platform.machine(),
        "rows": rows,
        "note": "the sacremoses row is extrapolated from 2000 sentences and is not part of generate()",
    }
    out = Path(args.out)
    with atomic_write(out / "toyworld_speed.json") as handle:
        handle.write(json.dumps(result, indent=1) + "\n")
    header = (
        "| phase | sentences | wall s | CPU s | CPU ms/sentence | CPU vs end-to-end |\n"
        "|---|---:|---:|---:|---:|---:|\n"
    )
    table = header + "".join(
        f"| {r['phase']} | {r['items']} | {r['wall_s']} | {r['cpu_s']} | {r['cpu_ms_per_item']} | "
        f"{r['cpu_vs_end_to_end']} |\n"
        for r in rows
    )
    with atomic_write(out / "toyworld_speed.md") as handle:
        handle.write(table)
    print(table)


if __name__ == "__main__":
    main()
