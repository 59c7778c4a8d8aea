"""Resident memory of `nmtvariants train` over the updates, under batch shapes that vary as real data's do.

Why: the Multi30k recipe (bf16 autocast, small model) grew to a peak RSS of 7.5 GB in 40 minutes,
against 1.9-3.5 GB for the peers' same-size models. This runs the real training command on a
corpus whose sentence lengths vary as real data's (real BPE files with ``--corpus``, else a
synthetic corpus with a log-normal fit of Multi30k's lengths: every batch has another shape),
samples the process's RSS from /proc every 0.2 s, and maps the samples to updates through the run's
own train_log.csv. Configurations run one after the other in fresh processes (``--parallel``: side
by side, one process each), in one table:

* ``default``: the trainer as shipped (oneDNN's and ideep's kernel caches bounded to 64 entries,
  ``nmtvariants.kernel_caches``);
* ``ideep-cache-1024``: ideep's matmul cache left at its default of 1024 entries, as before the fix
  (the cause of the growth under bf16);
* ``no-malloc-tuning``: glibc malloc left as it is (``nmtvariants.allocator.keep_freed_memory``
  skipped), to see what the tuning costs under varying shapes;
* ``small-onednn-cache``: ``ONEDNN_PRIMITIVE_CACHE_CAPACITY=8``.

Writes ``results/train_memory.json`` and ``results/train_memory.md``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

CONFIGS = {
    "default": ({}, ""),
    "ideep-cache-1024": ({"LRU_CACHE_CAPACITY": "1024"}, ""),
    "no-malloc-tuning": ({}, "import nmtvariants.allocator as a; a._done = True; "),
    "small-onednn-cache": ({"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "8"}, ""),
}


def repo_relative(path: str) -> str:
    """``path`` relative to the repository when it lies inside it, so that a committed result names
    no directory of the machine that produced it (the default ``--out`` is absolute)."""
    resolved = Path(path).resolve()
    return str(resolved.relative_to(REPO)) if resolved.is_relative_to(REPO) else path


def write_corpus(folder: Path, sentences: int, vocab: int, seed: int) -> dict[str, str]:
    """Token files with Multi30k-like lengths (log-normal, median ~12, up to ~40) and a vocabulary."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(vocab)]
    zipf = 1.0 / np.arange(1, vocab + 1)
    zipf /= zipf.sum()
    paths = {}
    for side, scale in (("src", 1.0), ("tgt", 1.1)):
        lengths = np.clip(rng.lognormal(np.log(12 * scale), 0.35, sentences).astype(int), 2, 45)
        lines = [" ".join(rng.choice(words, size=n, p=zipf)) for n in lengths]
        path = folder / f"train.{side}"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths[side] = str(path)
    vocab_path = folder / "vocab.txt"
    vocab_path.write_text("\n".join(["<pad>", "<s>", "</s>", "<unk>", *words]) + "\n", encoding="utf-8")
    paths["vocab"] = str(vocab_path)
    return paths


