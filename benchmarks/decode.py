"""Decoding speed and peak memory: our batched incremental beam search against plain-PyTorch floors.

The setting is the peers' fixed-length pass (../shared/peers/decode_fixed.sh, README there): the
"small" model (3+3 layers, d 256, 4 heads, FFN 1024, pre-norm), untrained (random weights: speed does not
depend on them), the first 200 test sentences of the peers' synthetic corpus (make_data.py, fixed seed),
beam 5, batches of 64 sentences sorted by length, </s> banned before 30 tokens and forced at 30, fp32,
2 CPU threads. Every mode runs in its own process (so peak RSS is its own), modes rotate order per round,
and the load average and the CPU used by *other* processes during each run are recorded next to it.

Modes:
  ours_beam     our beam search (KV cache, memory folded per sentence), beam 5
  ours_greedy   the same code with beam 1
  ours_beam_bf16  ours_beam with the model in bfloat16 (`translate --dtype bfloat16`); the peers ran fp32,
                so this row is *not* like for like (CTranslate2, too, has bf16 and int8 modes)
  nocache_beam  our beam search over a decoder that recomputes the whole prefix every step (no cache)
  ref_greedy    the peers' plain-PyTorch reference (ref_torch.py decode --beam 1 --force-len 30): greedy,
                no KV cache, torch.nn.Transformer; the "plain PyTorch" floor of the peers' table

Usage: python benchmarks/decode.py [--rounds 3] [--n 200] [--threads 2]
Writes benchmarks/results/decode.json and decode.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# the peers' scripts; NMTV_PEERS moves them (a worktree of benchmarks/ab.py has no shared/ beside it)
PEERS = Path(os.environ.get("NMTV_PEERS", REPO.parent / "shared" / "peers"))
RESULTS = REPO / "benchmarks" / "results"
# The peers' fixed-length decode figures on this machine (peers/README.md, median of 3 rounds, beam 5
# except the plain-PyTorch reference, which is greedy), quoted for comparison.
PEER_FIGURES = {
    "CTranslate2 4.8.5 (C++)": 57.6,
    "OpenNMT-py 3.5.1": 37.7,
    "fairseq 0.12.3.1": 32.3,
    "Sockeye 3.1.34": 23.6,
    "JoeyNMT 2.3.0": 3.70,
    "plain PyTorch ref (greedy, no cache)": 16.5,
}
MODES = ("ours_beam", "ours_greedy", "ours_beam_bf16", "nocache_beam", "ref_greedy")


def busy_seconds() -> float:
    """Machine-wide busy CPU seconds (as bench.sh computes them from /proc/stat)."""
    with open("/proc/stat") as handle:
        fields = handle.readline().split()
    user, nice, system, _, _, irq, softirq = (int(x) for x in fields[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def make_data(folder: Path) -> None:
    subprocess.run(
        [sys.executable, str(PEERS / "make_data.py"), "--out", str(folder)],
        check=True,
        stdout=subprocess.DEVNULL,
    )


# --------------------------------------------------------------------------- worker (one mode per process)
def worker(args: argparse.Namespace) -> dict:
    import torch

    torch.set_num_threads(args.threads)
    data = Path(args.data)
    if args.mode == "ref_greedy":
        return run_reference(args, data)

    from nmtvariants.allocator import keep_freed_memory
    from nmtvariants.inference.beam_search import beam_search
    from nmtvariants.inference.scorer import pad_batch
    from nmtvariants.models import build_model, model_config

    keep_freed_memory()  # as `nmtvariants translate` does
    src_vocab = (data / "vocab.src").read_text().split()
    trg_vocab = (data / "vocab.trg").read_text().split()
    vocab_size = 4 + len(trg_vocab) if not args.joint_vocab else 4 + len(src_vocab) + len(trg_vocab)
    stoi = {w: 4 + i for i, w in enumerate(src_vocab)}
    lines = [line.split() for line in (data / "test.src").read_text().splitlines()][: args.n]
    sources = [[stoi.get(w, 3) % vocab_size for w in line] + [2] for line in lines]
    torch.manual_seed(1)
    model = build_model(model_config("small"), vocab_size).eval()
    if args.mode == "ours_beam_bf16":
        model = model.to(torch.bfloat16)
    if args.mode == "nocache_beam":
        model = RecomputingDecoder(model)
    beam = 1 if args.mode == "ours_greedy" else args.beam
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    batches = [
        pad_batch([sources[i] for i in order[j : j + args.batch]]) for j in range(0, len(order), args.batch)
    ]
    beam_search(model, batches[0][:2], beam_size=beam, min_len=2, max_len_a=0, max_len_b=2)  # warm-up
    start = time.perf_counter()
    tokens = 0
    for src in batches:
        hyps = beam_search(
            model, src, beam_size=beam, min_len=args.length, max_len_a=0, max_len_b=args.length
        )
        assert all(len(h[0].tokens) == args.length for h in hyps)
        tokens += sum(len(h[0].tokens) for h in hyps)
    seconds = time.perf_counter() - start
    return {"sentences": len(sources), "hyp_tokens": tokens, "seconds": seconds, "vocab_size": vocab_size}


class RecomputingDecoder:
    """Wraps our model so that every step re-decodes the whole prefix (no KV cache), for the ratio."""

    def __init__(self, model):
        from nmtvariants.models.decoder_cache import BeamAncestry, DecoderCache

        self.model = model
        self.vocab_size = model.vocab_size
        self.training = False

        class PrefixCache(DecoderCache):
            def __init__(self, group: int):
                super().__init__(BeamAncestry(group))
                self.prefix = None

            def reorder(self, index):
                self.prefix = self.prefix.index_select(0, index)

            def select_memory(self, index):  # drop finished sentences with all their beams
                if self.prefix is not None:
                    rows = self.prefix.view(-1, self.group, self.prefix.size(1))
                    self.prefix = rows.index_select(0, index).view(-1, self.prefix.size(1))

        self.cache_type = PrefixCache

    def eval(self):
        return self

    def train(self, mode=True):
        return self

    def encode_inputs(self, inputs):
        return self.model.encode_inputs(inputs)

    def new_cache(self, group=1):
        return self.cache_type(group)

    def decode(self, tokens, memories, cache, aux=None):
        import torch

        cache.prefix = tokens if cache.prefix is None else torch.cat([cache.prefix, tokens], 1)
        expanded = [memory.repeat_interleave(cache.group) for memory in memories]
        return self.model.decode(cache.prefix, expanded, aux=aux)[:, -1:]


def run_reference(args: argparse.Namespace, data: Path) -> dict:
    """ref_torch.py's own decode(): an untrained Seq2Seq saved to a temporary file, then decoded."""
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location("ref_torch", PEERS / "ref_torch.py")
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    sv, _ = ref.load_vocab(data / "vocab.src")
    tv, _ = ref.load_vocab(data / "vocab.trg")
    torch.manual_seed(1)
    with tempfile.TemporaryDirectory() as tmp:
        ckpt, out_json = Path(tmp) / "ref.pt", Path(tmp) / "ref.json"
        torch.save({"model": ref.Seq2Seq(len(sv), len(tv)).state_dict()}, ckpt)
        namespace = argparse.Namespace(
            data=str(data),
            load=str(ckpt),
            src=str(data / "test.src"),
            n=args.n,
            batch=args.batch,
            beam=1,
            force_len=args.length,
            out=str(Path(tmp) / "ref.hyp"),
            json=str(out_json),
            threads=args.threads,
        )
        ref.decode(namespace)
        result = json.loads(out_json.read_text())
    return {
        "sentences": result["sentences"],
        "hyp_tokens": result["hyp_tokens"],
        "seconds": result["seconds"],
        "vocab_size": len(tv),
    }


