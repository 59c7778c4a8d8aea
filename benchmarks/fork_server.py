"""What the fork server saves: the real workflow's jobs with and without it, interleaved, on 2 cores.

Every job of the workflow runs an ``nmtvariants`` command, and in a fresh process a torch command
first spends ~1.5 s of CPU importing torch (nmtvariants.fork_server). With the server (the Snakefile
starts one for a local run) the jobs' commands run in forks of one process that imported the heavy
libraries once; ``NMTV_FORKSERVER=off`` runs every command in its own process, as before.

The workload is the real workflow in a folder where ``make demo`` ran: every job from rule
``--forcerun`` on is run again (``average``: everything after training, ~200 jobs of the demo), once
per arm per round, the arms' order alternating (off on, on off, ...). Per run: the wall time; the CPU
seconds of the whole machine over the run (from /proc/stat: served commands are not Snakemake's
children, so its resource usage would miss them); job seconds per rule from Snakemake's log
(benchmarks/demo_jobs.py); and which result files differ from the previous arm's (the decoding-speed
tables must, nothing else may).

    PYTHONPATH=src:benchmarks python benchmarks/fork_server.py --workdir DEMO [--rounds 2]

Writes ``benchmarks/results/fork_server.json`` and ``.md`` (``--out`` to move them).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from demo_jobs import job_seconds, rule_totals
from result_files import write_record

from nmtvariants.fork_server import ENV, OFF
from nmtvariants.hardware import benchmark_machine

RESULTS = Path(__file__).resolve().parent / "results"
ARMS = ("off", "on")


def busy_cpu_s() -> float:
    """Seconds the machine's CPUs have spent not idle since boot (/proc/stat's first line)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def result_hashes(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted((folder / "results").rglob("*"))
        if path.is_file() and path.suffix in (".md", ".csv")
    }


def run_arm(folder: Path, arm: str, forcerun: str) -> dict:
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    env.pop(ENV, None)
    if arm == "off":
        env[ENV] = OFF
    logs = set((folder / ".snakemake" / "log").glob("*.snakemake.log"))
    command = [str(Path(sys.executable).with_name("snakemake")), "--cores", "2", "--forcerun", forcerun]
    busy, start = busy_cpu_s(), time.perf_counter()
    result = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - start, busy_cpu_s() - busy
    if result.returncode != 0:
        raise RuntimeError(f"snakemake ({arm}) failed: {result.stderr[-2000:]}")
    (log,) = set((folder / ".snakemake" / "log").glob("*.snakemake.log")) - logs
    seconds, _ = job_seconds(log.read_text())
    return {
        "wall_s": wall,
        "machine_cpu_s": cpu,
        "rules": rule_totals(seconds),
        "hashes": result_hashes(folder),
    }


def markdown(record: dict) -> str:
    meta, rounds = record["meta"], record["rounds"]
    walls = {arm: [r[arm]["wall_s"] for r in rounds] for arm in ARMS}
    cpus = {arm: [r[arm]["machine_cpu_s"] for r in rounds] for arm in ARMS}
    lines = [
        "# The fork server: the workflow's jobs with and without it (benchmarks/fork_server.py)",
        "",
        f"Measured {meta['date']} on {meta['machine']['cpu']}, {meta['machine']['cpus']} cores, Python "
        f"{meta['machine']['python']}. Workload: {meta['workload']}. Arms interleaved, order alternating "
        f"by round. What else ran: {meta['beside']}. Command: `{meta['command']}`.",
        "",
        "| round | order | off: wall s | on: wall s | off / on wall | off: machine CPU s | on: machine "
        "CPU s | off / on CPU |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for number, run in enumerate(rounds, start=1):
        off, on = run["off"], run["on"]
        lines.append(
            f"| {number} | {' '.join(run['order'])} | {off['wall_s']:.1f} | {on['wall_s']:.1f} | "
            f"{off['wall_s'] / on['wall_s']:.2f} | {off['machine_cpu_s']:.0f} | {on['machine_cpu_s']:.0f} | "
            f"{off['machine_cpu_s'] / on['machine_cpu_s']:.2f} |"
        )
    lines += [
        "",
        f"Median: wall {statistics.median(walls['off']):.1f} -> {statistics.median(walls['on']):.1f} s "
        f"(**{statistics.median(walls['off']) / statistics.median(walls['on']):.2f}x**), machine CPU "
        f"{statistics.median(cpus['off']):.0f} -> {statistics.median(cpus['on']):.0f} s "
        f"(**{statistics.median(cpus['off']) / statistics.median(cpus['on']):.2f}x**).",
        "",
        "Result tables (`results/**/*.md`, `.csv`) that differed between consecutive runs: "
        + (", ".join(f"`{name}`" for name in record["differing_tables"]) or "none")
        + " (decoding speed is measured, so its tables differ from run to run; every other table is the "
        "same byte for byte).",
        "",
        "Job seconds per rule (the last round; Snakemake's log, one-second stamps), largest savings first:",
        "",
        "| rule | jobs | off: job s | on: job s | off / on |",
        "|---|---:|---:|---:|---:|",
    ]
    last = rounds[-1]
    rules = set(last["off"]["rules"]) | set(last["on"]["rules"])
    saving = {
        rule: last["off"]["rules"].get(rule, (0, 0))[1] - last["on"]["rules"].get(rule, (0, 0))[1]
        for rule in rules
    }
    for rule in sorted(rules, key=lambda r: -saving[r]):
        jobs, off_s = last["off"]["rules"].get(rule, (0, 0.0))
        on_s = last["on"]["rules"].get(rule, (0, 0.0))[1]
        ratio = f"{off_s / on_s:.2f}" if on_s else "-"
        lines.append(f"| {rule} | {jobs} | {off_s:.0f} | {on_s:.0f} | {ratio} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True, help="a folder where `make demo` ran")
    parser.add_argument("--forcerun", default="average", help="run every job from this rule on again")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--beside", default="nothing else (quiet machine)", help="what else ran")
    parser.add_argument("--date", default=time.strftime("%Y-%m-%d"))
    parser.add_argument("--out", type=Path, default=RESULTS / "fork_server")
    args = parser.parse_args()
    folder = args.workdir.resolve()
    rounds, differing, previous = [], set(), None
    for number in range(args.rounds):
        order = ARMS if number % 2 == 0 else ARMS[::-1]
        run = {"order": list(order)}
        for arm in order:
            run[arm] = run_arm(folder, arm, args.forcerun)
            hashes = run[arm].pop("hashes")
            if previous is not None:
                differing |= {name for name in hashes if hashes[name] != previous.get(name)}
            previous = hashes
            print(f"round {number + 1} {arm}: {run[arm]['wall_s']:.1f} s wall", file=sys.stderr)
        rounds.append(run)
    record = {
        "meta": {
            "date": args.date,
            "machine": benchmark_machine(),
            "workload": f"the real workflow where `make demo` ran, every job from rule `{args.forcerun}` on "
            "run again (`snakemake --cores 2 --forcerun`)",
            "beside": args.beside,
            # the folder is the reader's own: named DEMO, as in the module's usage line
            "command": " ".join(
                ["python", *("DEMO" if arg == str(args.workdir) else arg for arg in sys.argv)]
            ),
        },
        "rounds": rounds,
        "differing_tables": sorted(differing),
    }
    write_record(args.out.parent, args.out.name, record, markdown(record))


if __name__ == "__main__":
    main()
