"""Where a toy training run's time goes, and the floor that sets for the demo's training.

The demo trains every toy system of the embedded config to its plateau (``config.yaml``: 18 runs of
1,600 updates). Whether its budget can be met by making the code faster or only by training less
depends on what an update costs: Python and dispatch between small operators (then fusing or
compiling helps), or the matrix products themselves (then only fewer or smaller products do). This
script answers that for every training run of a config, through the real Trainer:

* each run in its own process, one thread (as the demo trains them, two side by side), on the
  workflow's own data (``--workdir``: a folder where the workflow has prepared ``data/``);
* ``--warm`` updates first (the allocator and kernel caches settle), then ``--timed`` updates timed one
  by one without a profiler (the run's milliseconds per update: median), then ``--profiled`` updates
  under ``torch.profiler`` with FLOP counting: each operator's self time, grouped, and the FLOPs of the
  matrix products (``aten::mm``, ``addmm``, ``bmm``), so their achieved GFLOP/s;
* validation and checkpoints are moved past the end (their cost is not an update's).

The summary multiplies each run's milliseconds per update by the config's ``max_updates``: the
demo's training time if every job did nothing but update, which start-up, validation and checkpoints
only add to, and divides it by the two cores the demo has. Run on a quiet machine::

    PYTHONPATH=src .venv/bin/python benchmarks/toy_train_profile.py --workdir WORK

Writes ``benchmarks/results/toy_train_profile.json`` and ``.md`` (``--out`` to move them).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml
from result_files import write_record

from nmtvariants.hardware import cpu_model

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
SCHEMA = REPO / "schemas" / "config.schema.yaml"
MATMULS = ("aten::mm", "aten::addmm", "aten::bmm")
# operator groups of the profile table; the rest is "other operators"
GROUPS = {
    "matrix products": MATMULS,
    "attention kernels": (
        "aten::_scaled_dot_product_flash_attention_for_cpu",
        "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
        "aten::_softmax",
        "aten::_softmax_backward_data",
    ),
    "layer norm": ("aten::native_layer_norm", "aten::native_layer_norm_backward"),
    "optimiser (fused Adam, zeroing)": ("aten::_fused_adam_", "aten::zero_", "aten::fill_"),
    "copies and reshapes": ("aten::copy_", "aten::cat", "aten::index_select", "aten::gather"),
}


def demo_runs(configfile: Path) -> list[dict]:
    """Every training run of the config: its id, who uses it and its settings."""
    from nmtvariants.config import training_runs, with_defaults

    with open(configfile, encoding="utf-8") as handle:
        config = with_defaults(yaml.safe_load(handle), SCHEMA)
    return [
        {"id": run.id, "users": [f"{e}/{p}/{r}" for e, p, r in run.users], "settings": run.settings}
        for run in training_runs(config).values()
    ]


# --------------------------------------------------------------------------- worker (child process)
def worker(settings: dict, warm: int, timed: int, profiled: int) -> dict:
    """Train ``warm + timed + profiled`` updates of one run; time and profile as the module says."""
    import tempfile

    import torch
    from torch.profiler import ProfilerActivity, profile

    from nmtvariants.training.process import setup_process
    from nmtvariants.training.train_config import parse_run_config
    from nmtvariants.training.trainer import Trainer

    total = warm + timed + profiled
    train = {**settings["train"], "max_updates": total, "threads": 1, "progress": False}
    train.update(save_every=10 * total, valid_every=10 * total, tensorboard=False)
    config = parse_run_config({**settings, "train": train})
    info = setup_process(config.train)
    stamps: list[float] = []
    tokens: list[int] = []
    profiler = profile(activities=[ProfilerActivity.CPU], with_flops=True)
    with tempfile.TemporaryDirectory() as outdir:
        trainer = Trainer(config, outdir, info=info)
        update = trainer._train_update

        def stamped(group):
            done = len(stamps)
            if done == warm + timed:
                profiler.__enter__()
            result = update(group)
            stamps.append(time.perf_counter())
            tokens.append(result[2])
            if done + 1 == total:
                profiler.__exit__(None, None, None)
            return result

        trainer._train_update = stamped
        trainer.train()
        parameters = sum(p.numel() for p in trainer.model.parameters())
    window = stamps[warm - 1 : warm + timed]
    steps = [b - a for a, b in itertools.pairwise(window)]
    ops = [
        {
            "op": event.key,
            "calls": event.count,
            "self_s": event.self_cpu_time_total / 1e6,
            "flops": event.flops or 0,
        }
        for event in profiler.key_averages()
    ]
    ops.sort(key=lambda op: -op["self_s"])
    return {
        "parameters": parameters,
        "ms_per_update": 1000 * statistics.median(steps),
        "ms_per_update_all": [1000 * s for s in steps],
        "tgt_tokens_per_update": statistics.fmean(tokens[warm : warm + timed]),
        "profiled_updates": profiled,
        "profiled_wall_s": stamps[-1] - stamps[warm + timed - 1],
        "ops": ops[:60],
        "torch": torch.__version__,
    }


def blas_gflops(size: int = 2048, rounds: int = 3, repeats: int = 3) -> float:
    """fp32 GFLOP/s of a large square product on one thread, the best of ``rounds``: the most this
    BLAS does on the core, against which the toy runs' small products are read."""
    import torch

    torch.set_num_threads(1)
    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.mm(a, b)
    best = 0.0
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(repeats):
            torch.mm(a, b)
        best = max(best, 2 * size**3 * repeats / (time.perf_counter() - start) / 1e9)
    return best


