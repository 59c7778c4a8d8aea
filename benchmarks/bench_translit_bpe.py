"""Speed of ISO 9 transliteration and BPE application, side by side with the reference tools.

    PYTHONPATH=src python benchmarks/bench_translit_bpe.py [--repeat 20] [--out benchmarks/results]

Corpus: FLORES-200 devtest Russian (1,012 lines, ~140 characters) repeated ``--repeat`` times, and
Multi30k German for BPE. Rates are lines per second of wall time on one process; the reference tools
run as the pipeline would run them (Perl `translit`, `subword-nmt apply-bpe`), process start included.
Writes ``translit_bpe.json`` and ``translit_bpe.md``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nmtvariants.text.bpe import BPESegmenter, learn_joint_bpe
from nmtvariants.text.translit import iso9_to_cyrillic, iso9_to_latin

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()

    russian = (args.data / "flores200-devtest/rus_Cyrl.devtest").read_text(encoding="utf-8").splitlines()
    lines = russian * args.repeat
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "ru").write_text("\n".join(lines) + "\n", encoding="utf-8")
        latin = [iso9_to_latin(line) for line in lines]
        (tmp / "ru.lat").write_text("\n".join(latin) + "\n", encoding="utf-8")
        ours_fwd = timed(lambda: [iso9_to_latin(line) for line in lines])
        ours_rev = timed(lambda: [iso9_to_cyrillic(line) for line in latin])
        tool = shutil.which("translit")
        perl_fwd = perl_rev = None
        if tool:
            perl_fwd = timed(
                lambda: subprocess.run(
                    [tool, "-t", "ISO 9", "-i", str(tmp / "ru"), "-o", str(tmp / "perl.lat")], check=True
                )
            )
            perl_rev = timed(
                lambda: subprocess.run(
                    [tool, "-t", "ISO 9", "-r", "-i", str(tmp / "ru.lat"), "-o", str(tmp / "perl.cyr")],
                    check=True,
                )
            )
        for name, ours, perl in (
            ("ISO 9 Cyrillic->Latin", ours_fwd, perl_fwd),
            ("ISO 9 Latin->Cyrillic", ours_rev, perl_rev),
        ):
            rows.append(
                {
                    "task": name,
                    "lines": len(lines),
                    "ours_lines_per_s": len(lines) / ours,
                    "reference": "translit (Perl)",
                    "reference_lines_per_s": len(lines) / perl if perl else None,
                    "speedup": perl / ours if perl else None,
                }
            )

        # BPE apply: Multi30k DE, codes learned on 5,000 lines of EN+DE
        train = {}
        for lang in ("en", "de"):
            source = args.data / f"multi30k/task1/raw/train.{lang}.gz"
            with gzip.open(source, "rt", encoding="utf-8") as handle:
                train[lang] = tmp / f"train.{lang}"
                train[lang].write_text(handle.read(), encoding="utf-8")
        small = {lang: tmp / f"small.{lang}" for lang in train}
        for lang, path in train.items():
            small[lang].write_text("".join(path.read_text(encoding="utf-8").splitlines(True)[:5000]))
        result = learn_joint_bpe(small, 2000, tmp / "codes", tmp / "vocab")
        german = train["de"].read_text(encoding="utf-8").splitlines()
        segmenter = BPESegmenter(result.codes["de"], result.vocab["de"], 50)
        ours_bpe = timed(lambda: [segmenter(line) for line in german])
        cli = Path(sys.executable).with_name("subword-nmt")
        with open(train["de"], "rb") as source, open(tmp / "cli.de", "wb") as target:
            ref_bpe = timed(
                lambda: subprocess.run(
                    [
                        str(cli),
                        "apply-bpe",
                        "-c",
                        str(result.codes["de"]),
                        "--vocabulary",
                        str(result.vocab["de"]),
                        "--vocabulary-threshold",
                        "50",
                    ],
                    stdin=source,
                    stdout=target,
                    check=True,
                )
            )
        rows.append(
            {
                "task": "BPE apply (threshold 50), Multi30k DE",
                "lines": len(german),
                "ours_lines_per_s": len(german) / ours_bpe,
                "reference": "subword-nmt apply-bpe",
                "reference_lines_per_s": len(german) / ref_bpe,
                "speedup": ref_bpe / ours_bpe,
            }
        )

    args.out.mkdir(parents=True, exist_ok=True)
    report = {"machine": platform.platform(), "python": sys.version.split()[0], "rows": rows}
    (args.out / "translit_bpe.json").write_text(json.dumps(report, indent=2) + "\n")
    table = [
        "| task | lines | ours (lines/s) | reference | reference (lines/s) | ours / reference |",
        "|---|---:|---:|---|---:|---:|",
    ]
    for row in rows:
        reference = f"{row['reference_lines_per_s']:,.0f}" if row["reference_lines_per_s"] else "n/a"
        speedup = f"{row['speedup']:.2f}x" if row["speedup"] else "n/a"
        table.append(
            f"| {row['task']} | {row['lines']:,} | {row['ours_lines_per_s']:,.0f} | "
            f"{row['reference']} | {reference} | {speedup} |"
        )
    (args.out / "translit_bpe.md").write_text("\n".join(table) + "\n")
    print("\n".join(table))


if __name__ == "__main__":
    main()
