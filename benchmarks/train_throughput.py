"""Training throughput (real target tokens/s) and peak RSS on 2 CPU threads, side by side with the
plain-PyTorch floor of the peer benchmark (``shared/peers/ref_torch.py``) in the same run.

Setting (the peers' config, see ``shared/peers/README.md``): the synthetic corpus of
``peers/make_data.py`` (20k pairs, 5-30 tokens, 8,000 Zipf types a side), Transformer 3+3 layers,
d 256, 4 heads, FFN 1024, pre-norm, dropout 0.1, label smoothing 0.1, Adam (0.9, 0.98, 1e-9),
warm-up 1,000 updates to 5e-4, ~4,000 target tokens per batch, fp32; throughput = real target
tokens / wall time over updates 6-30 (5 warm-up), stamped in-process after every update;
peak RSS = the child process's ``ru_maxrss``.

Vocabulary: our model has one joint vocabulary; the peers use separate source and target
vocabularies of ~8,000 types. Because the corpus is synthetic with disjoint symbol sets
(``s123`` / ``t123``), both sides are renamed onto one symbol set (``w123``) for our run, so our
joint vocabulary has the peers' ~8,000 types and the embedding and output-projection work is
the same as theirs (a joint vocabulary of both sets would double the output layer).

Rounds alternate the order (ours first, then the reference first, ...); each round records the
load average and the CPU that *other* processes used during each run (machine-wide busy time
minus our child's), because this machine is shared: rounds with other processes above ~0.1
core are flagged. Run::

    PYTHONPATH=src .venv/bin/python benchmarks/train_throughput.py --rounds 3
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

REPO = Path(__file__).resolve().parents[1]
PEERS = Path(os.environ.get("NMTV_PEERS", REPO.parent / "shared" / "peers"))
RESULTS = REPO / "benchmarks" / "results"
WARM = int(os.environ.get("NMTV_BENCH_WARM", 5))  # the peers' window; smaller only for smoke runs
MEAS = int(os.environ.get("NMTV_BENCH_MEAS", 25))


# ---------------------------------------------------------------------- measurement helpers
def busy_seconds() -> float:
    """Machine-wide busy CPU seconds (all cores) from /proc/stat."""
    with open("/proc/stat") as handle:
        fields = handle.readline().split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def run_child(command: list[str], env: dict[str, str]) -> dict:
    """Run a child; return its last JSON line, its peak RSS and CPU time (from ``wait4``), and the
    CPU that other processes used meanwhile (machine-wide busy time minus the child's)."""
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        busy0, wall0 = busy_seconds(), time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(process.pid, 0)  # reap it ourselves to get its own rusage
        busy1, wall1 = busy_seconds(), time.perf_counter()
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if process.returncode != 0:
        raise RuntimeError(f"{command[:3]} failed:\n{stderr[-3000:]}")
    result: dict = {}
    for line in stdout.splitlines():  # ref_torch's record, then the wrapper's CPU stamps
        if line.startswith("{"):
            result.update(json.loads(line))
    child_cpu = usage.ru_utime + usage.ru_stime
    wall = wall1 - wall0
    result.update(
        load_before=load_before,
        load_after=os.getloadavg()[0],
        wall_s=wall,
        child_cpu_s=child_cpu,
        peak_rss_mb=usage.ru_maxrss / 1024,
        other_cores=max(0.0, (busy1 - busy0 - child_cpu) / wall),
    )
    return result


def summarize(stamps: list[float], tokens: list[int], skip: int) -> dict:
    """Same window as ref_torch.summarize: updates skip+1..end, stamps[k] = time after update k."""
    n = len(stamps) - 1
    tok = sum(tokens[skip + 1 :])
    seconds = stamps[n] - stamps[skip]
    return {
        "updates_measured": n - skip,
        "tgt_tokens": tok,
        "seconds": seconds,
        "train_tok_per_s": tok / seconds,
        "tok_per_update": tok / (n - skip),
    }


# ---------------------------------------------------------------------- data
def prepare_data(root: Path) -> tuple[Path, Path]:
    """The peers' corpus (their generator, their seed) and our renamed joint-symbol copy."""
    peers_data = root / "data"
    if not (peers_data / "train.trg").exists():
        subprocess.run(
            [sys.executable, str(PEERS / "make_data.py"), "--out", str(peers_data)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    ours = root / "joint"
    if not (ours / "vocab.txt").exists():
        ours.mkdir(parents=True, exist_ok=True)
        for split in ("train", "valid"):
            for side, prefix in (("src", "s"), ("trg", "t")):
                lines = (peers_data / f"{split}.{side}").read_text().splitlines()
                renamed = [" ".join("w" + token[len(prefix) :] for token in line.split()) for line in lines]
                (ours / f"{split}.{side}").write_text("\n".join(renamed) + "\n")
        sys.path.insert(0, str(REPO / "src"))
        from nmtvariants.data.vocab import Vocabulary
        from nmtvariants.fileio import read_lines

        lines = [*read_lines(ours / "train.src"), *read_lines(ours / "train.trg")]
        Vocabulary.build(lines).save(ours / "vocab.txt")
    return peers_data, ours


# ---------------------------------------------------------------------- our worker (child process)
def train_settings(updates: int, batch_tokens: int, threads: int, **extra: object) -> dict:
    """The training benchmarks' settings: the peers' schedule and label smoothing, and no checkpoint,
    validation or log inside the measured window (``extra``: compile, amp, maxi_batch)."""
    return {
        "max_updates": updates,
        "batch_tokens": batch_tokens,
        "lr_peak": 5e-4,
        "warmup": 1000,
        "label_smoothing": 0.1,
        "save_every": 10_000,
        "valid_every": 10_000,
        "log_every": 10_000,
        "seed": 1,
        "threads": threads,
        "progress": False,
        "tensorboard": False,
        **extra,
    }


def timed_training(config, warm: int) -> dict:
    """Train with the real Trainer, stamping wall and CPU time after every update; ``summarize`` over
    the updates after ``warm``, plus CPU tokens/s and the parameter count. Shared by the training
    benchmarks (this one and variant_speed.py) so that they measure alike."""
    from nmtvariants.training.process import setup_process
    from nmtvariants.training.trainer import Trainer

    info = setup_process(config.train)  # threads, allocator, kernel caches: as the train command does
    with tempfile.TemporaryDirectory() as outdir:
        trainer = Trainer(config, outdir, info=info)
        stamps, cpu, tokens = [time.perf_counter()], [time.process_time()], [0]
        original = trainer._train_update

        def timed(group):
            result = original(group)
            stamps.append(time.perf_counter())
            cpu.append(time.process_time())
            tokens.append(result[2])
            return result

        trainer._train_update = timed
        trainer.train()
        parameters = sum(p.numel() for p in trainer.model.parameters())
    result = summarize(stamps, tokens, warm)
    result["cpu_tok_per_s"] = result["tgt_tokens"] / (cpu[-1] - cpu[warm])  # cpu[k]: after update k
    result["parameters"] = parameters
    return result


def worker(args: argparse.Namespace) -> None:
    """Train WARM+MEAS updates with the real Trainer; stamp after every update."""
    import resource

    from nmtvariants.mkl_dispatch import use_fast_mkl_kernels

    use_fast_mkl_kernels()  # as `nmtvariants train` does, before torch
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
            "model": {"preset": "small"},
            "variant": {},
            "train": train_settings(
                WARM + MEAS,
                args.batch_tokens,
                args.threads,
                maxi_batch=args.maxi_batch,
                compile=args.compile,
                amp=args.amp,
            ),
        }
    )
    result = timed_training(config, WARM)
    result.update(
        tool="nmtvariants",
        torch=torch.__version__,
        threads=torch.get_num_threads(),
        self_peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    )
    print(json.dumps(result))


# ---------------------------------------------------------------------- reference wrapper (child process)
def ref_wrapper(_args: None, rest: list[str]) -> None:
    """Run ref_torch.py unchanged, with a global optimizer-step hook stamping process CPU time
    after every update (as peers/peer_train.py does for the toolkits), for CPU-time throughput."""
    import runpy

    cpu: list[float] = []
    from torch.optim.optimizer import register_optimizer_step_post_hook

    register_optimizer_step_post_hook(lambda *_: cpu.append(time.process_time()))
    sys.argv = [str(PEERS / "ref_torch.py"), *rest]
    runpy.run_path(sys.argv[0], run_name="__main__")
    print(json.dumps({"cpu_stamps": cpu}))


# ---------------------------------------------------------------------- driver
def env_for(threads: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        OMP_NUM_THREADS=str(threads),
        MKL_NUM_THREADS=str(threads),
        PYTHONWARNINGS="ignore",
        PYTHONPATH=str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", ""),
    )
    return env


def run_ours(args, joint: Path) -> dict:
    command = [
        sys.executable,
        __file__,
        "--worker",
        "--data",
        str(joint),
        "--threads",
        str(args.threads),
        "--batch-tokens",
        str(args.batch_tokens),
        "--maxi-batch",
        str(args.maxi_batch),
        "--amp",
        args.amp,
    ]
    if args.compile:
        command.append("--compile")
    return run_child(command, env_for(args.threads))


def run_reference(args, peers_data: Path, scratch: Path) -> dict:
    # ref_torch prints its result record as the last JSON line of stdout (and writes it to --json)
    command = [
        sys.executable,
        __file__,
        "--ref-wrapper",
        "train",
        "--data",
        str(peers_data),
        "--updates",
        str(WARM + MEAS),
        "--skip",
        str(WARM),
        "--threads",
        str(args.threads),
        "--json",
        str(scratch / "ref.json"),
    ]
    result = run_child(command, env_for(args.threads))
    cpu = result.pop("cpu_stamps")  # cpu[k - 1]: after update k; the window is updates WARM+1..end
    result["cpu_tok_per_s"] = result["tgt_tokens"] / (cpu[-1] - cpu[WARM - 1])
    return result


def prepare_opennmt(args, peers_data: Path, scratch: Path) -> Path:
    """OpenNMT-py's config from the peers' template (their settings, ~4,000 target tokens a batch)
    and its vocabularies, built once under ``scratch``; returns the config."""
    work = scratch / "opennmt"
    work.mkdir(parents=True, exist_ok=True)
    fill = {"@W@": str(scratch), "@D@": str(peers_data), "@UPD@": str(WARM + MEAS), "@BS@": "4000"}
    text = (PEERS / "opennmt.yaml.in").read_text()
    for key, value in fill.items():
        text = text.replace(key, value)
    config = work / "train.yaml"
    config.write_text(text)
    if not (work / "vocab.trg").exists():
        build = "from onmt.bin.build_vocab import main; main()"
        subprocess.run(
            [sys.executable, "-c", build, "-config", str(config), "-n_sample", "-1"],
            env=opennmt_env(args),
            check=True,
            capture_output=True,
        )
    return config


def opennmt_env(args) -> dict[str, str]:
    """Our interpreter and torch, with OpenNMT-py's installed tree (``--opennmt``) on the path."""
    env = env_for(args.threads)
    env["PYTHONPATH"] = args.opennmt
    env["PEER_THREADS"] = str(args.threads)
    return env


def run_opennmt(args, config: Path, scratch: Path) -> dict:
    """OpenNMT-py's own training entry point under the peers' probes (``peers/peer_train.py``)."""
    for old in config.parent.glob("model_step_*.pt"):
        old.unlink()
    record = scratch / "opennmt" / "result.json"
    command = [sys.executable, str(PEERS / "peer_train.py"), "opennmt", str(record), str(WARM), "--"]
    result = run_child([*command, "-config", str(config)], opennmt_env(args))
    result.update(json.loads(record.read_text()))
    return result


def round_ratios(record: dict) -> None:
    """Our tok/s over each peer's of the same round, and over the fastest peer of the round."""
    ours = record["ours"]["train_tok_per_s"]
    peers = [name for name in PEER_NAMES if name in record]
    for name in peers:
        record[f"ratio_to_{name}"] = ours / record[name]["train_tok_per_s"]
    fastest = max(peers, key=lambda name: record[name]["train_tok_per_s"])
    record["fastest_peer"] = fastest
    record["ratio_to_fastest_peer"] = ours / record[fastest]["train_tok_per_s"]
    record["cpu_ratio"] = record["ours"]["cpu_tok_per_s"] / record["ref"]["cpu_tok_per_s"]


PEER_NAMES = ("ref", "opennmt")
PEER_LABELS = {"ref": "plain PyTorch", "opennmt": "OpenNMT-py"}


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--ref-wrapper":
        ref_wrapper(None, sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--data")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-tokens", type=int, default=4000)
    parser.add_argument(
        "--maxi-batch", type=int, default=0, help="0: sort the whole corpus, as ref_torch does"
    )
    parser.add_argument("--amp", default="none")
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--scratch", default=os.path.join(tempfile.gettempdir(), "nmtv-train-bench"))
    parser.add_argument("--only-ours", action="store_true", help="skip the reference (profiling)")
    parser.add_argument(
        "--opennmt",
        help="an installed OpenNMT-py tree (pip install --target, see benchmarks/README.md): "
        "train it in the same rounds, on our interpreter and torch",
    )
    parser.add_argument("--out", default=str(RESULTS / "train_throughput"))
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    scratch = Path(args.scratch)
    peers_data, joint = prepare_data(scratch)
    contestants = ["ours"] if args.only_ours else ["ours", "ref"] + (["opennmt"] if args.opennmt else [])
    opennmt_config = prepare_opennmt(args, peers_data, scratch) if "opennmt" in contestants else None
    rounds = []
    for index in range(args.rounds):
        shift = index % len(contestants)
        record: dict = {"order": contestants[shift:] + contestants[:shift]}
        for name in record["order"]:
            if name == "ours":
                record[name] = run_ours(args, joint)
            elif name == "ref":
                record[name] = run_reference(args, peers_data, scratch)
            else:
                record[name] = run_opennmt(args, opennmt_config, scratch)
            print(
                f"round {index + 1} {name}: {record[name]['train_tok_per_s']:.0f} tok/s, "
                f"{record[name]['tok_per_update']:.0f} tok/update, load {record[name]['load_before']:.2f}",
                file=sys.stderr,
                flush=True,
            )
        if not args.only_ours:
            round_ratios(record)
        rounds.append(record)
    if args.only_ours:
        return
    write_results(args, rounds, Path(args.out))


def write_results(args, rounds: list[dict], out: Path) -> None:
    import torch

    sys.path.insert(0, str(REPO / "src"))
    from nmtvariants.fileio import atomic_write
    from nmtvariants.hardware import benchmark_machine

    summary = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": benchmark_machine(),
        "setting": {
            "threads": args.threads,
            "batch_tokens": args.batch_tokens,
            "maxi_batch": args.maxi_batch,
            "amp": args.amp,
            "compile": args.compile,
            "warmup_updates": WARM,
            "measured_updates": MEAS,
            "torch": torch.__version__,
            "cpu_count": os.cpu_count(),
        },
        "rounds": rounds,
        "median": summarize_rounds(rounds),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(out.with_suffix(".json")) as handle:
        json.dump(summary, handle, indent=2)
    lines = report_lines(args, summary)
    with atomic_write(out.with_suffix(".md")) as handle:
        handle.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def summarize_rounds(rounds: list[dict]) -> dict:
    """Medians over the rounds: every contestant's figures and our per-round ratios."""
    names = [name for name in ("ours", *PEER_NAMES) if name in rounds[0]]
    med: dict = {}
    for name in names:
        for key in FIGURES:
            med[f"{name}_{key}"] = median([r[name].get(key) for r in rounds])
    for key in [f"ratio_to_{name}" for name in names[1:]] + ["ratio_to_fastest_peer", "cpu_ratio"]:
        med[key] = median([r[key] for r in rounds])
    med["load_before"] = median([r[name]["load_before"] for r in rounds for name in names])
    if "opennmt" not in names:
        # OpenNMT-py not run: its ratio to plain PyTorch when the peers were measured (2,166 against
        # 2,056 tok/s, peers/README.md) puts our same-run ratio to the reference on its scale
        med["ratio_to_fastest_peer_via_ref"] = med["ratio_to_ref"] * 2056 / 2166
    return med


FIGURES = ("train_tok_per_s", "cpu_tok_per_s", "tok_per_update", "peak_rss_mb", "other_cores")


def flat_round(record: dict, names: list[str]) -> dict:
    """A round's figures keyed as :func:`summarize_rounds` keys the medians (``ours_train_tok_per_s``)."""
    flat = {f"{name}_{key}": record[name].get(key) for name in names for key in FIGURES}
    flat.update((key, value) for key, value in record.items() if key.startswith("ratio_to_"))
    flat["cpu_ratio"] = record["cpu_ratio"]
    return flat


def table_row(cells: list[str], figures: dict, peers: list[str], bold: bool) -> str:
    """One row of the report's table: a round's figures, or the medians (in bold)."""
    names = ["ours", *peers]

    def strong(text: str) -> str:
        return f"**{text}**" if bold else text

    def joined(key: str, spec: str) -> str:
        return " / ".join(format(figures[f"{name}_{key}"], spec) for name in names)

    cells = [
        *cells,
        *(strong(f"{figures[f'{name}_train_tok_per_s']:.0f}") for name in names),
        *(strong(f"{figures[f'ratio_to_{name}']:.2f}") for name in peers),
        strong(f"{figures['ratio_to_fastest_peer']:.2f}"),
        f"{figures['ours_cpu_tok_per_s']:.0f} / {figures['ref_cpu_tok_per_s']:.0f} "
        f"({figures['cpu_ratio']:.2f})",
        joined("tok_per_update", ".0f"),
        joined("peak_rss_mb", ".0f"),
        joined("other_cores", ".2f"),
    ]
    return "| " + " | ".join(cells) + " |"


def report_lines(args, summary: dict) -> list[str]:
    rounds, med = summary["rounds"], summary["median"]
    peers = [name for name in PEER_NAMES if name in rounds[0]]
    labels = [PEER_LABELS[name] for name in peers]
    lines = [
        "# Training throughput, 2 CPU threads (peers' benchmark config)",
        "",
        f"Measured {summary['date']} on {summary['machine']['cpu']} ({summary['machine']['cpus']} CPUs).",
        "",
        f"torch {summary['setting']['torch']} for every contestant; {args.rounds} rounds, order rotated; "
        f"{WARM} warm-up + {MEAS} measured updates; batch_tokens {args.batch_tokens}, maxi_batch "
        f"{args.maxi_batch}, amp {args.amp} (ours; the peers train in fp32).",
        "",
        "| round | order | ours tok/s | "
        + " | ".join(f"{label} tok/s" for label in labels)
        + " | "
        + " | ".join(f"ours / {label}" for label in labels)
        + " | ours / fastest peer | tok per CPU-s ours / ref (ratio) | tok/update | peak RSS MB "
        "| other processes' cores |",
        "|---|---|" + "---:|" * (2 + 2 * len(peers)) + "---|---|---|---|",
    ]
    names = ["ours", *peers]
    for index, r in enumerate(rounds, 1):
        lines.append(table_row([str(index), " ".join(r["order"])], flat_round(r, names), peers, bold=False))
    lines += [
        table_row(["**median**", ""], med, peers, bold=True),
        "",
        "Columns with several figures list " + ", ".join(["ours", *labels]) + " in that order. Ratios are "
        "taken per round (the same window for every contestant), then their median.",
    ]
    if "ratio_to_fastest_peer_via_ref" in med:
        lines += [
            "",
            "OpenNMT-py was not run here (`--opennmt`); through its ratio to plain PyTorch when the peers "
            "were measured (2,166 against 2,056 tok/s), ours would be "
            f"**{med['ratio_to_fastest_peer_via_ref']:.2f}x** the fastest peer.",
        ]
    else:
        lines += [
            "",
            "OpenNMT-py 3.5.1 runs its own training entry point unchanged under the peers' probes "
            "(`peers/peer_train.py`), with the peers' settings (`peers/opennmt.yaml.in`), on this project's "
            "interpreter and torch (installed with `pip install --target`, benchmarks/README.md).",
        ]
    lines += [
        "",
        "Other processes' cores: machine-wide busy CPU minus the child's own CPU, per second of its run; "
        "above ~0.1 the machine was shared and absolute tok/s are depressed (use the ratio). "
        f"Tokens per CPU-second (process CPU time over the same {MEAS} updates) is less sensitive to other "
        "processes taking a core, though OpenMP spin-waiting still inflates it under contention.",
        "",
        "Our run uses a joint vocabulary of the peers' ~8,000 types (source and target symbols renamed onto "
        "one set); the peers use separate 8,000-type vocabularies: the same embedding and output work.",
    ]
    return lines


if __name__ == "__main__":
    main()
