"""Training speed of lexical shortcuts and feature-fusion (Emelin et al. 2019) against the baseline, in
one run (the paper's Table 5: 0.89 and 0.79 of the baseline's speed on P100 GPUs).

The three models are the same size preset (default ``small``: 3+3 layers, d 256, 4 heads, FFN 1024)
and differ only by ``variant.shortcuts``: none, ``{"kind": "lexical"}``, ``{"kind": "feature_fusion"}``
(the paper's main setting: shortcuts into every self-attention sub-layer of both stacks). They train on
the corpus of the training benchmark (``train_throughput.py``: the peers' synthetic 20k pairs, 8,000
types, renamed onto one joint vocabulary) with the same seed, so all three see the same batch stream:
the real Trainer, label smoothing 0.1, ~4,000 target tokens per batch, fp32 unless ``--amp``; real
target tokens per wall second and per CPU second over updates ``warm+1..warm+measured``, stamped after
every update (``train_throughput.summarize``).

Every measurement is its own child process (``train_throughput.run_child``: its own peak RSS, and the
CPU that *other* processes used meanwhile, because this machine is shared). Rounds interleave the three
models and rotate which goes first; the ratios variant / baseline are taken per round (same machine
conditions), then the median. Run on a quiet machine::

    PYTHONPATH=src .venv/bin/python benchmarks/shortcuts_speed.py --rounds 3

``--quick`` is a smoke run (1 round, 1 + 2 updates of ~1,000 tokens): it checks the machinery, its
figures mean nothing. Writes ``benchmarks/results/shortcuts_speed.json`` and ``.md``.
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
VARIANTS: dict[str, dict] = {
    "baseline": {},
    "lexical": {"shortcuts": {"kind": "lexical"}},
    "feature_fusion": {"shortcuts": {"kind": "feature_fusion"}},
}
PAPER = {"lexical": 0.89, "feature_fusion": 0.79}  # Table 5, training speed relative to the baseline
SPEEDS = {"train_tok_per_s": "training target tokens / s", "cpu_tok_per_s": "training target tokens / CPU-s"}


# ---------------------------------------------------------------------- worker (child process)
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
            "model": {"preset": args.preset},
            "variant": VARIANTS[args.variant],
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
                "amp": args.amp,
            },
        }
    )
    result = bench.timed_training(config, args.warm)
    result["threads"] = torch.get_num_threads()
    return result


# ---------------------------------------------------------------------- driver
def run(variant: str, args: argparse.Namespace, data: Path) -> dict:
    command = [sys.executable, __file__, "--worker", "--variant", variant, "--data", str(data)]
    for key in ("preset", "threads", "warm", "measured", "batch_tokens", "amp"):
        command += [f"--{key.replace('_', '-')}", str(getattr(args, key))]
    result = bench.run_child(command, bench.env_for(args.threads))
    result.update(variant=variant)
    return result


def summarise(rounds: list[dict[str, dict]]) -> dict:
    """Per variant: median, min and max of each speed; per shortcut variant and speed: the median of
    the per-round ratios variant / baseline, beside the paper's ratio."""
    summary: dict = {"speeds": {}, "ratios": {}, "parameters": {}}
    for variant in VARIANTS:
        runs = [record[variant] for record in rounds]
        summary["speeds"][variant] = {
            key: {
                "median": statistics.median(x[key] for x in runs),
                "min": min(x[key] for x in runs),
                "max": max(x[key] for x in runs),
            }
            for key in SPEEDS
        }
        summary["parameters"][variant] = runs[0]["parameters"]
    for variant in PAPER:
        per_speed = {}
        for key in SPEEDS:
            per_round = [record[variant][key] / record["baseline"][key] for record in rounds]
            per_speed[key] = {"median": statistics.median(per_round), "per_round": per_round}
        summary["ratios"][variant] = {**per_speed, "paper": PAPER[variant]}
    return summary