# --------------------------------------------------------------------------- summary
def grouped(record: dict) -> dict[str, float]:
    """Operator self seconds per group (and the rest) of one profiled window."""
    seconds = {group: 0.0 for group in [*GROUPS, "other operators"]}
    for op in record["ops"]:
        group = next((g for g, names in GROUPS.items() if op["op"] in names), "other operators")
        seconds[group] += op["self_s"]
    return seconds


def matmul_gflops(record: dict) -> tuple[float, float]:
    """The matrix products' GFLOP per update and their achieved GFLOP/s (self time)."""
    flops = sum(op["flops"] for op in record["ops"] if op["op"] in MATMULS)
    seconds = sum(op["self_s"] for op in record["ops"] if op["op"] in MATMULS)
    return flops / 1e9 / record["profiled_updates"], flops / 1e9 / seconds if seconds else 0.0


def markdown(result: dict) -> str:
    meta, runs = result["meta"], result["runs"]
    lines = [
        "# Where a toy training update's time goes (benchmarks/toy_train_profile.py)",
        "",
        f"Measured {meta['date']} on {meta['cpu']}, {meta['cores']} cores, torch {meta['torch']}; every "
        f"training run of `{meta['config']}` in its own process, 1 thread, one after the other; "
        f"{meta['warm']} warm-up updates, {meta['timed']} timed (median ms per update), {meta['profiled']} "
        f"under torch.profiler with FLOP counting. What else ran: {meta['beside']}. "
        f"Command: `{meta['command']}`.",
        "",
        "| run | used as | parameters | tgt tokens / update | ms / update | matrix products | attention "
        "kernels | other operators | matmul GFLOP / update | matmul GFLOP/s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        record = run["record"]
        seconds = grouped(record)
        total = sum(seconds.values())
        rest = total - seconds["matrix products"] - seconds["attention kernels"]
        per_update, rate = matmul_gflops(record)
        lines.append(
            f"| {run['id']} | {', '.join(run['users'])} | {record['parameters']:,} | "
            f"{record['tgt_tokens_per_update']:.0f} | {record['ms_per_update']:.1f} | "
            f"{seconds['matrix products'] / total:.0%} | {seconds['attention kernels'] / total:.0%} | "
            f"{rest / total:.0%} | {per_update:.2f} | {rate:.1f} |"
        )
    floor = result["floor"]
    lines += [
        "",
        "Shares: of the operators' self time in the profiled window. *Other operators* are layer norm, "
        "the optimiser, copies, element-wise and loss kernels; the time between operators (Python, "
        "dispatch) is the profiled wall time minus all operator self time: "
        f"{floor['between_ops_share']:.0%} over all runs.",
        "",
        f"**The demo's updates alone:** {floor['update_s']:,.0f} s of one core over the {len(runs)} "
        f"runs (each run's ms per update x its {floor['max_updates_note']} updates), "
        f"{floor['update_s'] / 60 / meta['cores']:.1f} min on {meta['cores']} cores; "
        f"{floor['matmul_s']:,.0f} s of it in matrix products at the measured GFLOP/s; at this core's "
        f"large-matrix rate ({meta['blas_gflops']:.0f} GFLOP/s: 2048 x 2048 fp32 products, 1 thread, "
        "best of 3) "
        f"they would take {floor['matmul_gflop'] / meta['blas_gflops']:,.0f} s. Start-up, validation, "
        "checkpoints and the two runs sharing the machine's memory add to it.",
        "",
    ]
    return "\n".join(lines)


def floor_of(runs: list[dict]) -> dict:
    update_s = matmul_s = matmul_gflop = between = profiled_wall = 0.0
    counts = set()
    for run in runs:
        record, updates = run["record"], run["settings"]["train"]["max_updates"]
        counts.add(updates)
        update_s += record["ms_per_update"] / 1000 * updates
        seconds = grouped(record)
        total = sum(seconds.values())
        matmul_s += record["ms_per_update"] / 1000 * updates * seconds["matrix products"] / total
        matmul_gflop += matmul_gflops(record)[0] * updates
        between += record["profiled_wall_s"] - total
        profiled_wall += record["profiled_wall_s"]
    return {
        "update_s": update_s,
        "matmul_s": matmul_s,
        "matmul_gflop": matmul_gflop,
        "between_ops_share": between / profiled_wall if profiled_wall else 0.0,
        "max_updates_note": " / ".join(f"{n:,}" for n in sorted(counts)),
    }


# --------------------------------------------------------------------------- driver
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # a JSON file: the run's settings
    parser.add_argument("--workdir", type=Path, help="a workflow folder whose data/ the config's runs read")
    parser.add_argument("--configfile", type=Path, default=REPO / "config.yaml")
    parser.add_argument("--runs", nargs="*", help="only these run ids (default: every run)")
    parser.add_argument("--warm", type=int, default=100)
    parser.add_argument("--timed", type=int, default=100)
    parser.add_argument("--profiled", type=int, default=30)
    parser.add_argument("--beside", default="nothing else (quiet machine)", help="what else ran")
    parser.add_argument("--date", default=time.strftime("%Y-%m-%d"))
    parser.add_argument("--out", type=Path, default=RESULTS / "toy_train_profile")
    args = parser.parse_args(argv)
    if args.worker:
        settings = json.loads(Path(args.worker).read_text(encoding="utf-8"))
        print(json.dumps(worker(settings, args.warm, args.timed, args.profiled)))
        return
    if args.workdir is None or not (args.workdir / "data").is_dir():
        parser.error("--workdir: a workflow folder with data/ (run the workflow there first)")
    runs = [run for run in demo_runs(args.configfile) if not args.runs or run["id"] in args.runs]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    for number, run in enumerate(runs, 1):
        settings_file = args.out.with_name(f"{args.out.name}.{run['id']}.settings.json")
        settings_file.write_text(json.dumps(run["settings"]), encoding="utf-8")
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", str(settings_file.resolve())]
        command += ["--warm", str(args.warm), "--timed", str(args.timed), "--profiled", str(args.profiled)]
        done = subprocess.run(command, cwd=args.workdir, env=env, capture_output=True, text=True)
        settings_file.unlink()
        if done.returncode:
            sys.exit(f"run {run['id']} failed:\n{done.stderr[-2000:]}")
        run["record"] = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{number}/{len(runs)} {run['id']} {', '.join(run['users'])}: "
              f"{run['record']['ms_per_update']:.1f} ms/update", flush=True)  # fmt: skip
    meta = {
        "date": args.date,
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "torch": runs[0]["record"]["torch"] if runs else "",
        "config": os.path.relpath(args.configfile, REPO),
        "warm": args.warm,
        "timed": args.timed,
        "profiled": args.profiled,
        "beside": args.beside,
        "blas_gflops": blas_gflops(),
        "command": "python benchmarks/toy_train_profile.py --workdir WORK"
        + (f" --runs {' '.join(args.runs)}" if args.runs else ""),
    }
    result = {"meta": meta, "runs": runs, "floor": floor_of(runs)}
    write_record(args.out.parent, args.out.name, result, markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
