"""Our beam search against CTranslate2's on the same weights, every mode of both, in one window.

Why: issue 23 asks for beam search at CTranslate2's speed in fp32 and in each side's best mode; the
peers' table measured CTranslate2 on an OpenNMT-py model, so a ratio to it mixed two models. Here one
model is built (decode.py's: the "small" preset, 3+3 layers, d 256, 4 heads, FFN 1024, pre-norm, random
weights with seed 1, output vocabulary 8,004), saved as a checkpoint, converted with
benchmarks/ct2_convert.py, and both decoders translate the same 200 sentences (decode.py's fixed-length
pass: the peers' synthetic test set, sorted by length, batches of 64, beam 5, </s> banned before 30
tokens and forced at 30, so every system does the same work whatever the random model prefers).

Modes, each in its own fresh process (peak RSS its own), the order rotating per round:
  ours_fp32     our beam search, float32 (`translate`)
  ours_bf16     the model in bfloat16 (`translate --dtype bfloat16`)
  ours_int8     dynamic int8 linear layers and output projection (`translate --dtype int8`)
  ct2_float32, ct2_int8, ct2_int8_float32   CTranslate2's Translator with that compute_type
The time is the decoding loop's wall clock after a short warm-up (model loading excluded on both
sides). Ratios are taken per round (same machine conditions) and their median reported; "CT2 best"
is, per round, the fastest of CTranslate2's modes.

CTranslate2 is not a project dependency: pass ``--ct2-path DIR`` (a ``pip install --target DIR
ctranslate2==4.8.5``) or run where it is importable.

Usage: python benchmarks/decode_ct2.py [--rounds 3] [--threads 1] [--ct2-path DIR] [--profile]
Writes benchmarks/results/decode_ct2.json and .md (``--out`` to move them).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from decode import make_data, measured_worker

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
OURS = ("ours_fp32", "ours_bf16", "ours_int8")
CT2 = ("ct2_float32", "ct2_int8", "ct2_int8_float32")
MODES = OURS + CT2


# --------------------------------------------------------------------------- preparation (driver)
def prepare(folder: Path, n: int, ct2_env: dict[str, str]) -> None:
    """Checkpoint, vocabulary, sources (token strings, so both decoders read the same ids) and the
    CTranslate2 model, in ``folder``."""
    import torch

    from nmtvariants.data.vocab import SPECIALS, Vocabulary
    from nmtvariants.models import build_model, model_config

    make_data(folder)
    src_vocab = (folder / "vocab.src").read_text().split()
    trg_vocab = (folder / "vocab.trg").read_text().split()
    vocab = Vocabulary([*SPECIALS, *trg_vocab])
    # decode.py's mapping: source word i -> id 4 + i (the model's vocabulary is the target side's)
    stoi = {w: 4 + i for i, w in enumerate(src_vocab)}
    lines = [line.split() for line in (folder / "test.src").read_text().splitlines()][:n]
    ids = [[stoi.get(w, 3) % len(vocab) for w in line] for line in lines]
    (folder / "sources.txt").write_text("\n".join(" ".join(vocab.itos[i] for i in s) for s in ids) + "\n")
    vocab.save(folder / "vocab.txt")
    torch.manual_seed(1)
    model = build_model(model_config("small"), len(vocab)).eval()
    state = {"model_config": dataclasses.asdict(model.cfg), "vocab_size": len(vocab)}
    torch.save({**state, "model": model.state_dict()}, folder / "model.pt")
    subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "ct2_convert.py"),
            *("--checkpoint", str(folder / "model.pt"), "--vocab", str(folder / "vocab.txt")),
            *("--out", str(folder / "ct2")),
        ],
        env=ct2_env,
        check=True,
        stdout=subprocess.DEVNULL,
    )


# --------------------------------------------------------------------------- workers
def batches_of(lines: list[list[str]], size: int) -> list[list[int]]:
    order = sorted(range(len(lines)), key=lambda i: len(lines[i]))
    return [order[j : j + size] for j in range(0, len(order), size)]


def worker_ours(args: argparse.Namespace) -> dict:
    from nmtvariants.mkl_dispatch import use_fast_mkl_kernels

    use_fast_mkl_kernels()  # as `nmtvariants translate` does, before torch
    import torch

    torch.set_num_threads(args.threads)
    from nmtvariants.allocator import keep_freed_memory
    from nmtvariants.data.vocab import Vocabulary
    from nmtvariants.inference.beam_search import beam_search
    from nmtvariants.inference.precision import prepare_model
    from nmtvariants.inference.scorer import pad_batch
    from nmtvariants.models import load_model

    keep_freed_memory()  # as `nmtvariants translate` does
    data = Path(args.data)
    dtype = {"ours_fp32": "float32", "ours_bf16": "bfloat16", "ours_int8": "int8"}[args.mode]
    model = prepare_model(load_model(data / "model.pt"), dtype, "cpu")
    vocab = Vocabulary.load(data / "vocab.txt")
    lines = [line.split() for line in (data / "sources.txt").read_text().splitlines()]
    sources = [vocab.encode(" ".join(line)) for line in lines]
    batches = [pad_batch([sources[i] for i in batch]) for batch in batches_of(lines, args.batch)]

    def run() -> int:
        tokens = 0
        for src in batches:
            hyps = beam_search(
                model, src, beam_size=args.beam, min_len=args.length, max_len_a=0, max_len_b=args.length
            )
            assert all(len(h[0].tokens) == args.length for h in hyps)
            tokens += sum(len(h[0].tokens) for h in hyps)
        return tokens

    beam_search(model, batches[0][:2], beam_size=args.beam, min_len=2, max_len_a=0, max_len_b=2)  # warm-up
    if args.profile:
        return profile_ours(run)
    start = time.perf_counter()
    tokens = run()
    seconds = time.perf_counter() - start
    return {"sentences": len(sources), "hyp_tokens": tokens, "seconds": seconds, "vocab_pass": vocab_pass()}


def vocab_pass() -> str:
    """Which pass over the vocabulary beam search took (libraries before 74291d9: log-softmax + top-k)."""
    try:
        from nmtvariants.inference import vocab_topk
    except ImportError:  # an older library under benchmarks/ab.py
        return "log-softmax + top-k (before vocab_topk)"
    return vocab_topk.status()


def worker_ct2(args: argparse.Namespace) -> dict:
    import ctranslate2

    data = Path(args.data)
    compute_type = args.mode.removeprefix("ct2_")
    translator = ctranslate2.Translator(
        str(data / "ct2"),
        device="cpu",
        compute_type=compute_type,
        intra_threads=args.threads,
        inter_threads=1,
    )
    lines = [line.split() for line in (data / "sources.txt").read_text().splitlines()]
    batches = [[lines[i] for i in batch] for batch in batches_of(lines, args.batch)]
    options = dict(beam_size=args.beam, max_batch_size=args.batch)
    translator.translate_batch(batches[0][:2], max_decoding_length=2, min_decoding_length=2, **options)
    start = time.perf_counter()
    tokens = 0
    for batch in batches:
        results = translator.translate_batch(
            batch, max_decoding_length=args.length, min_decoding_length=args.length, **options
        )
        assert all(len(r.hypotheses[0]) == args.length for r in results)
        tokens += sum(len(r.hypotheses[0]) for r in results)
    seconds = time.perf_counter() - start
    return {
        "sentences": len(lines),
        "hyp_tokens": tokens,
        "seconds": seconds,
        "ctranslate2": ctranslate2.__version__,
    }


def profile_ours(run: Callable[[], int]) -> dict:
    """One pass under torch.profiler (CPU, with the Python call stack off): the time per operator, and
    the wall clock split between operators and what runs between them."""
    from torch.profiler import ProfilerActivity, profile

    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        tokens = run()
    seconds = time.perf_counter() - start
    table = []
    for event in prof.key_averages():
        table.append(
            {
                "op": event.key,
                "calls": event.count,
                "self_cpu_s": event.self_cpu_time_total / 1e6,
                "cpu_total_s": event.cpu_time_total / 1e6,
            }
        )
    table.sort(key=lambda row: -row["self_cpu_s"])
    return {"hyp_tokens": tokens, "seconds": seconds, "ops": table[:40]}


# --------------------------------------------------------------------------- driver
def run_mode(mode: str, args: argparse.Namespace, data: Path, env: dict[str, str]) -> dict:
    cmd = [
        sys.executable,
        __file__,
        *("--worker", "--mode", mode, "--data", str(data), "--threads", str(args.threads)),
        *("--beam", str(args.beam), "--batch", str(args.batch), "--length", str(args.length)),
    ]
    return measured_worker(mode, cmd, env)


def per_round_ratios(runs: list[dict], mode: str, reference: str | tuple[str, ...]) -> list[float]:
    """``mode``'s speed over ``reference``'s in each round (a tuple: the fastest of those modes)."""
    names = (reference,) if isinstance(reference, str) else reference
    ratios = []
    for k in sorted({r["round"] for r in runs}):
        mine = [r["sent_per_s"] for r in runs if r["round"] == k and r["mode"] == mode]
        theirs = [r["sent_per_s"] for r in runs if r["round"] == k and r["mode"] in names]
        if mine and theirs:
            ratios.append(mine[0] / max(theirs))
    return ratios


def summarise(runs: list[dict], modes: list[str]) -> dict:
    summary: dict = {}
    for mode in modes:
        mine = [r for r in runs if r["mode"] == mode]
        speeds = [r["sent_per_s"] for r in mine]
        ct2_modes = tuple(m for m in modes if m in CT2)
        summary[mode] = {
            "sent_per_s": speeds,
            "sent_per_s_median": statistics.median(speeds),
            "peak_rss_mb_median": statistics.median(r["peak_rss_mb"] for r in mine),
            "other_cpu_cores": [round(r["other_cpu_cores"], 2) for r in mine],
            "load_before": [round(r["load_before"], 2) for r in mine],
            "vs_ct2_float32": per_round_ratios(runs, mode, "ct2_float32") if "ct2_float32" in modes else [],
            "vs_ct2_best": per_round_ratios(runs, mode, ct2_modes) if ct2_modes else [],
        }
    return summary


def markdown(summary: dict, meta: dict, runs: list[dict]) -> str:
    rounds = sorted({r["round"] for r in runs})
    lines = [
        f"# Beam search, ours{' against CTranslate2 on the same weights' if meta['ctranslate2'] else ''}: "
        "fixed 30-token outputs, beam 5, "
        f"batch 64, {meta['sentences']} sentences, small model (3+3, d 256), {meta['threads']} thread",
        "",
        f"Measured {meta['date']} on {meta['cpu']} ({meta['cpus']} CPUs), torch {meta['torch']}, "
        f"ctranslate2 {meta['ctranslate2'] or 'not run'}, {len(rounds)} rounds, modes in rotating "
        f"order, each in a fresh process. Command: `{meta['command']}`. The conversion is checked in "
        "`ct2_convert_check.md` (identical greedy outputs, per-token log-probs equal to ~1e-5)."
        + (f" Our pass over the vocabulary: {meta['vocab_pass']}." if meta.get("vocab_pass") else ""),
        "",
        f"What else ran: {meta['beside']} The CPU that other processes used during each run is in the "
        "table (cores, from /proc/stat minus the run's own CPU time); only the per-round ratios are "
        "figures to compare, not the absolute sentences per second.",
        "",
        "| mode | "
        + " | ".join(f"round {k} sent/s" for k in rounds)
        + " | median | x CT2 fp32 (per round) | x CT2 best (per round) | peak RSS MB | other CPU (cores) |",
        "|---|" + "---|" * len(rounds) + "---|---|---|---|---|",
    ]

    def fmt(values: list[float]) -> str:
        if not values:
            return "-"
        return f"**{statistics.median(values):.2f}** ({', '.join(f'{v:.2f}' for v in values)})"

    for mode, s in summary.items():
        by_round = {r["round"]: r["sent_per_s"] for r in runs if r["mode"] == mode}
        lines.append(
            f"| {mode} | "
            + " | ".join(f"{by_round[k]:.1f}" if k in by_round else "-" for k in rounds)
            + f" | {s['sent_per_s_median']:.1f} | {fmt(s['vs_ct2_float32'])} | {fmt(s['vs_ct2_best'])} "
            f"| {s['peak_rss_mb_median']:.0f} | {', '.join(map(str, s['other_cpu_cores']))} |"
        )
    best = [
        max(CT2, key=lambda m: next((r["sent_per_s"] for r in runs if r["round"] == k and r["mode"] == m), 0))
        for k in rounds
    ]
    if any(r["mode"] in CT2 for r in runs):
        lines += ["", f"CTranslate2's fastest mode per round: {', '.join(best)}."]
    lines.append("")
    return "\n".join(lines)


PROFILE_GROUPS = {
    "matrix products (mm, addmm, bmm; int8 layers, their quantising included; native self-attention)": (
        "aten::mm",
        "aten::addmm",
        "aten::bmm",
        "quantized::linear_dynamic",  # the int8 layers before nmtvariants::int8_linear
        "nmtvariants::int8_linear",  # its own time: quantising, rescaling, calls
        "aten::_int_mm",  # the int8 layers' integer products
        "nmtvariants::beam_attention",  # self-attention over the ancestors' keys: products and softmax
    ),
    "log-softmax and top-k over beam x vocabulary (nmtvariants::vocab_topk: the native pass)": (
        "aten::_log_softmax",
        "aten::topk",
        "nmtvariants::vocab_topk",
    ),
    "copies, concatenation, gathers (head reshapes, beam and cache reordering)": (
        "aten::copy_",
        "aten::cat",
        "aten::index_select",
        "aten::gather",
        "aten::scatter_",
    ),
}


def profile_markdown(profile: dict, runs: list[dict]) -> list[str]:
    """Where one pass of ours spends its time: operator self time by group, and the rest of the
    unprofiled pass's wall clock, which is Python and dispatch between the operators."""
    ops = profile["ops"]
    mode = profile.get("mode", "ours_fp32")
    plain = statistics.median(r["seconds"] for r in runs if r["mode"] == mode)
    lines = [
        "",
        f"## Where {mode} spends its time (torch.profiler, one more pass)",
        "",
        f"The profiled pass took {profile['seconds']:.1f} s against {plain:.1f} s unprofiled (median of "
        "the rounds above). Operator self times are the profiler's (the 40 largest operators); the "
        f"profiler adds its own cost to each of the {sum(op['calls'] for op in ops):,} calls of these "
        "operators (nested ones counted), so they run high, "
        "and the last row (unprofiled wall clock minus operator self time: Python, dispatch and "
        "allocation between operators) runs low; per-call overhead also sits inside 'other operators' "
        "(view, reshape, matmul and linear wrappers).",
        "",
        "| where | seconds | share of the unprofiled pass |",
        "|---|---|---|",
    ]
    total = 0.0
    for group, names in PROFILE_GROUPS.items():
        seconds = sum(op["self_cpu_s"] for op in ops if op["op"] in names)
        total += seconds
        lines.append(f"| {group} | {seconds:.2f} | {seconds / plain:.0%} |")
    known = {name for names in PROFILE_GROUPS.values() for name in names}
    rest = sum(op["self_cpu_s"] for op in ops if op["op"] not in known)
    total += rest
    lines.append(f"| other operators (layer norm, adds, masks, ...) | {rest:.2f} | {rest / plain:.0%} |")
    lines.append(
        f"| between operators (unprofiled wall - operator time) | {plain - total:.2f} | "
        f"{(plain - total) / plain:.0%} |"
    )
    lines += ["", "| operator | calls | self s |", "|---|---|---|"]
    lines += [f"| {op['op']} | {op['calls']} | {op['self_cpu_s']:.3f} |" for op in ops[:12]]
    return [*lines, ""]


