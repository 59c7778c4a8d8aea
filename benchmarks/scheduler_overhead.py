"""What Snakemake's own process costs while jobs wait for cores: its re-scheduling timers.

Snakemake 9 limits job starts to ``--max-jobs-per-timespan`` (default 100 per 1 s). After every
scheduling round that leaves a ready job waiting, it starts a timer of that span for another round;
each finished job starts a round of its own, so while jobs wait for cores every finished job adds a
round per span, and each round re-evaluates the params and resources of every ready job. On 2 cores
that process shares the cores with the jobs. The workflow profile (``profiles/default/config.yaml``)
sets 500 per 5 s.

Two arms, Snakemake's default span and the profile's, both with the greedy scheduler and
``--workflow-profile none``, interleaved round by round, on 2 cores:

- synthetic (default): a workflow in a temporary folder, ``--jobs`` jobs that each sleep ``--sleep``
  seconds (no CPU of their own), all ready at once, each with a params function and 8 input files, and
  the Snakefile's cancelling of the timers left at the end (without it a run ends up to one span late);
- ``--workdir DIR --forcerun RULE``: the real workflow in a folder where it has run (a finished
  ``make demo``), every job from RULE on run again (``--forcerun average``: everything after training,
  ~250 jobs of the demo) with ``--configfile config.yaml``.

Reported per arm (median over rounds): the wall time, Snakemake's own CPU seconds (its process alone,
read from /proc every 0.25 s), the CPU seconds of its jobs (the rest of the exit's resource usage), the
peak thread count, and the ratios default / profile.

    PYTHONPATH=src python benchmarks/scheduler_overhead.py [--rounds 3] [--jobs 160] [--sleep 0.5]
    PYTHONPATH=src python benchmarks/scheduler_overhead.py --workdir DEMO --forcerun average --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nmtvariants.fileio import atomic_write
from nmtvariants.hardware import benchmark_machine

ARMS = {"default (100/1s)": "100/1s", "profile (500/5s)": "500/5s"}
SNAKEFILE = """
import json
import threading

N = {jobs}


def cancel_rescheduling_timers():  # as the workflow's Snakefile does at the end of a run
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.cancel()


onsuccess:
    cancel_rescheduling_timers()


def settings(wildcards):
    return json.dumps({{"run": wildcards.i, "layers": list(range(12)), "lr": 1e-3}}, sort_keys=True)


rule all:
    input: expand("out/{{i}}.txt", i=range(N))


rule source:
    output: "in/{{k}}.txt"
    shell: "touch {{output}}"


rule work:
    input: [f"in/{{k}}.txt" for k in range(8)]
    output: "out/{{i}}.txt"
    params: settings=settings
    threads: 1
    resources: mem_mb=lambda wildcards, input: 100 + len(input)
    shell: "sleep {sleep}; echo {{params.settings:q}} > {{output}}"
