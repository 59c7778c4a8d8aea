"""Training-step throughput on one GPU, fp32 against bf16 autocast, by SDPA backend and batch-shape mix.

Why: on an H200 the Multi30k runs trained 4.5x *slower* under bf16 autocast than in fp32 for the small
model, and the bf16 speed still climbed window by window while fp32's had levelled
(``results/multi30k_composition_gpu_campaign.md``): a cost paid once per new batch shape. Real corpora
batch by length, so a run sees hundreds of distinct ``[rows, length]`` shapes. This benchmark separates
the candidates: the same seeded stream of shapes (or one fixed shape) through the model's real
training step (``LossModule`` forward, backward, Adam) with the fused attention kernels free to choose
(``default``) or with cuDNN's attention left out (``no_cudnn``: flash, memory-efficient and math only).

Each setting runs in its own child process (fresh kernel and plan caches), settings interleaved round
by round; real target tokens per second per window of ``--window`` steps after two warm-up steps.
Writes ``benchmarks/results/<out>.json`` and ``.md``::

    PYTHONPATH=src python benchmarks/gpu_amp_shapes.py --out gpu_amp_shapes_h200   # on a GPU machine
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from result_files import write_record

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
VOCAB = 9000  # about the Multi30k joint BPE vocabulary
SETTINGS = {  # name: (amp, sdpa, shapes)
    "fp32 varied": ("none", "default", "varied"),
    "bf16 varied": ("bf16", "default", "varied"),
    "bf16 varied no_cudnn": ("bf16", "no_cudnn", "varied"),
    "fp32 fixed": ("none", "default", "fixed"),
    "bf16 fixed": ("bf16", "default", "fixed"),
}


def shapes(kind: str, steps: int, batch_tokens: int, seed: int = 1) -> list[tuple[int, int, int]]:
    """``(rows, source length, target length)`` per step: Multi30k-like lengths 6-48, rows to fill
    ``batch_tokens``, or one fixed shape."""
    rng = random.Random(seed)
    out = []
    for _ in range(steps):
        if kind == "fixed":
            out.append((batch_tokens // 24, 24, 24))
            continue
        source = rng.randint(6, 48)
        target = max(4, source + rng.randint(-4, 4))
        out.append((batch_tokens // max(source, target), source, target))
    return out


def child(args: argparse.Namespace) -> dict:
    """One setting in this process: the model's training step over the shape stream."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from nmtvariants.data.vocab import PAD_ID
    from nmtvariants.models import build_model
    from nmtvariants.models.config import model_config
    from nmtvariants.training.objective import LossModule, autocast_context

    amp, sdpa, kind = SETTINGS[args.child]
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(1)
    cfg = model_config(args.preset, overrides={"d_model": args.d_model, "d_ff": 4 * args.d_model})
    model = build_model(cfg, vocab_size=VOCAB).to(device)
    loss_module = LossModule(model, 0.1)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    backends = (
        [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
        if sdpa == "no_cudnn"
        else list(SDPBackend.__members__.values())
    )
    backends = [b for b in backends if b.name != "OVERRIDEABLE" and b.name != "ERROR"]
    rng = torch.Generator().manual_seed(2)

    def batch(rows: int, source: int, target: int) -> tuple[torch.Tensor, ...]:
        src = torch.randint(4, VOCAB, (rows, source), generator=rng)
        tgt = torch.randint(4, VOCAB, (rows, target + 1), generator=rng)
        for row in range(rows):  # ragged rows, as length-bucketed batches have
            if row % 4:
                src[row, source - row % 4 :] = PAD_ID
            if row % 3:
                tgt[row, target + 1 - row % 3 :] = PAD_ID
        return src.to(device), tgt[:, :-1].to(device), tgt[:, 1:].to(device)

    def step(tensors: tuple[torch.Tensor, ...]) -> None:
        with autocast_context(amp, device):
            objective, *_ = loss_module(*tensors)
        objective.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    stream = shapes(kind, args.steps + 2, args.batch_tokens)
    batches = [batch(*shape) for shape in stream]
    windows, tokens, distinct = [], 0, len(set(stream[2:]))
    with sdpa_kernel(backends):
        for tensors in batches[:2]:
            step(tensors)
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for index, tensors in enumerate(batches[2:], 1):
            step(tensors)
            tokens += int(tensors[2].ne(PAD_ID).sum())
            if index % args.window == 0:
                if device.type == "cuda":
                    torch.cuda.synchronize()
                now = time.perf_counter()
                windows.append(tokens / (now - start))
                start, tokens = now, 0
    return {"setting": args.child, "tok_per_s": windows, "distinct_shapes": distinct}


def table(meta: dict, rounds: list[list[dict]]) -> str:
    names = list(SETTINGS)
    windows = len(rounds[0][0]["tok_per_s"])
    lines = [
        f"# Training-step throughput by autocast, SDPA backend and shape mix ({meta['date']})",
        "",
        f"Machine: {meta['gpu']}, torch {meta['torch']} (CUDA {meta['cuda']}); model `{meta['preset']}` "
        f"d_model {meta['d_model']}, vocabulary {VOCAB}, {meta['batch_tokens']}-token batches, "
        f"{meta['steps']} steps after 2 warm-up steps, rounds: {meta['rounds']}, each setting its own "
        "process. `varied`: a seeded stream of Multi30k-like shapes "
        f"({rounds[0][0]['distinct_shapes']} distinct in {meta['steps']} steps); `fixed`: one shape. "
        "`no_cudnn`: SDPA may choose flash, memory-efficient or math, not cuDNN.",
        "",
        "Target tokens/s per window of " + str(meta["window"]) + " steps (median over rounds):",
        "",
        "| setting | "
        + " | ".join(f"window {i + 1}" for i in range(windows))
        + " | × fp32 varied, last window |",
        "|---|" + "---:|" * (windows + 1),
    ]
    medians = {}
    for name in names:
        runs = [next(r["tok_per_s"] for r in one if r["setting"] == name) for one in rounds]
        per_window = list(zip(*runs, strict=True))
        medians[name] = [statistics.median(w) for w in per_window]
    base = medians["fp32 varied"][-1]
    for name in names:
        cells = " | ".join(f"{value:,.0f}" for value in medians[name])
        lines.append(f"| {name} | {cells} | {medians[name][-1] / base:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--child", choices=list(SETTINGS), help=argparse.SUPPRESS)
    parser.add_argument("--preset", default="small")
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--batch-tokens", type=int, default=8192)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--window", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", default="gpu_amp_shapes")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return
    import torch

    meta = {
        "date": time.strftime("%Y-%m-%d"),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else platform.processor() or "cpu",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        **{k: getattr(args, k) for k in ("preset", "d_model", "batch_tokens", "steps", "window", "rounds")},
    }
    names = list(SETTINGS)
    rounds = []
    for round_index in range(args.rounds):
        order = names[round_index % len(names) :] + names[: round_index % len(names)]
        results = []
        for name in order:
            command = [sys.executable, __file__, "--child", name, *sys.argv[1:]]
            done = subprocess.run(command, capture_output=True, text=True, env=os.environ)
            if done.returncode:
                raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
            results.append(json.loads(done.stdout.splitlines()[-1]))
            print(json.dumps(results[-1]), flush=True)
        rounds.append(results)
    write_record(args.results, args.out, {"meta": meta, "rounds": rounds}, table(meta, rounds))
    print(table(meta, rounds))


if __name__ == "__main__":
    main()
