"""fp32 matrix products of the models' own shapes on one core, through the BLAS libraries at hand.

Training and beam search on CPU spend most of their time in fp32 matrix products (``toy_train_profile``,
``decode_ct2 --profile``), and PyTorch's ``F.linear``/``torch.mm`` send every one of them to Intel MKL's
sgemm. On AMD CPUs MKL is known to pick code paths by vendor, not by the instructions the core has;
oneDNN (which PyTorch also ships, and which CTranslate2 uses on AMD) and OpenBLAS (numpy's wheel)
dispatch on the instruction set. How much faster a model could run with another BLAS is therefore a
question of these shapes on this core, which this script answers:

* ``torch_mm``: ``torch.mm`` (MKL sgemm, what ``F.linear`` does);
* ``onednn_linear``: ``torch.ops.mkldnn._linear_pointwise`` (oneDNN's inner product, dense tensors);
* ``numpy``: ``numpy.matmul`` (the wheel's OpenBLAS, one thread through ``OPENBLAS_NUM_THREADS``);
* ``torch_mm_avx512``: ``torch.mm`` in a child process that let MKL take its AVX-512 kernels on AMD
  before importing torch (``nmtvariants.mkl_dispatch``, what every ``nmtvariants`` command does); the
  child serves one measurement at a time, so the rounds interleave it with the others;
* ``torch_mm_bf16``: ``torch.mm`` on bfloat16 copies of both operands (oneDNN's brgemm, what
  ``--dtype bfloat16`` and bf16 autocast run): whether bf16 is the faster mode on this core at all.

Each shape is [rows x in] @ [in x out], the way a linear layer multiplies a batch: the small model's
training batch (~4,000 tokens), its beam search (64 sentences x beam 5 = 320 rows), and the toy model's
batch (~1,000 tokens, d 64). Rounds rotate the backends; GFLOP/s is the median over the rounds, and
the ratio to ``torch_mm`` is taken within each round. Run on a quiet machine::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python benchmarks/cpu_gemm.py --rounds 5

Writes ``benchmarks/results/cpu_gemm.json`` and ``.md`` (``--out`` to move them).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from result_files import write_record

from nmtvariants.hardware import cpu_model

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
# (what the product is, rows, in, out)
SHAPES = (
    ("small, training: attention projection", 4000, 256, 256),
    ("small, training: FFN in", 4000, 256, 1024),
    ("small, training: FFN out", 4000, 1024, 256),
    ("small, training: vocabulary (8,000)", 4000, 256, 8000),
    ("small, beam search: attention projection", 320, 256, 256),
    ("small, beam search: FFN in", 320, 256, 1024),
    ("small, beam search: vocabulary (8,000)", 320, 256, 8000),
    ("tiny (toy), training: FFN in", 1024, 64, 256),
    ("tiny (toy), training: vocabulary (519)", 1024, 64, 519),
)
BACKENDS = ("torch_mm", "onednn_linear", "numpy", "torch_mm_avx512", "torch_mm_bf16")


def operands(rows: int, inner: int, out: int):
    """A batch [rows, in] and a linear layer's weight [out, in] (nn.Linear's layout), seeded."""
    import torch

    generator = torch.Generator().manual_seed(0)
    return torch.randn(rows, inner, generator=generator), torch.randn(out, inner, generator=generator)


def product(backend: str, x, weight) -> Callable[[], object]:
    """A closure computing ``x @ weight.T`` with the backend (any operand conversion made once)."""
    import numpy as np
    import torch

    if backend == "torch_mm":
        weight_t = weight.t()
        return lambda: torch.mm(x, weight_t)
    if backend == "onednn_linear":
        bias = torch.zeros(weight.size(0))
        return lambda: torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")
    if backend == "torch_mm_bf16":
        x_bf16, weight_bf16_t = x.bfloat16(), weight.bfloat16().t()
        return lambda: torch.mm(x_bf16, weight_bf16_t)
    x_np, weight_np = x.numpy(), np.ascontiguousarray(weight.t().numpy())
    return lambda: np.matmul(x_np, weight_np)


def gflops(run: Callable[[], object], flops: float, min_seconds: float) -> float:
    """GFLOP/s of ``run`` over at least ``min_seconds`` (after two warm-up calls)."""
    run()
    run()
    calls, start = 0, time.perf_counter()
    while True:
        run()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return flops * calls / elapsed / 1e9


def serve_avx512_products() -> None:
    """Child process: MKL's AVX-512 kernels, then one ``rows inner out min_seconds`` line at a time,
    answered with the GFLOP/s of ``torch.mm`` at that shape."""
    from nmtvariants.mkl_dispatch import use_fast_mkl_kernels

    print(use_fast_mkl_kernels(), flush=True)
    import torch

    torch.set_num_threads(1)
    for line in sys.stdin:
        rows, inner, out, min_seconds = line.split()
        x, weight = operands(int(rows), int(inner), int(out))
        rate = gflops(
            product("torch_mm", x, weight), 2.0 * int(rows) * int(inner) * int(out), float(min_seconds)
        )
        print(rate, flush=True)


class Avx512Child:
    """The serving child of :func:`serve_avx512_products`, measured like an in-process backend."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve-avx512"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.status = self.process.stdout.readline().strip()

    def rate(self, rows: int, inner: int, out: int, min_seconds: float) -> float:
        self.process.stdin.write(f"{rows} {inner} {out} {min_seconds}\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def available(backend: str) -> bool:
    import torch

    if backend != "onednn_linear":
        return True
    try:
        x, w = torch.ones(2, 2), torch.ones(2, 2)
        torch.ops.mkldnn._linear_pointwise(x, w, torch.zeros(2), "none", [], "")
    except (AttributeError, RuntimeError):
        return False
    return True


def markdown(result: dict) -> str:
    meta = result["meta"]
    backends = meta["backends"]
    lines = [
        "# Matrix products of the models' shapes on one core, fp32 and bf16 (benchmarks/cpu_gemm.py)",
        "",
        f"Measured {meta['date']} on {meta['cpu']}, 1 thread, torch {meta['torch']} (MKL sgemm), numpy "
        f"{meta['numpy']} ({meta['numpy_blas']}); {meta['rounds']} rounds, backends rotated, at least "
        f"{meta['min_seconds']} s per measurement. MKL in torch_mm: {meta.get('torch_mm_kernels', '-')};"
        f" in torch_mm_avx512: {meta.get('torch_mm_avx512_kernels', '-')}."
        f" What else ran: {meta['beside']}. Command: "
        f"`{meta['command']}`.",
        "",
        "| product | rows x in x out | "
        + " | ".join(f"{b} GFLOP/s" for b in backends)
        + " | "
        + " | ".join(f"{b} / torch_mm" for b in backends if b != "torch_mm")
        + " |",
        "|---|---|" + "---:|" * (2 * len(backends) - 1),
    ]
    for row in result["shapes"]:
        rates = " | ".join(f"{row['gflops'][b]:.1f}" for b in backends)
        ratios = " | ".join(
            f"{row['ratio'][b]:.2f} ({min(row['ratios'][b]):.2f}-{max(row['ratios'][b]):.2f})"
            for b in backends
            if b != "torch_mm"
        )
        lines.append(f"| {row['what']} | {row['rows']} x {row['in']} x {row['out']} | {rates} | {ratios} |")
    lines += ["", "GFLOP/s: median over the rounds; ratios: median of the per-round ratios (range).", ""]
    return "\n".join(lines)


def numpy_blas() -> str:
    import numpy as np

    try:
        config = np.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except (TypeError, KeyError):
        return "unknown BLAS"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--min-seconds", type=float, default=0.3, help="per measurement")
    parser.add_argument("--beside", default="nothing else (quiet machine)", help="what else ran")
    parser.add_argument("--date", default=time.strftime("%Y-%m-%d"))
    parser.add_argument("--out", type=Path, default=RESULTS / "cpu_gemm")
    parser.add_argument("--serve-avx512", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_avx512:
        serve_avx512_products()
        return
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1":
        parser.error("set OPENBLAS_NUM_THREADS=1 (numpy's OpenBLAS reads it when it loads)")
    import numpy as np
    import torch

    from nmtvariants.mkl_dispatch import status

    torch.set_num_threads(1)
    backends = [b for b in BACKENDS if available(b)]
    child = Avx512Child()
    shapes = []
    for what, rows, inner, out in SHAPES:
        flops = 2.0 * rows * inner * out
        x, weight = operands(rows, inner, out)
        runs = {backend: product(backend, x, weight) for backend in backends if backend != "torch_mm_avx512"}
        runs["torch_mm_avx512"] = lambda: child.rate(rows, inner, out, args.min_seconds)  # noqa: B023
        rates: dict[str, list[float]] = {backend: [] for backend in backends}
        for round_ in range(args.rounds):
            order = backends[round_ % len(backends) :] + backends[: round_ % len(backends)]
            for backend in order:
                rates[backend].append(
                    runs[backend]()
                    if backend == "torch_mm_avx512"
                    else gflops(runs[backend], flops, args.min_seconds)
                )
        ratios = {b: [r / t for r, t in zip(rates[b], rates["torch_mm"], strict=True)] for b in backends}
        shapes.append({
            "what": what, "rows": rows, "in": inner, "out": out,
            "rates": rates,
            "gflops": {b: statistics.median(rates[b]) for b in backends},
            "ratios": ratios,
            "ratio": {b: statistics.median(ratios[b]) for b in backends},
        })  # fmt: skip
        print(what, {b: round(statistics.median(rates[b]), 1) for b in backends}, flush=True)
    meta = {
        "date": args.date,
        "cpu": cpu_model(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "numpy_blas": numpy_blas(),
        "backends": backends,
        "torch_mm_kernels": status(),
        "torch_mm_avx512_kernels": child.status,
        "rounds": args.rounds,
        "min_seconds": args.min_seconds,
        "beside": args.beside,
        "command": f"OPENBLAS_NUM_THREADS=1 python benchmarks/cpu_gemm.py --rounds {args.rounds}",
    }
    child.close()
    result = {"meta": meta, "shapes": shapes}
    write_record(args.out.parent, args.out.name, result, markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
