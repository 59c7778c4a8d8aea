"""Beam search's pass over the vocabulary: the native kernel against PyTorch's operators.

What a beam-search step needs of its ``[rows, V]`` logits is each row's ``2K`` best tokens as
log-probabilities. Three ways, timed interleaved round by round in one process (ratios per round):

- ``log_softmax + top-k``: what beam search did until 74291d9 (log-softmax into a second matrix, the
  beam scores added to it, top-k over each sentence's ``K x V`` candidates);
- ``pytorch``: ``vocab_topk``'s fallback (log-sum-exp, banned tokens masked in a copy, top-k per row);
- ``native``: ``vocab_topk``'s kernel (one read for the best entries, one for the normaliser).

Shapes: the CTranslate2 comparison's (64 sentences x beam 5, 8,004 types), the demo's toy models
(64 x 5, ~3,000), and a WMT-sized step (32 x beam 16, 37,000). Random logits (N(0, 3^2)).

Usage: ``python benchmarks/vocab_topk.py [--rounds 5] [--threads 1] [--beside TEXT]``; writes
``benchmarks/results/vocab_topk.{json,md}``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import time
from pathlib import Path

from result_files import write_record

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
SHAPES = ((64, 5, 8004), (64, 5, 3000), (32, 16, 37000))  # sentences, beam, vocabulary
BANNED = (0, 1)  # <pad>, <s>
CALLS = 30


def methods(torch, vocab_topk):
    """name -> function(logits, scores, beam) doing one step's candidate selection."""

    def log_softmax_topk(logits, scores, beam):
        sentences, vocab = scores.size(0), logits.size(1)
        cand = torch.log_softmax(logits, dim=-1).view(sentences, beam, vocab)
        cand.add_(scores[:, :, None])
        cand[:, :, list(BANNED)] = float("-inf")
        return cand.view(sentences, beam * vocab).topk(2 * beam, dim=1)

    def through(top_log_probs):
        def select(logits, scores, beam):
            best, _, _ = top_log_probs(logits, 2 * beam, BANNED)
            cand = best.view(scores.size(0), beam, 2 * beam).add_(scores[:, :, None])
            return cand.view(scores.size(0), -1).topk(2 * beam, dim=1)

        return select

    return {
        "log_softmax + top-k": log_softmax_topk,
        "pytorch": through(vocab_topk._torch_top_log_probs),
        "native": through(vocab_topk.top_log_probs),
    }


def measure(rounds: int, threads: int) -> tuple[list[dict], str]:
    sys.path.insert(0, str(REPO / "src"))
    from nmtvariants.mkl_dispatch import use_fast_mkl_kernels

    use_fast_mkl_kernels()
    import torch

    from nmtvariants.allocator import keep_freed_memory
    from nmtvariants.inference import vocab_topk

    torch.set_num_threads(threads)
    keep_freed_memory()  # as `nmtvariants translate` does
    status = vocab_topk.status()
    ways = methods(torch, vocab_topk)
    rows = []
    for sentences, beam, vocab in SHAPES:
        generator = torch.Generator().manual_seed(vocab)
        logits = torch.randn(sentences * beam, vocab, generator=generator) * 3
        scores = -torch.rand(sentences, beam, generator=generator) * 10
        for function in ways.values():
            function(logits, scores, beam)  # warm-up
        for k in range(rounds):
            names = list(ways)
            names = names[k % len(names) :] + names[: k % len(names)]
            for name in names:
                start = time.perf_counter()
                for _ in range(CALLS):
                    ways[name](logits, scores, beam)
                ms = (time.perf_counter() - start) / CALLS * 1e3
                rows.append({"shape": [sentences, beam, vocab], "round": k + 1, "method": name, "ms": ms})
    return rows, status


TITLE = "# Beam search's pass over the vocabulary: native kernel against PyTorch (benchmarks/vocab_topk.py)"
EXPLAINED = (
    "One call: a step's candidate selection for all sentences (2K per sentence out of K x V), from "
    "logits to the sentence-level top-k. *x native*: that method's time over the native kernel's, "
    "per round (median, then each round)."
)
HEADER = (
    "| sentences x beam, vocabulary | method | ms per call (median) | x native (per round) |\n"
    "|---|---|---:|---|"
)


def markdown(result: dict) -> str:
    meta = result["meta"]
    setting = (
        f"Measured {meta['date']} on {meta['cpu']}, torch {meta['torch']}, {meta['threads']} thread(s), "
        f"{meta['rounds']} rounds, methods interleaved in rotating order, {CALLS} calls each; the kernel: "
        f"{meta['status']}. What else ran: {meta['beside']}. Command: `{meta['command']}`."
    )
    return "\n\n".join([TITLE, setting, EXPLAINED, "\n".join([HEADER, *table_rows(result["rows"])])]) + "\n"


def table_rows(rows: list[dict]) -> list[str]:
    """One row per shape and method: median ms and the per-round ratios to the native kernel."""
    lines = []
    for shape in sorted({tuple(r["shape"]) for r in rows}, key=lambda s: s[2]):
        mine = [r for r in rows if tuple(r["shape"]) == shape]
        native = {r["round"]: r["ms"] for r in mine if r["method"] == "native"}
        for method in dict.fromkeys(r["method"] for r in mine):
            times = {r["round"]: r["ms"] for r in mine if r["method"] == method}
            ratios = [times[k] / native[k] for k in sorted(times)]
            median_ms = statistics.median(times.values())
            lines.append(
                f"| {shape[0]} x {shape[1]}, {shape[2]:,} | {method} | {median_ms:.2f} | "
                f"**{statistics.median(ratios):.2f}** ({', '.join(f'{x:.2f}' for x in ratios)}) |"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--beside", default="nothing else (quiet machine)")
    parser.add_argument("--out", default=str(RESULTS / "vocab_topk"))
    args = parser.parse_args()
    rows, status = measure(args.rounds, args.threads)
    import torch

    sys.path.insert(0, str(REPO / "src"))
    from nmtvariants.hardware import cpu_model

    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "threads": args.threads,
        "rounds": args.rounds,
        "status": status,
        "beside": args.beside,
        "command": "python benchmarks/vocab_topk.py " + shlex.join(sys.argv[1:]),
    }
    result = {"meta": meta, "rows": rows}
    out = Path(args.out)
    write_record(out.parent, out.name, result, markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
