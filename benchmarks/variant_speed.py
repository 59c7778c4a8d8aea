"""Training and beam-search speed of a study's variants against its reference model, side by side in one
run: the speed figures the four studies report, measured alike.

* ``emelin2019``: lexical shortcuts and feature-fusion against the baseline (the paper's Table 5:
  training at 0.89 and 0.79 of the baseline's speed on P100 GPUs);
* ``yang2020``: the simplified decoder (no FFN, no second Add&Norm) against the standard one, with the
  study's fairseq settings (``study_overrides("yang2020", preset)``: post-norm, biased projections;
  the paper's Table 4: +11-14% for training and decoding);
* ``bugliarello2020``: PASCAL heads against the baseline (the paper claims no overhead); both read the
  same random parent stream, so the data path costs the same and only the attention differs.

The models are the same size preset (default ``small``: 3+3 layers, d 256, 4 heads, FFN 1024) and differ
only by their variant switches. They train on the corpus of the training benchmark
(``train_throughput.py``: the peers' synthetic 20k pairs, 8,000 types, renamed onto one joint
vocabulary) with the same seed, so every model sees the same batch stream.

* training: the real Trainer, label smoothing 0.1, ~4,000 target tokens per batch, fp32 unless
  ``--amp``; real target tokens per wall second and per CPU second over updates ``warm+1..warm+measured``
  (``train_throughput.timed_training``);
* decoding: untrained weights (speed does not depend on them, and every model then emits the same
  lengths), the first ``n`` valid sentences sorted by length, batches of 64, beam 5, ``</s>`` banned
  before ``length`` tokens and forced there, through the batches ``translate`` builds (extra inputs
  included); sentences per wall and per CPU second after one warm-up batch.

Every measurement is its own child process (its own peak RSS, and the CPU that *other* processes used
meanwhile, because this machine is shared). Rounds interleave the variants and rotate which goes first;
ratios variant / reference are taken per round (same machine conditions), then the median. Run on a
quiet machine::

    PYTHONPATH=src .venv/bin/python benchmarks/variant_speed.py emelin2019 --rounds 3

``--quick`` is a smoke run (1 round, 1 + 2 updates of ~1,000 tokens, 8 sentences): it checks the
machinery, its figures mean nothing. Writes ``benchmarks/results/variant_speed_<study>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

# the training benchmark's corpus, child runner and measurement window
sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_throughput as bench

REPO = bench.REPO
RESULTS = REPO / "benchmarks" / "results"
TASKS = ("train", "decode")
PARENTS = "parents_x2"  # syntax.parents.MIDDLE_STREAM, PASCAL's stream (halves doubled)


@dataclass(frozen=True)
class Comparison:
    """What one study compares: ``variants`` by name (the first is the reference) and the paper's
    figures, per variant, as text."""

    title: str
    variants: dict[str, dict]
    paper: dict[str, str]
    overrides_of: str | None = None  # a study in models.config.STUDY_OVERRIDES
    parents: bool = False
    reference: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "reference", next(iter(self.variants)))


COMPARISONS = {
    "emelin2019": Comparison(
        "Lexical shortcuts and feature-fusion against the baseline",
        {
            "baseline": {},
            "lexical": {"shortcuts": {"kind": "lexical"}},
            "feature_fusion": {"shortcuts": {"kind": "feature_fusion"}},
        },
        {"lexical": "training 0.89 (P100)", "feature_fusion": "training 0.79 (P100)"},
    ),
    "yang2020": Comparison(
        "Simplified against standard decoder (yang2020 fairseq settings)",
        {"standard": {"decoder_layout": "standard"}, "simplified": {"decoder_layout": "simplified"}},
        {"simplified": "training and decoding 1.11-1.14"},
        overrides_of="yang2020",
    ),
    "bugliarello2020": Comparison(
        "PASCAL heads against the baseline (both read the same parent stream)",
        {"baseline": {}, "pascal": {"pascal": {}}},
        {"pascal": "no overhead (1.00)"},
        parents=True,
    ),
}
SPEEDS = {
    "train": {
        "train_tok_per_s": "training target tokens / s",
        "cpu_tok_per_s": "training target tokens / CPU-s",
    },
    "decode": {"sent_per_s": "decoding sentences / s", "cpu_sent_per_s": "decoding sentences / CPU-s"},
}


def model_settings(comparison: Comparison, preset: str) -> dict:
    from nmtvariants.models.config import study_overrides

    overrides = study_overrides(comparison.overrides_of, preset) if comparison.overrides_of else {}
    return {"preset": preset, **overrides}


def write_parents(source: Path, out: Path, seed: int = 1) -> None:
    """A random parent position in ``[0, n)`` for each of the ``n`` tokens of every line: the format of
    ``nmtvariants parents`` (speed does not depend on the parse)."""
    rng = random.Random(seed)
    rows = []
    for line in source.read_text(encoding="utf-8").splitlines():
        n = len(line.split())
        rows.append(" ".join(str(rng.randrange(n)) for _ in range(n)) + "\n")
    out.write_text("".join(rows), encoding="utf-8")


def prepare_data(scratch: Path, comparison: Comparison) -> Path:
    _, data = bench.prepare_data(scratch)
    if comparison.parents:
        for split in ("train", "valid"):
            if not (data / f"{split}.parents").exists():
                write_parents(data / f"{split}.src", data / f"{split}.parents")
    return data


# ---------------------------------------------------------------------- workers (child processes)
def train_worker(args: argparse.Namespace, comparison: Comparison) -> dict:
    import torch

    from nmtvariants.training.train_config import parse_run_config

    data = Path(args.data)
    files = {
        "train_src": str(data / "train.src"),
        "train_tgt": str(data / "train.trg"),
        "vocab": str(data / "vocab.txt"),
    }
    if comparison.parents:
        files["train_aux"] = {PARENTS: str(data / "train.parents")}
    config = parse_run_config(
        {
            "data": files,
            "model": model_settings(comparison, args.preset),
            "variant": comparison.variants[args.variant],
            "train": bench.train_settings(
                args.warm + args.measured, args.batch_tokens, args.threads, amp=args.amp
            ),
        }
    )
    result = bench.timed_training(config, args.warm)
    result["threads"] = torch.get_num_threads()
    return result


def decode_worker(args: argparse.Namespace, comparison: Comparison) -> dict:
    import torch

    from nmtvariants.data.batching import source_inputs
    from nmtvariants.data.extra_inputs import ExtraInputFiles
    from nmtvariants.data.vocab import Vocabulary
    from nmtvariants.inference.beam_search import beam_search
    from nmtvariants.inference.examples import batches_by_length, read_examples
    from nmtvariants.models import build_model, model_config

    torch.set_num_threads(args.threads)
    data = Path(args.data)
    vocab = Vocabulary.load(data / "vocab.txt")
    with tempfile.TemporaryDirectory() as tmp:  # the first n lines, with their parents if any
        source = Path(tmp) / "decode.src"
        source.write_text(
            "".join(f"{line}\n" for line in _head(data / "valid.src", args.n)), encoding="utf-8"
        )
        extras = None
        if comparison.parents:
            parents = Path(tmp) / "decode.parents"
            parents.write_text(
                "".join(f"{line}\n" for line in _head(data / "valid.parents", args.n)), encoding="utf-8"
            )
            extras = ExtraInputFiles(aux={PARENTS: parents})
        examples = read_examples(
            vocab, source, source.read_text(encoding="utf-8").splitlines(), extras=extras
        )
    settings = model_settings(comparison, args.preset)
    preset = settings.pop("preset")
    torch.manual_seed(1)
    model = build_model(model_config(preset, settings, comparison.variants[args.variant]), len(vocab)).eval()
    batches = [
        source_inputs(examples, chunk)
        for chunk in batches_by_length(examples, range(len(examples)), args.batch)
    ]
    length = {"min_len": args.length, "max_len_a": 0, "max_len_b": args.length}
    with torch.inference_mode():
        warm = source_inputs(examples, next(batches_by_length(examples, range(2), 2)))
        beam_search(model, warm, beam_size=args.beam, min_len=2, max_len_a=0, max_len_b=2)
        wall, cpu = time.perf_counter(), time.process_time()
        for inputs in batches:
            hyps = beam_search(model, inputs, beam_size=args.beam, **length)
            if any(len(h[0].tokens) != args.length for h in hyps):
                raise RuntimeError("a hypothesis left the fixed length")
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "sentences": len(examples),
        "seconds": wall,
        "sent_per_s": len(examples) / wall,
        "cpu_sent_per_s": len(examples) / cpu,
        "parameters": sum(p.numel() for p in model.parameters()),
        "threads": torch.get_num_threads(),
    }


def _head(path: Path, n: int) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()[:n]


# ---------------------------------------------------------------------- driver
OPTIONS = ("preset", "threads", "warm", "measured", "batch_tokens", "amp", "n", "beam", "batch", "length")


def run(study: str, task: str, variant: str, args: argparse.Namespace, data: Path) -> dict:
    command = [sys.executable, __file__, study, "--worker", task, "--variant", variant, "--data", str(data)]
    for key in OPTIONS:
        command += [f"--{key.replace('_', '-')}", str(getattr(args, key))]
    result = bench.run_child(command, bench.env_for(args.threads))
    result.update(task=task, variant=variant)
    return result


def summarise(comparison: Comparison, rounds: list[dict]) -> dict:
    """Per (task, variant): median, min and max of each speed; per variant other than the reference and
    per speed: the median of the per-round ratios variant / reference; parameters and their ratio."""
    summary: dict = {"speeds": {}, "ratios": {}, "parameters": {}}
    reference = comparison.reference
    for task, keys in SPEEDS.items():
        for variant in comparison.variants:
            runs = [record[task][variant] for record in rounds]
            summary["speeds"][f"{task}/{variant}"] = {
                key: {
                    "median": statistics.median(x[key] for x in runs),
                    "min": min(x[key] for x in runs),
                    "max": max(x[key] for x in runs),
                }
                for key in keys
            }
            summary["parameters"][variant] = runs[0]["parameters"]
    for variant in list(comparison.variants)[1:]:
        ratios: dict = {}
        for task, keys in SPEEDS.items():
            for key in keys:
                per_round = [record[task][variant][key] / record[task][reference][key] for record in rounds]
                ratios[key] = {"median": statistics.median(per_round), "per_round": per_round}
        ratios["parameters"] = summary["parameters"][variant] / summary["parameters"][reference]
        ratios["paper"] = comparison.paper.get(variant, "")
        summary["ratios"][variant] = ratios
    return summary


def markdown(comparison: Comparison, summary: dict, rounds: list[dict], meta: dict) -> str:
    lines = [
        f"# {comparison.title}: training and decoding speed ({meta['preset']} preset, {meta['threads']} "
        f"thread(s), amp {meta['amp']})",
        "",
        f"Measured {meta['date']} on {meta['machine']}, torch {meta['torch']}, {meta['rounds']} round(s), "
        f"variants interleaved, first one rotated. Command: `{meta['command']}`.",
        f"Training: {meta['warm']} warm-up + {meta['measured']} measured updates of ~{meta['batch_tokens']} "
        f"target tokens, the same batch stream for every model. Decoding: {meta['n']} sentences, beam "
        f"{meta['beam']}, batch {meta['batch']}, fixed {meta['length']}-token outputs, untrained weights.",
        "",
        "| round | variant | train tok/s | train tok/CPU-s | decode sent/s | decode sent/CPU-s "
        "| peak RSS MB train / decode | load before train / decode | other processes' cores train / decode |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for index, record in enumerate(rounds, 1):
        for variant in comparison.variants:
            t, d = record["train"][variant], record["decode"][variant]
            lines.append(
                f"| {index} | {variant} | {t['train_tok_per_s']:.0f} | {t['cpu_tok_per_s']:.0f} "
                f"| {d['sent_per_s']:.2f} | {d['cpu_sent_per_s']:.2f} "
                f"| {t['peak_rss_mb']:.0f} / {d['peak_rss_mb']:.0f} "
                f"| {t['load_before']:.2f} / {d['load_before']:.2f} "
                f"| {t['other_cores']:.2f} / {d['other_cores']:.2f} |"
            )
    lines += [
        "",
        f"Relative to `{comparison.reference}` (per-round ratios, median; per round in brackets):",
        "",
        "| variant | train tok/s | train tok/CPU-s | decode sent/s | decode sent/CPU-s | parameters "
        "| paper |",
        "|---|---|---|---|---|---|---|",
    ]
    for variant, ratio in summary["ratios"].items():
        cells = []
        for keys in SPEEDS.values():
            for key in keys:
                per_round = ", ".join(f"{x:.3f}" for x in ratio[key]["per_round"])
                cells.append(f"**{ratio[key]['median']:.3f}** ({per_round})")
        params = f"{summary['parameters'][variant]:,} ({ratio['parameters']:.3f}x)"
        lines.append(f"| {variant} | {' | '.join(cells)} | {params} | {ratio['paper']} |")
    lines += [
        "",
        "Other processes' cores: machine-wide busy CPU minus the child's own, per second of its run; above "
        "~0.1 the machine was shared and the absolute figures are depressed (read the ratios).",
        "",
    ]
    if meta["quick"]:
        lines += ["**Smoke run (`--quick`): these figures check the machinery and mean nothing.**", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study", choices=tuple(COMPARISONS))
    parser.add_argument("--worker", choices=TASKS, help=argparse.SUPPRESS)
    parser.add_argument("--variant", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--preset", default="small", help="model size (tiny, small, base, big)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warm", type=int, default=5, help="training updates before the measured ones")
    parser.add_argument("--measured", type=int, default=25, help="measured training updates")
    parser.add_argument("--batch-tokens", type=int, default=4000)
    parser.add_argument("--amp", default="none", help="none or bf16 (autocast), training only")
    parser.add_argument("--n", type=int, default=200, help="sentences to decode")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64, help="sentences per decoding batch")
    parser.add_argument("--length", type=int, default=30, help="fixed output length")
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 1 round, 1 + 2 small updates, 8 sentences"
    )
    parser.add_argument("--scratch", default=os.path.join(tempfile.gettempdir(), "nmtv-train-bench"))
    parser.add_argument(
        "--out", help="output path without suffix (default benchmarks/results/variant_speed_<study>)"
    )
    args = parser.parse_args(argv)
    comparison = COMPARISONS[args.study]
    if args.worker:
        worker = train_worker if args.worker == "train" else decode_worker
        print(json.dumps(worker(args, comparison)))
        return
    if args.quick:
        args.rounds, args.warm, args.measured, args.batch_tokens, args.n, args.length = 1, 1, 2, 1000, 8, 5
    if args.warm < 1 or args.measured < 1 or args.rounds < 1:
        parser.error("--warm, --measured and --rounds must be positive")

    import torch

    from nmtvariants.fileio import atomic_write

    data = prepare_data(Path(args.scratch), comparison)
    names = list(comparison.variants)
    rounds = []
    for index in range(args.rounds):
        order = names[index % len(names) :] + names[: index % len(names)]
        record: dict = {task: {} for task in TASKS}
        for task in TASKS:
            for variant in order:
                record[task][variant] = run(args.study, task, variant, args, data)
                speed = record[task][variant][next(iter(SPEEDS[task]))]
                print(f"round {index + 1} {task} {variant}: {speed:.2f}", file=sys.stderr, flush=True)
        rounds.append(record)
    summary = summarise(comparison, rounds)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()} {os.cpu_count()} CPUs",
        "torch": torch.__version__,
        "command": "python benchmarks/variant_speed.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "variants": comparison.variants,
        "model": model_settings(comparison, args.preset),
        **{key: getattr(args, key) for key in ("rounds", "quick", *OPTIONS)},
    }
    out = Path(args.out) if args.out else RESULTS / f"variant_speed_{args.study}"
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(out.with_suffix(".json")) as handle:
        json.dump({"meta": meta, "summary": summary, "rounds": rounds}, handle, indent=2)
    text = markdown(comparison, summary, rounds, meta)
    with atomic_write(out.with_suffix(".md")) as handle:
        handle.write(text)
    print(text)


if __name__ == "__main__":
    main()
