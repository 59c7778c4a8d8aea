"""Do the lexical probes (Emelin et al. 2019, §5) reach their plateau at the demo's scale? Per layer and
learning rate: the best epoch, the dev accuracy every few epochs and the test accuracy.

The authors train each probe with Adam at 2e-4 on batches of 512 token states from 100 batches of
their training corpus (millions of states: thousands of updates an epoch). The demo's probes see the
states of 300 toy sentences, ~3,500 a side: 7 updates an epoch, 210 in its 30 epochs. This trains the
probes of one states sample (``nmtvariants extract-states`` of a demo model, the train, dev and test
parts the workflow's ``emelin2019_layer_probes`` reads) at each ``--lr``, every other setting as the
workflow's (``MLPProbeConfig`` defaults, the toy cap of 30 epochs, patience 5), one thread.

    PYTHONPATH=src python benchmarks/probe_convergence.py --states-dir DIR --lr 2e-4 2e-3 \\
        [--max-epochs 30] [--out benchmarks/results/probe_convergence]

``DIR`` holds ``states-train.npz``, ``states-valid.npz`` and ``states-test.npz``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from nmtvariants.analysis.layer_probes import kept_sentences, stack_names, token_set
from nmtvariants.analysis.mlp_probe import MLPProbeConfig, train_mlp_probe
from nmtvariants.analysis.states import read_state_file
from nmtvariants.fileio import atomic_write
from nmtvariants.hardware import hardware_info

PARTS = ("train", "valid", "test")
MAX_SENTENCES = 300  # the toy cap (studies/emelin2019/plan.py, CAPS["toy"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states-dir", type=Path, required=True)
    parser.add_argument("--lr", type=float, nargs="+", required=True)
    parser.add_argument(
        "--hidden", type=int, nargs="+", default=[512], help="hidden units (the authors': 512)"
    )
    parser.add_argument("--max-epochs", type=int, default=30)
    parser.add_argument("--date", default=time.strftime("%Y-%m-%d", time.gmtime()))
    parser.add_argument("--note", default="", help="where the states came from (a sentence)")
    parser.add_argument("--out", default="benchmarks/results/probe_convergence")
    args = parser.parse_args()
    torch.set_num_threads(1)
    files = {part: read_state_file(args.states_dir / f"states-{part}.npz") for part in PARTS}
    kept = {part: kept_sentences(file, MAX_SENTENCES, None) for part, file in files.items()}
    rows = []
    for lr, hidden in [(lr, hidden) for lr in args.lr for hidden in args.hidden]:
        config = MLPProbeConfig(max_epochs=args.max_epochs, lr=lr, hidden=hidden)
        for side in ("encoder", "decoder"):
            for name in stack_names(files["train"], side):
                start = time.process_time()
                sets = [token_set(files[part].load(name), kept[part]) for part in PARTS]
                result = train_mlp_probe(*sets, files["train"].vocab_size, config)
                rows.append({
                    "lr": lr,
                    "hidden": hidden,
                    "layer": name,
                    "best_epoch": result["best_epoch"],
                    "epochs": result["epochs"],
                    "valid_accuracy": [round(h["valid_accuracy"], 4) for h in result["history"]],
                    "test_accuracy": result["test"]["accuracy"],
                    "train_tokens": result["tokens"]["train"],
                    "cpu_s": time.process_time() - start,
                })  # fmt: skip
                print(
                    f"lr {lr} hidden {hidden} {name}: best epoch {result['best_epoch']}, "
                    f"test {rows[-1]['test_accuracy']:.4f}"
                )
    record = {
        "command": "python benchmarks/probe_convergence.py --states-dir DIR --lr "
        f"{' '.join(map(str, args.lr))} --hidden {' '.join(map(str, args.hidden))}"
        f" --max-epochs {args.max_epochs}",
        "date": args.date,
        "cpu": hardware_info()["cpu"],
        "note": args.note,
        "rows": rows,
    }
    with atomic_write(Path(f"{args.out}.json")) as out:
        out.write(json.dumps(record, indent=1) + "\n")
    lines = [
        "# The lexical probes at the demo's scale: where each learning rate gets in 30 epochs",
        "",
        f"`{record['command']}` on {args.date}: {record['cpu']}, one thread. {args.note}",
        "",
        "| lr | hidden | layer | best epoch (of the epochs run) | dev accuracy at epochs 1, 5, 10, 20, last "
        "| test accuracy | CPU s |",
        "|---:|---:|---|---:|---|---:|---:|",
    ]
    for row in rows:
        curve = row["valid_accuracy"]
        marks = " / ".join(f"{curve[i - 1]:.3f}" for i in (1, 5, 10, 20) if i <= len(curve))
        lines.append(
            f"| {row['lr']:g} | {row['hidden']} | {row['layer']} | {row['best_epoch']} ({row['epochs']}) "
            f"| {marks} / {curve[-1]:.3f} | {row['test_accuracy']:.4f} | {row['cpu_s']:.1f} |"
        )
    with atomic_write(Path(f"{args.out}.md")) as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
