"""What rounding batch widths up to a multiple of 8 costs fp32 training on CPU: padding and update time.

``data/batching.py`` rounds every batch's source and target width up to a multiple of
``WIDTH_MULTIPLE`` where kernels are built per shape (oneDNN in bf16, CUDA); fp32 on CPU now pads to
the longest sentence only (``width_multiple``). This compares the two on the toy baseline of the demo
(``config.yaml``'s ``baseline`` run, seed 1234, the data a finished ``make demo`` built): the share of
padding positions over the first ``--batches`` training batches, and the seconds per update over
``--updates`` updates after ``--warmup`` (each arm from the same initial weights and batches, one
thread, in fresh processes, the arms interleaved round by round). The loss at the last update shows
that the two are the same computation up to the order of floating-point additions.

    PYTHONPATH=src python benchmarks/batch_width.py --data-root WORK [--rounds 3] \\
        [--out benchmarks/results/batch_width]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from nmtvariants.config import run_settings, with_defaults
from nmtvariants.fileio import atomic_write
from nmtvariants.hardware import hardware_info

REPO = Path(__file__).resolve().parents[1]
ARMS = {"multiple 8 (before)": 8, "exact (fp32 CPU now)": 1}


def measure(
    settings: dict[str, Any], multiple: int, batches: int, warmup: int, updates: int
) -> dict[str, Any]:
    """One arm in this process: padding shares, seconds per update and the last update's loss."""
    import torch

    import nmtvariants.training.trainer as trainer_module
    from nmtvariants.data.batching import BatchStream, UpdateStream, collate
    from nmtvariants.training.process import setup_process
    from nmtvariants.training.train_config import load_run_config

    config = load_run_config(None, json.dumps(settings))
    config.train.threads, config.train.progress, config.train.tensorboard = 1, False, False
    info = setup_process(config.train)
    with tempfile.TemporaryDirectory() as outdir:
        trainer = trainer_module.Trainer(config, outdir, None, info)
        trainer.width_multiple = multiple
        cfg = config.train
        stream = BatchStream(trainer.train_data, cfg.batch_tokens, cfg.seed, cfg.maxi_batch, cfg.max_epochs)
        positions = {"src": [0, 0], "tgt": [0, 0]}  # padded, real
        for _ in range(batches):
            batch = collate(trainer.train_data, stream.next(), multiple)
            for side, tensor in (("src", batch.src), ("tgt", batch.tgt_out)):
                positions[side][0] += tensor.numel()
                positions[side][1] += int((tensor != 0).sum())
        groups = UpdateStream(BatchStream(trainer.train_data, cfg.batch_tokens, cfg.seed, cfg.maxi_batch))
        trainer.loss_module.train()
        for _ in range(warmup):
            trainer._train_update(groups.next_update())
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(updates):
            loss, _, tokens, _ = trainer._train_update(groups.next_update())
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {
        "padding_src": 1 - positions["src"][1] / positions["src"][0],
        "padding_tgt": 1 - positions["tgt"][1] / positions["tgt"][0],
        "ms_per_update": 1000 * wall / updates,
        "cpu_ms_per_update": 1000 * cpu / updates,
        "last_loss_per_token": float(loss) / tokens,
        "torch_threads": torch.get_num_threads(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, help="a work folder where the workflow built data/toyworld")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--updates", type=int, default=100)
    parser.add_argument("--out", default="benchmarks/results/batch_width")
    parser.add_argument("--arm", type=int, help=argparse.SUPPRESS)  # one arm, in a child process
    args = parser.parse_args()
    config = with_defaults(
        yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8")),
        REPO / "schemas" / "config.schema.yaml",
    )
    settings = run_settings(config, "baseline", "en-de", "baseline", 1234)
    if args.arm is not None:
        print(json.dumps(measure(settings, args.arm, args.batches, args.warmup, args.updates)))
        return
    samples: dict[str, list[dict[str, Any]]] = {arm: [] for arm in ARMS}
    for _ in range(args.rounds):
        for arm, multiple in ARMS.items():
            child = [sys.executable, __file__, "--arm", str(multiple), "--batches", str(args.batches)]
            child += ["--warmup", str(args.warmup), "--updates", str(args.updates)]
            env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO / "src")}
            done = subprocess.run(
                child, cwd=args.data_root, env=env, capture_output=True, text=True, check=True
            )
            samples[arm].append(json.loads(done.stdout.strip().splitlines()[-1]))
    rows = {
        arm: {
            "padding_src": runs[0]["padding_src"],
            "padding_tgt": runs[0]["padding_tgt"],
            "ms_per_update": statistics.median(run["ms_per_update"] for run in runs),
            "ms_per_update_all": [round(run["ms_per_update"], 1) for run in runs],
            "last_loss_per_token": runs[0]["last_loss_per_token"],
        }
        for arm, runs in samples.items()
    }
    before, after = (rows[arm] for arm in ARMS)
    record = {
        "command": "python benchmarks/batch_width.py --data-root WORK --rounds " + str(args.rounds),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "cpu": hardware_info()["cpu"],
        "rounds": args.rounds,
        "rows": rows,
        "update_time_ratio": before["ms_per_update"] / after["ms_per_update"],
    }
    with atomic_write(Path(f"{args.out}.json")) as out:
        out.write(json.dumps(record, indent=2) + "\n")
    lines = [
        "# Batch widths rounded to a multiple of 8 against exact widths: fp32 training on CPU",
        "",
        f"`{record['command']}` on {record['date']}: {record['cpu']}; the demo's toy baseline (seed "
        f"1234, 1,024 target tokens a batch), one thread, {args.rounds} fresh processes per arm, "
        f"interleaved; padding over the first {args.batches} batches, update time over {args.updates} "
        f"updates after {args.warmup} (WORK: a folder where `make demo` ran).",
        "",
        "| widths | source padding | target padding | ms per update (median) | per round | loss per token, "
        f"update {args.warmup + args.updates} |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for arm, row in rows.items():
        lines.append(
            f"| {arm} | {row['padding_src']:.1%} | {row['padding_tgt']:.1%} | {row['ms_per_update']:.1f} "
            f"| {' / '.join(map(str, row['ms_per_update_all']))} | {row['last_loss_per_token']:.5f} |"
        )
    lines += ["", f"Update time, rounded / exact: **{record['update_time_ratio']:.2f}x**."]
    with atomic_write(Path(f"{args.out}.md")) as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