# --------------------------------------------------------------------------- driver
def run_mode(mode: str, args: argparse.Namespace, data: Path) -> dict:
    n = min(args.n, args.floor_n) if mode in ("nocache_beam", "ref_greedy") else args.n
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        "--mode",
        mode,
        "--data",
        str(data),
        "--n",
        str(n),
        "--threads",
        str(args.threads),
        "--beam",
        str(args.beam),
        "--batch",
        str(args.batch),
        "--length",
        str(args.length),
    ] + (["--joint-vocab"] if args.joint_vocab else [])
    env = {
        **os.environ,
        "OMP_NUM_THREADS": str(args.threads),
        "MKL_NUM_THREADS": str(args.threads),
        "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    return measured_worker(mode, cmd, env)


def measured_worker(mode: str, cmd: list[str], env: dict[str, str]) -> dict:
    """Run one worker process (its last stdout line: a JSON result with ``sentences`` and ``seconds``)
    and add its speed, its wall time and own CPU, the CPU other processes used meanwhile (cores), and
    the load average before and after: what makes a disturbed round visible."""
    load_before = os.getloadavg()[0]
    busy0, wall0 = busy_seconds(), time.perf_counter()
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    children1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy1, wall1 = busy_seconds(), time.perf_counter()
    if proc.returncode:
        raise RuntimeError(f"{mode} failed:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    own = (children1.ru_utime - children0.ru_utime) + (children1.ru_stime - children0.ru_stime)
    result.update(
        mode=mode,
        sent_per_s=result["sentences"] / result["seconds"],
        process_wall_s=wall1 - wall0,
        own_cpu_s=own,
        other_cpu_cores=max(0.0, (busy1 - busy0 - own) / (wall1 - wall0)),
        load_before=load_before,
        load_after=os.getloadavg()[0],
    )
    return result


def summarise(runs: list[dict]) -> dict:
    summary = {}
    for mode in MODES:
        mine = [r for r in runs if r["mode"] == mode]
        if not mine:
            continue
        speeds = [r["sent_per_s"] for r in mine]
        summary[mode] = {
            "sent_per_s_median": statistics.median(speeds),
            "sent_per_s_min": min(speeds),
            "sent_per_s_max": max(speeds),
            "peak_rss_mb_median": statistics.median(r["peak_rss_mb"] for r in mine),
            "sentences": mine[0]["sentences"],
            "other_cpu_cores_max": max(r["other_cpu_cores"] for r in mine),
            "load_before": [round(r["load_before"], 2) for r in mine],
        }
    # ratios per round (same round = same machine conditions), then the median
    rounds = sorted({r["round"] for r in runs})

    def ratio(a: str, b: str) -> float | None:
        values = []
        for k in rounds:
            ra = [r for r in runs if r["round"] == k and r["mode"] == a]
            rb = [r for r in runs if r["round"] == k and r["mode"] == b]
            if ra and rb:
                values.append(ra[0]["sent_per_s"] / rb[0]["sent_per_s"])
        return statistics.median(values) if values else None

    summary["ratios"] = {
        "ours_beam / nocache_beam": ratio("ours_beam", "nocache_beam"),
        "ours_greedy / ref_greedy": ratio("ours_greedy", "ref_greedy"),
        "ours_beam / ref_greedy": ratio("ours_beam", "ref_greedy"),
        "ours_beam_bf16 / ours_beam": ratio("ours_beam_bf16", "ours_beam"),
    }
    return summary


def markdown(summary: dict, meta: dict) -> str:
    lines = [
        "# Decoding speed: fixed 30-token outputs, beam 5, batch 64, small model (3+3, d 256), "
        f"{meta['threads']} thread(s)",
        "",
        f"Measured {meta['date']} on {meta['machine']}, torch {meta['torch']}, {meta['rounds']} rounds "
        f"(median, min-max), output vocabulary {meta['vocab_size']}. Command: `{meta['command']}`.",
        "",
        "| mode | sentences | sent/s median (min-max) | peak RSS MB | other processes' CPU (max, cores) "
        "| load avg before each run |",
        "|---|---|---|---|---|---|",
    ]
    for mode in MODES:
        if mode in summary:
            s = summary[mode]
            lines.append(
                f"| {mode} | {s['sentences']} | {s['sent_per_s_median']:.1f} ({s['sent_per_s_min']:.1f}-"
                f"{s['sent_per_s_max']:.1f}) | {s['peak_rss_mb_median']:.0f} "
                f"| {s['other_cpu_cores_max']:.2f} | {', '.join(map(str, s['load_before']))} |"
            )
    lines += ["", "Ratios (per round, median):", ""]
    for name, value in summary["ratios"].items():
        lines.append(f"- {name}: {'n/a' if value is None else f'{value:.2f}'}")
    lines += [
        "",
        "Peers on this machine (peers/README.md, quiet machine, same setting, fp32; not re-run here):",
        "",
    ]
    ours = summary.get("ours_beam", {}).get("sent_per_s_median")
    for name, speed in PEER_FIGURES.items():
        rel = f" (ours_beam / this = {ours / speed:.2f})" if ours else ""
        lines.append(f"- {name}: {speed} sent/s{rel}")
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=MODES)
    parser.add_argument("--data")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument(
        "--floor-n",
        type=int,
        default=64,
        help="sentences (the first ones) for the slow modes without a cache",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=30)
    parser.add_argument(
        "--joint-vocab",
        action="store_true",
        help="one joint source+target vocabulary (ours in practice) instead of the peers' target side",
    )
    parser.add_argument("--out", default=str(RESULTS / "decode"))
    args = parser.parse_args()
    if args.worker:
        result = worker(args)
        result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
        return

    import torch

    from nmtvariants.fileio import atomic_write

    modes = [m for m in args.modes.split(",") if m]
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        make_data(data)
        for k in range(args.rounds):
            rotated = modes[k % len(modes) :] + modes[: k % len(modes)]
            for mode in rotated:
                result = run_mode(mode, args, data)
                result["round"] = k + 1
                runs.append(result)
                print(json.dumps(result), flush=True)
    summary = summarise(runs)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()} {os.cpu_count()} CPUs",
        "torch": torch.__version__,
        "rounds": args.rounds,
        "threads": args.threads,
        "vocab_size": runs[0]["vocab_size"] if runs else None,
        "command": "python benchmarks/decode.py " + " ".join(sys.argv[1:]),
    }
    out = Path(args.out)
    with atomic_write(out.with_suffix(".json")) as handle:
        json.dump({"meta": meta, "summary": summary, "runs": runs}, handle, indent=2)
    with atomic_write(out.with_suffix(".md")) as handle:
        handle.write(markdown(summary, meta))
    print(markdown(summary, meta))


if __name__ == "__main__":
    main()
