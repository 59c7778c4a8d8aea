"""What `translate --dtype` costs in quality: one trained model decodes one test set in each dtype, and
each output is post-processed and scored with the workflow's own commands (rules/evaluate.smk), so
the BLEU and chrF differences to float32 are the ones a table would show.

Issue 23's bar for a fast mode: BLEU within 0.3 of float32 on Multi30k test2016. Also reported per
dtype: the share of sentences identical to float32's output, and the decoding wall time (the whole
command, start-up included; speed is measured properly by ``decode_ct2.py``)::

    PYTHONPATH=src python benchmarks/dtype_bleu.py --checkpoint model.pt --vocab vocab.txt \\
        --source test_2016_flickr.en --ref test_2016_flickr.cs -l cs --out dtype_bleu_multi30k
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from result_files import write_record

from nmtvariants.hardware import cpu_model

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
DTYPES = ("float32", "bfloat16", "int8")


def nmtvariants(*arguments: str) -> float:
    """Run one `nmtvariants` command with this checkout's library; its wall seconds."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")])),
    }
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "nmtvariants", *arguments], env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(f"nmtvariants {arguments[0]} failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - start


def score(args: argparse.Namespace, dtype: str, work: Path) -> dict:
    """Decode in ``dtype``, post-process, score; the record."""
    bpe, hyp, scores = work / f"{dtype}.bpe", work / f"{dtype}.hyp", work / f"{dtype}.json"
    seconds = nmtvariants(
        "translate",
        "--checkpoint",
        str(args.checkpoint),
        "--vocab",
        str(args.vocab),
        "--input",
        str(args.source),
        "--output",
        str(bpe),
        "--beam",
        str(args.beam),
        "--alpha",
        str(args.alpha),
        "--dtype",
        dtype,
        "--threads",
        str(args.threads),
        "--device",
        "cpu",
    )
    nmtvariants("postprocess", "-l", args.lang, "--truecased", "-o", str(hyp), str(bpe))
    nmtvariants(
        "evaluate",
        "--hyp",
        str(hyp),
        "--ref",
        str(args.ref),
        "-l",
        args.lang,
        "--metrics",
        "bleu,chrf",
        "--system",
        dtype,
        "--testset",
        args.source.stem,
        "--json",
        str(scores),
    )
    record = json.loads(scores.read_text(encoding="utf-8"))
    metrics = {name: entry["score"] for name, entry in record["scores"].items()}
    return {
        "dtype": dtype,
        "seconds": seconds,
        "lines": hyp.read_text(encoding="utf-8").splitlines(),
        **metrics,
    }


def table(meta: dict, records: list[dict]) -> str:
    reference = records[0]
    lines = [
        f"# BLEU and chrF of `translate --dtype` against float32 ({meta['date']})",
        "",
        f"Model: `{meta['checkpoint']}` ({meta['about']}); test set `{meta['source']}` "
        f"({reference['sentences']} sentences), "
        f"beam {meta['beam']}, α {meta['alpha']}, CPU {meta['cpu']}, {meta['threads']} thread(s); "
        "post-processing and scores by the workflow's `postprocess` and `evaluate` (sacreBLEU).",
        "",
        "| dtype | BLEU | Δ BLEU | chrF | Δ chrF | sentences identical to float32 | decode wall s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for record in records:
        lines.append(
            f"| {record['dtype']} | {record['bleu']:.2f} | {record['bleu'] - reference['bleu']:+.2f} | "
            f"{record['chrf']:.2f} | {record['chrf'] - reference['chrf']:+.2f} | "
            f"{record['identical_to_float32']:.1%} | {record['seconds']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--vocab", type=Path, required=True)
    parser.add_argument("--source", type=Path, required=True, help="the test set's BPE source")
    parser.add_argument("--ref", type=Path, required=True, help="the raw reference")
    parser.add_argument("-l", "--lang", required=True, help="target language")
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--alpha", type=float, default=1.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--about", default="", help="what the model is, for the table")
    parser.add_argument("--out", default="dtype_bleu")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    dtypes = args.dtypes.split(",")
    if dtypes[0] != "float32":
        parser.error("--dtypes: float32 first (the reference of the differences)")
    with tempfile.TemporaryDirectory() as folder:
        records = [score(args, dtype, Path(folder)) for dtype in dtypes]
    for record in records:  # the outputs themselves stay out of the record
        same = sum(a == b for a, b in zip(record["lines"], records[0]["lines"], strict=True))
        record["identical_to_float32"] = same / len(records[0]["lines"])
    for record in records:
        record["sentences"] = len(record.pop("lines"))
    meta = {
        "date": time.strftime("%Y-%m-%d"),
        "cpu": cpu_model(),
        "about": args.about,
        **{key: str(getattr(args, key)) for key in ("checkpoint", "source", "ref")},
        **{key: getattr(args, key) for key in ("beam", "alpha", "threads", "lang")},
    }
    write_record(args.results, args.out, {"meta": meta, "records": records}, table(meta, records))
    print(table(meta, records))


if __name__ == "__main__":
    main()
