"""What a workflow job pays besides its work: the interpreter's exit and the package's bytecode.

Every job of the workflow is a fresh ``nmtvariants <command>`` process, so both are paid once per job
(~320 jobs in ``make demo``):

- **Exit.** A process that imported torch ends with ~10^6 live Python objects, and the interpreter's
  last garbage collections walk all of them on the way out. ``cli.run`` (the ``nmtvariants``
  executable) calls ``gc.freeze()`` after ``cli.main``, so those collections skip them.
- **Bytecode.** Where ``PYTHONDONTWRITEBYTECODE`` is set (this machine's environment sets it, as
  containers often do), Python compiles every module of the package a job imports, in every job, and
  keeps nothing; ``make sync`` now compiles ``src/`` once.

Three arms, each a fresh process per run, interleaved round by round so that load from other processes
hits all alike: *before* (``cli.main``, a copy of ``src/`` without bytecode), *freeze* (``cli.run``, the
same copy) and *after* (``cli.run``, a copy compiled by ``compileall``), all with
``PYTHONDONTWRITEBYTECODE=1``. The commands do what workflow jobs do, on small inputs made in a
temporary folder: ``average`` of two checkpoints (imports torch, as training, translation and the
analyses do) and ``evaluate`` (BLEU, chrF and TER with sacreBLEU; no torch). Reported: median wall and
CPU seconds per arm, the ratios before / arm, and whether every arm wrote the same bytes.

    PYTHONPATH=src python benchmarks/job_overhead.py [--rounds 9] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nmtvariants.fileio import atomic_write
from nmtvariants.hardware import benchmark_machine

MAIN = "import sys; from nmtvariants.cli import main; sys.exit(main())"
RUN = "import sys; from nmtvariants.cli import run; sys.exit(run())"
# arm -> (entry point, whether its copy of src/ is compiled)
ARMS = {"before": (MAIN, False), "freeze": (RUN, False), "after": (RUN, True)}


def source_copies(folder: Path) -> dict[bool, Path]:
    """Two copies of the package's source: without bytecode, and compiled by ``compileall``."""
    package = Path(__file__).resolve().parents[1] / "src" / "nmtvariants"
    copies = {}
    for compiled in (False, True):
        root = folder / ("compiled" if compiled else "source")
        shutil.copytree(package, root / "nmtvariants", ignore=shutil.ignore_patterns("__pycache__"))
        if compiled:
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(root)], check=True)
        copies[compiled] = root
    return copies


def make_inputs(folder: Path) -> dict[str, tuple[list[str], Path]]:
    """Each command's arguments and the output file it writes (removed before every run)."""
    import torch

    from nmtvariants.training.checkpoints import save_checkpoint

    generator = torch.Generator().manual_seed(0)
    for name in ("a.pt", "b.pt"):
        weights = {"layer.weight": torch.randn(64, 64, generator=generator)}
        save_checkpoint({"model": weights, "model_config": {}, "vocab_size": 64}, folder / name)
    sentences = [f"the red cube is next to the ball number {i} ." for i in range(300)]
    (folder / "ref.txt").write_text("\n".join(sentences) + "\n")
    (folder / "hyp.txt").write_text("\n".join(s.replace("next to", "near") for s in sentences) + "\n")
    return {
        "average (torch)": (
            ["average", "--inputs", str(folder / "a.pt"), str(folder / "b.pt"),
             "--output", str(folder / "avg.pt")],
            folder / "avg.pt",
        ),
        "evaluate (sacreBLEU)": (
            [
                "evaluate", "--hyp", str(folder / "hyp.txt"), "--ref", str(folder / "ref.txt"), "-l", "en",
                "--metrics", "bleu,chrf,ter", "--system", "s", "--testset", "t",
                "--json", str(folder / "s.json"),
            ],
            folder / "s.json",
        ),
    }  # fmt: skip


def timed_run(code: str, args: list[str], output: Path, source: Path) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system of the child) and the sha256 of ``output``, with the
    package imported from ``source``."""
    output.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(source), "PYTHONDONTWRITEBYTECODE": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=False, env=env
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise RuntimeError(f"{args[0]}: exit {result.returncode}: {result.stderr.strip()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    digest = hashlib.sha256(output.read_bytes()).hexdigest()
    return wall, cpu, digest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="fresh processes per command and arm")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        copies = source_copies(Path(scratch))
        for command, (arguments, output) in make_inputs(Path(scratch)).items():
            samples: dict[str, list[tuple[float, float]]] = {arm: [] for arm in ARMS}
            digests: set[str] = set()
            load_before = os.getloadavg()[0]
            for _ in range(args.rounds):
                for arm, (code, compiled) in ARMS.items():
                    wall, cpu, digest = timed_run(code, arguments, output, copies[compiled])
                    samples[arm].append((wall, cpu))
                    digests.add(digest)
            row: dict[str, object] = {"command": command, "load_before": round(load_before, 2)}
            for arm in ARMS:
                row[f"{arm}_wall_s"] = round(statistics.median(w for w, _ in samples[arm]), 3)
                row[f"{arm}_cpu_s"] = round(statistics.median(c for _, c in samples[arm]), 3)
                row[f"{arm}_wall_all_s"] = [round(w, 3) for w, _ in samples[arm]]
            for arm in ("freeze", "after"):
                row[f"before_over_{arm}_cpu"] = round(row["before_cpu_s"] / row[f"{arm}_cpu_s"], 2)  # type: ignore[operator]
            row["saved_cpu_s"] = round(row["before_cpu_s"] - row["after_cpu_s"], 3)  # type: ignore[operator]
            row["same_output"] = len(digests) == 1
            row["load_after"] = round(os.getloadavg()[0], 2)
            rows.append(row)
    record = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": benchmark_machine(),
        "rounds": args.rounds,
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    with atomic_write(args.out / "job_overhead.json", "w") as out:
        out.write(json.dumps(record, indent=2) + "\n")
    lines = [
        "# What a workflow job pays besides its work: the interpreter's exit and the package's bytecode",
        "",
        f"`{record['command']}` on {record['date']}: {record['machine']['cpu']}, Python "
        f"{record['machine']['python']}; {args.rounds} fresh processes per cell (median), the arms "
        "interleaved; `PYTHONDONTWRITEBYTECODE=1`. *before*: `cli.main`, `src/` without bytecode; "
        "*freeze*: `cli.run` (gc.freeze before the exit), the same source; *after*: `cli.run`, `src/` "
        "compiled (what `make sync` now does).",
        "",
        "| command | before CPU s | freeze CPU s | after CPU s | before / freeze | before / after "
        "| CPU s saved per job | before wall s | after wall s | same output | load avg before -> after |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['command']} | {row['before_cpu_s']} | {row['freeze_cpu_s']} | {row['after_cpu_s']} "
            f"| {row['before_over_freeze_cpu']}x | {row['before_over_after_cpu']}x | {row['saved_cpu_s']} "
            f"| {row['before_wall_s']} | {row['after_wall_s']} | {'yes' if row['same_output'] else 'NO'} "
            f"| {row['load_before']} -> {row['load_after']} |"
        )
    with atomic_write(args.out / "job_overhead.md", "w") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