def markdown(summary: dict, rounds: list[dict], meta: dict) -> str:
    lines = [
        f"# Lexical shortcuts and feature-fusion against the baseline: training speed ({meta['preset']} "
        f"preset, {meta['threads']} thread(s), amp {meta['amp']})",
        "",
        f"Measured {meta['date']} on {meta['machine']}, torch {meta['torch']}, {meta['rounds']} round(s), "
        f"variants interleaved, first one rotated. Command: `{meta['command']}`.",
        f"{meta['warm']} warm-up + {meta['measured']} measured updates of ~{meta['batch_tokens']} target "
        "tokens, the same batch stream for the three models.",
        "",
        "| round | variant | tok/s | tok/CPU-s | peak RSS MB | load before | other processes' cores |",
        "|---|---|---|---|---|---|---|",
    ]
    for index, record in enumerate(rounds, 1):
        for variant in VARIANTS:
            r = record[variant]
            lines.append(
                f"| {index} | {variant} | {r['train_tok_per_s']:.0f} | {r['cpu_tok_per_s']:.0f} "
                f"| {r['peak_rss_mb']:.0f} | {r['load_before']:.2f} | {r['other_cores']:.2f} |"
            )
    params = summary["parameters"]
    lines += [
        "",
        "Relative to the baseline (per-round ratios, median):",
        "",
        "| variant | tok/s ratio | tok/CPU-s ratio | paper (P100) | per round (tok/s) | parameters |",
        "|---|---|---|---|---|---|",
    ]
    for variant, ratio in summary["ratios"].items():
        wall, cpu = ratio["train_tok_per_s"], ratio["cpu_tok_per_s"]
        per_round = ", ".join(f"{x:.3f}" for x in wall["per_round"])
        lines.append(
            f"| {variant} | **{wall['median']:.3f}** | {cpu['median']:.3f} | {ratio['paper']:.2f} "
            f"| {per_round} | {params[variant]:,} ({params[variant] / params['baseline']:.3f}x) |"
        )
    lines += [
        "",
        "The paper's target: no slower relative to the baseline than 0.89 (lexical) and 0.79 "
        "(feature-fusion). Other processes' cores: machine-wide busy CPU minus the child's own, per "
        "second of its run; above ~0.1 the machine was shared and the absolute figures are depressed "
        "(read the ratios).",
        "",
    ]
    if meta["quick"]:
        lines += ["**Smoke run (`--quick`): these figures check the machinery and mean nothing.**", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--variant", choices=tuple(VARIANTS), help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--preset", default="small", help="model size (tiny, small, base, big)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warm", type=int, default=5, help="training updates before the measured ones")
    parser.add_argument("--measured", type=int, default=25, help="measured training updates")
    parser.add_argument("--batch-tokens", type=int, default=4000)
    parser.add_argument("--amp", default="none", help="none or bf16 (autocast)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 round, 1 + 2 small updates")
    parser.add_argument("--scratch", default=os.path.join(tempfile.gettempdir(), "nmtv-train-bench"))
    parser.add_argument("--out", default=str(RESULTS / "shortcuts_speed"))
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(train_worker(args)))
        return
    if args.quick:
        args.rounds, args.warm, args.measured, args.batch_tokens = 1, 1, 2, 1000
    if args.warm < 1 or args.measured < 1 or args.rounds < 1:
        parser.error("--warm, --measured and --rounds must be positive")

    import torch

    from nmtvariants.fileio import atomic_write

    _, data = bench.prepare_data(Path(args.scratch))
    names = list(VARIANTS)
    rounds = []
    for index in range(args.rounds):
        order = names[index % len(names) :] + names[: index % len(names)]
        record: dict = {}
        for variant in order:
            record[variant] = run(variant, args, data)
            print(
                f"round {index + 1} {variant}: {record[variant]['train_tok_per_s']:.0f} tok/s",
                file=sys.stderr,
                flush=True,
            )
        rounds.append(record)
    summary = summarise(rounds)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()} {os.cpu_count()} CPUs",
        "torch": torch.__version__,
        "command": "python benchmarks/shortcuts_speed.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "variants": VARIANTS,
        **{key: getattr(args, key) for key in ("preset", "rounds", "threads", "warm", "measured")},
        **{key: getattr(args, key) for key in ("batch_tokens", "amp", "quick")},
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
