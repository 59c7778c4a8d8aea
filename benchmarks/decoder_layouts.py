"""Training and decoding speed of Yang et al.'s (2020) simplified decoder against the standard one, in
one run (the paper's Table 4: +11-14% for both, from dropping each layer's FFN and its Add&Norm).

Both models are the same size preset with the study's fairseq settings
(``study_overrides("yang2020", preset)``: post-norm, biased projections, ...); only
``variant.decoder_layout`` differs (``standard`` = self,cross,ffn; ``simplified`` = self,cross).
Default preset ``small`` (3+3 layers, d 256, 4 heads, FFN 1024), on the corpus of the training
benchmark (``train_throughput.py``: the peers' synthetic 20k pairs, 8,000 types, renamed onto one
joint vocabulary).

* training: the real Trainer, label smoothing 0.1, ~4,000 target tokens per batch, fp32; real target
  tokens per wall second and per CPU second over updates ``warm+1..warm+measured``, stamped after
  every update (as ``train_throughput.py``);
* decoding: untrained weights (speed does not depend on them, and both layouts then emit the same
  lengths), the first ``n`` valid sentences sorted by length, batches of 64, beam 5, ``</s>`` banned
  before ``length`` tokens and forced there (as ``decode.py``); sentences per wall and per CPU
  second after one warm-up batch.

Every measurement is its own child process (peak RSS its own). Rounds interleave the layouts and
alternate which goes first; ratios simplified / standard are taken per round (same machine
conditions), then the median. The load average and the CPU that *other* processes used during each
run are recorded beside it, because this machine is shared. Run on a quiet machine::

    PYTHONPATH=src .venv/bin/python benchmarks/decoder_layouts.py --rounds 3

Writes ``benchmarks/results/decoder_layouts.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

# the training benchmark's corpus, child runner and measurement window
sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_throughput as bench

REPO = bench.REPO
RESULTS = REPO / "benchmarks" / "results"
LAYOUTS = ("standard", "simplified")
TASKS = ("train", "decode")
PAPER = "+11-14% training and decoding speed (Yang et al. 2020, Table 4)"


def model_settings(preset: str) -> dict:
    from nmtvariants.models.config import study_overrides

    return {"preset": preset, **study_overrides("yang2020", preset)}


# ---------------------------------------------------------------------- workers (child processes)
def train_worker(args: argparse.Namespace) -> dict:
    import torch

    from nmtvariants.training.train_config import parse_run_config

    data = Path(args.data)
    config = parse_run_config(
        {
            "data": {
                "train_src": str(data / "train.src"),
                "train_tgt": str(data / "train.trg"),
                "vocab": str(data / "vocab.txt"),
            },
            "model": model_settings(args.preset),
            "variant": {"decoder_layout": args.layout},
            "train": {
                "max_updates": args.warm + args.measured,
                "batch_tokens": args.batch_tokens,
                "lr_peak": 5e-4,
                "warmup": 1000,
                "label_smoothing": 0.1,
                "save_every": 10_000,
                "valid_every": 10_000,
                "log_every": 10_000,
                "seed": 1,
                "threads": args.threads,
                "progress": False,
                "tensorboard": False,
            },
        }
    )
    result = bench.timed_training(config, args.warm)
    result["threads"] = torch.get_num_threads()
    return result


def decode_worker(args: argparse.Namespace) -> dict:
    import torch

    from nmtvariants.data.vocab import Vocabulary
    from nmtvariants.fileio import read_lines
    from nmtvariants.inference.beam_search import beam_search
    from nmtvariants.inference.scorer import pad_batch
    from nmtvariants.models import build_model, model_config

    torch.set_num_threads(args.threads)
    data = Path(args.data)
    vocab = Vocabulary.load(data / "vocab.txt")
    sources = [vocab.encode(line) for line in list(read_lines(data / "valid.src"))[: args.n]]  # + </s>
    settings = model_settings(args.preset)
    preset = settings.pop("preset")
    torch.manual_seed(1)
    model = build_model(model_config(preset, settings, {"decoder_layout": args.layout}), len(vocab)).eval()
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    batches = [
        pad_batch([sources[i] for i in order[j : j + args.batch]]) for j in range(0, len(order), args.batch)
    ]
    length = {"min_len": args.length, "max_len_a": 0, "max_len_b": args.length}
    with torch.inference_mode():
        beam_search(model, batches[0][:2], beam_size=args.beam, min_len=2, max_len_a=0, max_len_b=2)
        wall, cpu = time.perf_counter(), time.process_time()
        for src in batches:
            hyps = beam_search(model, src, beam_size=args.beam, **length)
            if any(len(h[0].tokens) != args.length for h in hyps):
                raise RuntimeError("a hypothesis left the fixed length")
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "sentences": len(sources),
        "seconds": wall,
        "sent_per_s": len(sources) / wall,
        "cpu_sent_per_s": len(sources) / cpu,
        "parameters": sum(p.numel() for p in model.parameters()),
        "threads": torch.get_num_threads(),
    }


# ---------------------------------------------------------------------- driver
def run(task: str, layout: str, args: argparse.Namespace, data: Path) -> dict:
    command = [sys.executable, __file__, "--worker", task, "--layout", layout, "--data", str(data)]
    for key in ("preset", "threads", "warm", "measured", "batch_tokens", "n", "beam", "batch", "length"):
        command += [f"--{key.replace('_', '-')}", str(getattr(args, key))]
    result = bench.run_child(command, bench.env_for(args.threads))
    result.update(task=task, layout=layout)
    return result


SPEEDS = {
    "train": ("train_tok_per_s", "cpu_tok_per_s"),
    "decode": ("sent_per_s", "cpu_sent_per_s"),
}
MEASURES = {
    "train_tok_per_s": "training target tokens / s",
    "cpu_tok_per_s": "training target tokens / CPU-s",
    "sent_per_s": "decoding sentences / s",
    "cpu_sent_per_s": "decoding sentences / CPU-s",
}


def summarise(rounds: list[dict]) -> dict:
    """Per (task, layout): median, min and max of each speed; per task: the median of the per-round
    ratios simplified / standard, wall and CPU."""
    summary: dict = {"speeds": {}, "ratios": {}, "parameters": {}}
    for task, keys in SPEEDS.items():
        for layout in LAYOUTS:
            runs = [r[task][layout] for r in rounds]
            summary["speeds"][f"{task}/{layout}"] = {
                key: {
                    "median": statistics.median(x[key] for x in runs),
                    "min": min(x[key] for x in runs),
                    "max": max(x[key] for x in runs),
                }
                for key in keys
            }
            summary["parameters"][layout] = runs[0]["parameters"]
        for key in keys:
            per_round = [r[task]["simplified"][key] / r[task]["standard"][key] for r in rounds]
            summary["ratios"][MEASURES[key]] = {
                "median": statistics.median(per_round),
                "per_round": per_round,
            }
    summary["parameters"]["ratio"] = summary["parameters"]["simplified"] / summary["parameters"]["standard"]
    return summary


def markdown(summary: dict, rounds: list[dict], meta: dict) -> str:
    lines = [
        f"# Simplified against standard decoder: training and decoding speed ({meta['preset']} preset, "
        f"yang2020 settings, {meta['threads']} thread(s))",
        "",
        f"Measured {meta['date']} on {meta['machine']}, torch {meta['torch']}, {meta['rounds']} round(s), "
        f"layouts interleaved, first one alternated. Command: `{meta['command']}`.",
        f"Training: {meta['warm']} warm-up + {meta['measured']} measured updates of ~{meta['batch_tokens']} "
        f"target tokens. Decoding: {meta['n']} sentences, beam {meta['beam']}, batch {meta['batch']}, "
        f"fixed {meta['length']}-token outputs, untrained weights.",
        "",
        "| round | layout | train tok/s | train tok/CPU-s | decode sent/s | decode sent/CPU-s "
        "| peak RSS MB train / decode | load before train / decode | other processes' cores train / decode |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for index, record in enumerate(rounds, 1):
        for layout in LAYOUTS:
            t, d = record["train"][layout], record["decode"][layout]
            lines.append(
                f"| {index} | {layout} | {t['train_tok_per_s']:.0f} | {t['cpu_tok_per_s']:.0f} "
                f"| {d['sent_per_s']:.2f} | {d['cpu_sent_per_s']:.2f} "
                f"| {t['peak_rss_mb']:.0f} / {d['peak_rss_mb']:.0f} "
                f"| {t['load_before']:.2f} / {d['load_before']:.2f} "
                f"| {t['other_cores']:.2f} / {d['other_cores']:.2f} |"
            )
    params = summary["parameters"]
    lines += [
        "",
        "Simplified / standard (per-round ratios, median):",
        "",
        "| measure | ratio | per round |",
        "|---|---|---|",
    ]
    for name, ratio in summary["ratios"].items():
        per_round = ", ".join(f"{x:.3f}" for x in ratio["per_round"])
        lines.append(f"| {name} | **{ratio['median']:.3f}** | {per_round} |")
    lines += [
        f"| parameters | {params['ratio']:.3f} | {params['simplified']:,} / {params['standard']:,} |",
        "",
        f"Paper: {PAPER}, on GPUs at base size; a ratio of 1.11-1.14 matches it.",
        "",
        "Other processes' cores: machine-wide busy CPU minus the child's own, per second of its run; above "
        "~0.1 the machine was shared and the absolute figures are depressed (read the ratios).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", choices=TASKS, help=argparse.SUPPRESS)
    parser.add_argument("--layout", choices=LAYOUTS, help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--preset", default="small", help="model size (tiny, small, base, big)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warm", type=int, default=5, help="training updates before the measured ones")
    parser.add_argument("--measured", type=int, default=25, help="measured training updates")
    parser.add_argument("--batch-tokens", type=int, default=4000)
    parser.add_argument("--n", type=int, default=200, help="sentences to decode")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64, help="sentences per decoding batch")
    parser.add_argument("--length", type=int, default=30, help="fixed output length")
    parser.add_argument("--scratch", default=os.path.join(tempfile.gettempdir(), "nmtv-train-bench"))
    parser.add_argument("--out", default=str(RESULTS / "decoder_layouts"))
    args = parser.parse_args()
    if args.worker:
        result = (train_worker if args.worker == "train" else decode_worker)(args)
        print(json.dumps(result))
        return
    if args.warm < 1 or args.measured < 1 or args.rounds < 1:
        parser.error("--warm, --measured and --rounds must be positive")

    import torch

    from nmtvariants.fileio import atomic_write

    _, data = bench.prepare_data(Path(args.scratch))
    rounds = []
    for index in range(args.rounds):
        order = LAYOUTS if index % 2 == 0 else LAYOUTS[::-1]
        record: dict = {task: {} for task in TASKS}
        for task in TASKS:
            for layout in order:
                record[task][layout] = run(task, layout, args, data)
                speed = record[task][layout][SPEEDS[task][0]]
                print(f"round {index + 1} {task} {layout}: {speed:.2f}", file=sys.stderr, flush=True)
        rounds.append(record)
    summary = summarise(rounds)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()} {os.cpu_count()} CPUs",
        "torch": torch.__version__,
        "command": "python benchmarks/decoder_layouts.py " + " ".join(sys.argv[1:]),
        **{key: getattr(args, key) for key in ("preset", "rounds", "threads", "warm", "measured")},
        **{key: getattr(args, key) for key in ("batch_tokens", "n", "beam", "batch", "length")},
        "model": model_settings(args.preset),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(out.with_suffix(".json")) as handle:
        json.dump({"meta": meta, "summary": summary, "rounds": rounds}, handle, indent=2)
    with atomic_write(out.with_suffix(".md")) as handle:
        handle.write(markdown(summary, rounds, meta))
    print(markdown(summary, rounds, meta))


if __name__ == "__main__":
    main()