def run_config(name: str, corpus: dict[str, str], args: argparse.Namespace, folder: Path) -> dict:
    env_extra, prelude = CONFIGS[name]
    outdir = folder / name
    settings = {
        "data": {"train_src": corpus["src"], "train_tgt": corpus["tgt"], "vocab": corpus["vocab"]},
        "model": {"preset": args.preset},
        "variant": {},
        "train": {
            "max_updates": args.updates,
            "batch_tokens": args.batch_tokens,
            "warmup": 100,
            "save_every": args.updates * 10,
            "valid_every": args.updates * 10,
            "log_every": 5,
            "amp": args.amp,
            "seed": 1,
        },
    }
    code = (
        prelude + "import sys; from nmtvariants.cli import main; "
        f"sys.exit(main(['train', '--config-json', {json.dumps(json.dumps(settings))}, "
        f"'--outdir', {str(outdir)!r}, '--threads', '{args.threads}', '--no-progress']))"
    )
    env = {**os.environ, **env_extra, "PYTHONPATH": str(REPO / "src")}
    samples: list[tuple[float, int]] = []
    start = time.perf_counter()
    log = open(folder / f"{name}.log", "w", encoding="utf-8")  # noqa: SIM115
    process = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=log)

    def sample() -> None:
        status = Path(f"/proc/{process.pid}/status")
        while process.poll() is None:
            try:
                for line in status.read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        samples.append((time.perf_counter() - start, int(line.split()[1]) * 1024))
            except OSError:
                break
            time.sleep(0.2)

    sampler = threading.Thread(target=sample)
    sampler.start()
    code_ = process.wait()
    sampler.join()
    log.close()
    if code_ != 0:
        tail = (folder / f"{name}.log").read_text(encoding="utf-8").splitlines()[-5:]
        raise SystemExit(f"{name}: training exited with {code_}: " + " | ".join(tail))
    with open(outdir / "train_log.csv", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row["split"] == "train"]
    # the log's elapsed_s counts from the trainer's start; align by the last row and the exit time
    offset = samples[-1][0] - float(rows[-1]["elapsed_s"]) if samples else 0.0
    times = np.array([t - offset for t, _ in samples])
    rss = np.array([r for _, r in samples])
    curve = []
    for row in rows:
        upto = rss[times <= float(row["elapsed_s"])]
        curve.append(
            {
                "update": int(row["update"]),
                "rss_mb": round(float(upto.max()) / 2**20, 1) if len(upto) else None,
            }
        )
    return {
        "config": name,
        "peak_rss_mb": round(float(rss.max()) / 2**20, 1),
        "curve": curve,
        "wall_s": round(samples[-1][0], 1) if samples else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=300)
    parser.add_argument("--preset", default="small")
    parser.add_argument("--batch-tokens", type=int, default=4096)
    parser.add_argument("--amp", default="bf16", choices=("none", "bf16"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sentences", type=int, default=30000)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument(
        "--corpus",
        nargs=3,
        metavar=("SRC", "TGT", "VOCAB"),
        help="real BPE training files and vocabulary (default: a synthetic corpus of Multi30k-like lengths)",
    )
    parser.add_argument("--parallel", action="store_true", help="run the configurations side by side")
    parser.add_argument("--out", default=str(HERE / "results" / "train_memory"))
    args = parser.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)  # fail-safe before the long runs, not after them
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.corpus:
            corpus = dict(zip(("src", "tgt", "vocab"), args.corpus, strict=True))
        else:
            corpus = write_corpus(folder, args.sentences, args.vocab, seed=1)
        with ThreadPoolExecutor(max_workers=len(args.configs) if args.parallel else 1) as pool:
            results = list(pool.map(lambda name: run_config(name, corpus, args, folder), args.configs))
    load = os.getloadavg()
    record = {
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "settings": {**vars(args), "out": repo_relative(args.out)},
        "load_average_after": load,
        "results": results,
    }
    out.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    marks = sorted({max(1, round(args.updates * f / 5 / 5) * 5) for f in range(1, 6)})
    header = "| config | peak RSS (MB) | " + " | ".join(f"RSS by update {m}" for m in marks) + " |"
    lines = [
        f"# Training RSS over updates ({args.preset}, {args.amp}, {args.batch_tokens} tokens/batch, "
        f"{args.threads} threads, varying shapes)",
        "",
        f"`{record['command']}`; load average after: {load[0]:.2f}",
        "",
        header,
        "|" + "---|" * (2 + len(marks)),
    ]
    for result in results:
        by_update = {point["update"]: point["rss_mb"] for point in result["curve"]}
        cells = [str(by_update.get(m, "")) for m in marks]
        lines.append(f"| {result['config']} | {result['peak_rss_mb']} | " + " | ".join(cells) + " |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
