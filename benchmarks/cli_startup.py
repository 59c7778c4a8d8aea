"""Start-up time of ``nmtvariants <command> --help`` with the lazy dispatch against the full parser.

Every workflow job is a fresh ``nmtvariants <command>`` process, so the start-up is paid once per
job (~240 jobs in ``make demo``). The lazy path (``cli.main``) imports only the stage module that
defines the command; the full path (``cli.build_parser()``, what ``main`` did before, and still does
for ``--help`` alone or an unknown command) imports every stage module. Both run in fresh
processes, interleaved round by round so that load from other processes hits both alike; wall time
and the children's CPU time are reported, with the median over the rounds and the ratio full/lazy.
``--help`` runs the whole parser build and exits before any work, so it is the start-up and nothing
else; the two help texts are also compared (they must be the same).

    PYTHONPATH=src python benchmarks/cli_startup.py [--rounds 5] [--out benchmarks/results]
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
import time
from pathlib import Path

from nmtvariants.fileio import atomic_write

COMMANDS = {
    "tokenize": "text (text/cli.py)",
    "evaluate": "evaluation (evaluation/cli.py)",
    "figure": "figure (reporting/cli.py)",
    "train": "training (training/cli.py)",
    "translate": "inference (inference/cli.py, imports torch)",
}
LAZY = "import sys; from nmtvariants.cli import main; sys.exit(main(sys.argv[1:]))"
FULL = "import sys; from nmtvariants.cli import build_parser; build_parser().parse_args(sys.argv[1:])"
FLOOR = "import sys"


def timed_run(code: str, args: list[str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system of the child) and stdout of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise RuntimeError(f"{args}: exit {result.returncode}: {result.stderr.strip()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, result.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="fresh processes per command and path")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()
    env_note = {key: os.environ.get(key) for key in ("OMP_NUM_THREADS", "PYTHONPATH")}
    if env_note["PYTHONPATH"]:  # relative to the working directory: a result names no machine's folders
        env_note["PYTHONPATH"] = os.pathsep.join(
            os.path.relpath(entry) for entry in env_note["PYTHONPATH"].split(os.pathsep) if entry
        )
    floor = [timed_run(FLOOR, [])[:2] for _ in range(args.rounds)]
    rows = []
    for command, what in COMMANDS.items():
        load_before = os.getloadavg()
        samples: dict[str, list[tuple[float, float]]] = {"lazy": [], "full": []}
        outputs: dict[str, set[str]] = {"lazy": set(), "full": set()}
        for _ in range(args.rounds):
            for path, code in (("lazy", LAZY), ("full", FULL)):
                wall, cpu, stdout = timed_run(code, [command, "--help"])
                samples[path].append((wall, cpu))
                outputs[path].add(stdout)
        load_after = os.getloadavg()
        row: dict[str, object] = {"command": command, "stage": what}
        for path in ("lazy", "full"):
            row[f"{path}_wall_s"] = round(statistics.median(w for w, _ in samples[path]), 3)
            row[f"{path}_cpu_s"] = round(statistics.median(c for _, c in samples[path]), 3)
            row[f"{path}_wall_all_s"] = [round(w, 3) for w, _ in samples[path]]
        row["full_over_lazy_wall"] = round(row["full_wall_s"] / row["lazy_wall_s"], 2)  # type: ignore[operator]
        row["full_over_lazy_cpu"] = round(row["full_cpu_s"] / row["lazy_cpu_s"], 2)  # type: ignore[operator]
        row["same_help_text"] = outputs["lazy"] == outputs["full"] and len(outputs["lazy"]) == 1
        row["load_before"] = [round(x, 2) for x in load_before]
        row["load_after"] = [round(x, 2) for x in load_after]
        rows.append(row)
    record = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
        "env": env_note,
        "rounds": args.rounds,
        "interpreter_floor_wall_s": round(statistics.median(w for w, _ in floor), 3),
        "interpreter_floor_cpu_s": round(statistics.median(c for _, c in floor), 3),
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    with atomic_write(args.out / "cli_startup.json", "w") as out:
        out.write(json.dumps(record, indent=2) + "\n")
    lines = [
        f"`{record['command']}`, {args.rounds} fresh processes per cell (median), lazy and full interleaved; "
        f"{platform.python_version()}, {os.cpu_count()} CPUs. Interpreter floor (`python -c 'import sys'`): "
        f"{record['interpreter_floor_wall_s']} s wall.",
        "",
        "| command `--help` | stage | lazy wall s | full wall s | full / lazy wall | lazy CPU s | full CPU s "
        "| full / lazy CPU | same help | load avg before -> after |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['command']} | {row['stage']} | {row['lazy_wall_s']} | {row['full_wall_s']} "
            f"| {row['full_over_lazy_wall']}x | {row['lazy_cpu_s']} | {row['full_cpu_s']} "
            f"| {row['full_over_lazy_cpu']}x | {'yes' if row['same_help_text'] else 'NO'} "
            f"| {row['load_before'][0]} -> {row['load_after'][0]} |"
        )
    with atomic_write(args.out / "cli_startup.md", "w") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