# Text below this line in the markdown is written by hand (reading of the figures) and kept on rewrites.
HAND_WRITTEN = "<!-- written by hand below; kept when the figures above are rewritten -->"


def render(path: Path) -> str:
    """The markdown of a saved JSON result (to re-render without measuring again), keeping the
    hand-written part of the markdown already beside it."""
    saved = json.loads(path.read_text(encoding="utf-8"))
    text = markdown(saved["summary"], saved["meta"], saved["runs"])
    if saved.get("profile"):
        text += "\n".join(profile_markdown(saved["profile"], saved["runs"]))
    previous = path.with_suffix(".md")
    if previous.is_file() and HAND_WRITTEN in previous.read_text(encoding="utf-8"):
        text += "\n" + HAND_WRITTEN + previous.read_text(encoding="utf-8").split(HAND_WRITTEN, 1)[1]
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=MODES)
    parser.add_argument("--data")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=30)
    parser.add_argument("--ct2-path", help="a folder holding the ctranslate2 package (pip --target)")
    parser.add_argument(
        "--beside",
        default="nothing was started beside it on purpose; see the other-CPU column.",
        help="what else ran on the machine, written into the results",
    )
    parser.add_argument(
        "--profile",
        nargs="?",
        const="ours_fp32",
        choices=OURS,
        help="also profile one pass of this mode of ours (default ours_fp32); it must be among --modes",
    )
    parser.add_argument("--out", default=str(RESULTS / "decode_ct2"))
    parser.add_argument("--render", action="store_true", help="rewrite OUT.md from OUT.json, measure nothing")
    args = parser.parse_args()
    if args.render:
        out = Path(args.out)
        out.with_suffix(".md").write_text(render(out.with_suffix(".json")), encoding="utf-8")
        return
    if args.worker:
        result = worker_ct2(args) if args.mode in CT2 else worker_ours(args)
        result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
        return

    import torch

    from nmtvariants.fileio import atomic_write

    threads = str(args.threads)
    path = [str(REPO / "src"), *([args.ct2_path] if args.ct2_path else []), os.environ.get("PYTHONPATH", "")]
    env = {
        **os.environ,
        "OMP_NUM_THREADS": threads,
        "MKL_NUM_THREADS": threads,
        "PYTHONPATH": os.pathsep.join(path),
    }
    modes = [m for m in args.modes.split(",") if m]
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        prepare(data, args.n, env)
        for k in range(args.rounds):
            rotated = modes[k % len(modes) :] + modes[: k % len(modes)]
            for mode in rotated:
                result = run_mode(mode, args, data, env)
                result["round"] = k + 1
                runs.append(result)
                print(json.dumps(result), flush=True)
        profile = None
        if args.profile:
            cmd = [
                sys.executable,
                __file__,
                "--worker",
                "--mode",
                args.profile,
                "--data",
                str(data),
                "--profile",
            ]
            cmd += ["--threads", threads, "--beam", str(args.beam), "--batch", str(args.batch)]
            cmd += ["--length", str(args.length)]
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            profile = {"mode": args.profile, **json.loads(proc.stdout.strip().splitlines()[-1])}
    from nmtvariants.hardware import cpu_model

    summary = summarise(runs, modes)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "ctranslate2": next((r["ctranslate2"] for r in runs if "ctranslate2" in r), None),
        "threads": args.threads,
        "sentences": runs[0]["sentences"],
        "vocab_pass": next((r["vocab_pass"] for r in runs if "vocab_pass" in r), None),
        "beside": args.beside,
        "command": shlex.join(["python", "benchmarks/decode_ct2.py", *sys.argv[1:]]),
    }
    out = Path(args.out)
    with atomic_write(out.with_suffix(".json")) as handle:
        json.dump({"meta": meta, "summary": summary, "runs": runs, "profile": profile}, handle, indent=2)
    with atomic_write(out.with_suffix(".md")) as handle:
        handle.write(render(out.with_suffix(".json")))
    print(render(out.with_suffix(".json")))


if __name__ == "__main__":
    main()