"""


def own_cpu_s(pid: int) -> float:
    """User + system seconds of process ``pid`` itself (not its children), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_arm(folder: Path, span: str, extra: list[str]) -> dict[str, float]:
    """One run: wall s, CPU s of Snakemake itself and of its jobs, the peak thread count."""
    if not extra:  # the synthetic workflow, from scratch
        for name in ("in", "out", ".snakemake"):
            shutil.rmtree(folder / name, ignore_errors=True)
    snakemake = Path(sys.executable).with_name("snakemake")
    command = [
        str(snakemake), "--cores", "2", "--scheduler", "greedy", "--workflow-profile", "none",
        "--max-jobs-per-timespan", span, "--quiet", *extra,
    ]  # fmt: skip
    start = time.perf_counter()
    env = {**os.environ, "PATH": os.pathsep.join([str(snakemake.parent), os.environ["PATH"]])}  # nmtvariants
    process = subprocess.Popen(
        command, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    peak_threads, own = 0, 0.0
    while True:  # os.wait4, not Popen.poll: the exit's resource usage is the measurement
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        try:
            peak_threads = max(peak_threads, len(os.listdir(f"/proc/{process.pid}/task")))
            own = own_cpu_s(process.pid)
        except (FileNotFoundError, ProcessLookupError):  # exiting: wait4 reaps it next
            pass
        time.sleep(0.25)
    wall = time.perf_counter() - start
    if status != 0:
        raise RuntimeError(f"snakemake ({span}): wait status {status}: {process.stderr.read()[-500:]!r}")
    total = usage.ru_utime + usage.ru_stime
    return {"wall_s": wall, "own_cpu_s": own, "jobs_cpu_s": total - own, "peak_threads": peak_threads}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=160, help="synthetic: the number of jobs")
    parser.add_argument("--sleep", type=float, default=0.5, help="synthetic: seconds each job sleeps")
    parser.add_argument("--workdir", type=Path, help="a folder where the workflow has run (real mode)")
    parser.add_argument("--forcerun", default="average", help="real mode: run every job from this rule on")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/scheduler_overhead"))
    args = parser.parse_args()
    samples: dict[str, list[dict[str, float]]] = {arm: [] for arm in ARMS}
    with tempfile.TemporaryDirectory() as scratch:
        if args.workdir:
            folder = args.workdir.resolve()
            extra = ["--configfile", "config.yaml", "--forcerun", args.forcerun]
            workload = (
                f"the real workflow in a folder where `make demo` ran, every job from rule `{args.forcerun}` "
                "on run again (`--forcerun`)"
            )
        else:
            folder, extra = Path(scratch), []
            (folder / "Snakefile").write_text(SNAKEFILE.format(jobs=args.jobs, sleep=args.sleep))
            workload = (
                f"a synthetic workflow: {args.jobs} jobs that sleep {args.sleep} s each "
                f"(ideal wall {args.jobs * args.sleep / 2:.0f} s)"
            )
        for _ in range(args.rounds):
            for arm, span in ARMS.items():
                samples[arm].append(run_arm(folder, span, extra))
    keys = ("wall_s", "own_cpu_s", "jobs_cpu_s", "peak_threads")
    rows = []
    for arm in ARMS:
        row: dict[str, object] = {"arm": arm}
        for key in keys:
            row[key] = round(statistics.median(s[key] for s in samples[arm]), 2)
            row[f"{key}_all"] = [round(s[key], 2) for s in samples[arm]]
        rows.append(row)
    default, profile = rows
    record = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": benchmark_machine(),
        "snakemake": subprocess.run(
            [str(Path(sys.executable).with_name("snakemake")), "--version"], capture_output=True, text=True
        ).stdout.strip(),
        "workload": workload,
        "rounds": args.rounds,
        "rows": rows,
        "ratios_default_over_profile": {
            key: round(default[key] / profile[key], 3)  # type: ignore[operator]
            for key in ("wall_s", "own_cpu_s", "jobs_cpu_s")
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(args.out.with_suffix(".json"), "w") as out:
        out.write(json.dumps(record, indent=2) + "\n")
    ratios = record["ratios_default_over_profile"]
    lines = [
        "# Snakemake's own CPU while jobs wait for cores: the re-scheduling span",
        "",
        f"`{record['command']}` on {record['date']}: {record['machine']['cpu']}, Python "
        f"{record['machine']['python']}, Snakemake {record['snakemake']}, 2 cores. Workload: {workload}. "
        f"Greedy scheduler, the arms interleaved, median of {args.rounds} round(s). *Snakemake CPU*: its "
        "own process; *jobs CPU*: everything it started.",
        "",
        "| arm | wall s | Snakemake CPU s | jobs CPU s | peak threads | Snakemake CPU s per round |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['arm']} | {row['wall_s']} | {row['own_cpu_s']} | {row['jobs_cpu_s']} "
            f"| {row['peak_threads']:.0f} | {' / '.join(str(v) for v in row['own_cpu_s_all'])} |"  # type: ignore[union-attr]
        )
    lines += [
        "",
        f"Default / profile: wall **{ratios['wall_s']}x**, Snakemake CPU **{ratios['own_cpu_s']}x**, "
        f"jobs CPU {ratios['jobs_cpu_s']}x. Both Snakefiles cancel the timers left at the end of a run "
        "(without that, a run with the profile's span can end up to 5 s after its last job).",
    ]
    with atomic_write(args.out.with_suffix(".md"), "w") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
