"""Where a workflow run's wall time goes: job seconds per rule, read from a Snakemake log.

Snakemake stamps the time before each job it starts (``[<date>]`` then ``rule <name>:`` ...
``jobid: N``) and before each job it finishes (``[<date>]`` then ``Finished jobid: N``). A job's
seconds are the difference (one-second resolution); a rule's total is the sum over its jobs. With
``--cores 2`` two jobs overlap, so the totals add up to about twice the wall time: they say which
rules cost the run's cores, the question for the demo's budget.

    python benchmarks/demo_jobs.py before=<a>.snakemake.log after=<b>.snakemake.log \\
        --output benchmarks/results/demo_jobs

writes ``demo_jobs.json`` and ``demo_jobs.md``: each log's jobs and job seconds per rule side by side,
and the ratio of the last log's seconds to the first's; and, per log, how long 0, 1, 2, ... jobs ran at
once (``--cores``: what the run had), so that the idle core-minutes of a run (a single long job at the
end, a gate that holds back the next jobs) show beside its job seconds: how well it was scheduled.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from datetime import datetime
from pathlib import Path

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
STARTED = re.compile(r"^(?:local)?rule (\w+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
FINISHED = re.compile(r"^Finished jobid: (\d+)")


def job_intervals(log: str) -> tuple[list[tuple[str, float, float]], float]:
    """(rule, start s, end s) of every finished job, seconds from the log's first stamp, and the log's
    first-to-last stamp seconds."""
    stamp: datetime | None = None
    first: datetime | None = None
    rule_of: dict[str, str] = {}
    started: dict[str, datetime] = {}
    pending_rule: str | None = None
    intervals: list[tuple[str, float, float]] = []
    for line in log.splitlines():
        if match := STAMP.match(line):
            stamp = datetime.strptime(" ".join(match.group(1).split()), "%a %b %d %H:%M:%S %Y")
            first = first or stamp
        elif match := STARTED.match(line):
            pending_rule = match.group(1)
        elif (match := JOBID.match(line)) and pending_rule and stamp:
            rule_of[match.group(1)] = pending_rule
            started[match.group(1)] = stamp
            pending_rule = None
        elif (match := FINISHED.match(line)) and stamp and first and match.group(1) in started:
            job = match.group(1)
            begin = (started[job] - first).total_seconds()
            intervals.append((rule_of[job], begin, (stamp - first).total_seconds()))
    span = (stamp - first).total_seconds() if stamp and first else 0.0
    return intervals, span


def seconds_per_rule(intervals: list[tuple[str, float, float]]) -> dict[str, list[float]]:
    """Rule -> seconds of each of its jobs."""
    seconds: dict[str, list[float]] = defaultdict(list)
    for rule, begin, end in intervals:
        seconds[rule].append(end - begin)
    return dict(seconds)


def job_seconds(log: str) -> tuple[dict[str, list[float]], float]:
    """Rule -> seconds of each of its finished jobs, and the log's first-to-last stamp seconds."""
    intervals, span = job_intervals(log)
    return seconds_per_rule(intervals), span


def occupancy(intervals: list[tuple[str, float, float]], span: float) -> dict[int, float]:
    """Number of jobs running at once -> seconds of the span with that many (a sweep over the starts
    and ends; the target rule ``all`` does not count)."""
    events = sorted(
        [(begin, 1) for rule, begin, _ in intervals if rule != "all"]
        + [(end, -1) for rule, _, end in intervals if rule != "all"]
    )
    seconds: dict[int, float] = defaultdict(float)
    running, last = 0, 0.0
    for moment, change in events:
        seconds[running] += moment - last
        running, last = running + change, moment
    seconds[running] += span - last
    return {count: total for count, total in sorted(seconds.items()) if total > 0}


def idle_core_seconds(busy: dict[int, float], cores: int) -> float:
    """Core-seconds with no job on them: each second with n < ``cores`` jobs leaves cores - n idle."""
    return sum((cores - count) * seconds for count, seconds in busy.items() if count < cores)


def rule_totals(seconds: dict[str, list[float]]) -> dict[str, tuple[int, float]]:
    """Rule -> (jobs, total job seconds), without the target rule ``all``."""
    return {rule: (len(values), sum(values)) for rule, values in seconds.items() if rule != "all"}


Run = tuple[dict[str, tuple[int, float]], float, dict[int, float], int]


def markdown(runs: dict[str, Run]) -> str:
    """One column pair (jobs, seconds) per log, rules by the first log's seconds; with two logs or
    more, the ratio of the last log's seconds to the first's. ``runs``: label -> (:func:`rule_totals`,
    span, :func:`occupancy`, cores)."""
    labels = list(runs)
    first = runs[labels[0]][0]
    rules = sorted(
        {rule for totals, *_ in runs.values() for rule in totals}, key=lambda r: -first.get(r, (0, 0))[1]
    )
    header = "| rule | " + " | ".join(f"{label}: jobs | {label}: job s" for label in labels)
    header += " | last / first |" if len(labels) > 1 else " |"
    lines = [header, "|---" * (1 + 2 * len(labels) + (len(labels) > 1)) + "|"]
    for rule in rules:
        cells = []
        for label in labels:
            jobs, total = runs[label][0].get(rule, (0, 0.0))
            cells += [str(jobs), f"{total:.0f}"]
        row = f"| {rule} | " + " | ".join(cells)
        if len(labels) > 1:
            a, b = first.get(rule, (0, 0.0))[1], runs[labels[-1]][0].get(rule, (0, 0.0))[1]
            row += f" | {b / a:.2f}" if a else " | -"
        lines.append(row + " |")
    sums = []
    for label in labels:
        totals, span, busy, cores = runs[label]
        job_minutes = sum(total for _, total in totals.values()) / 60
        at_once = ", ".join(f"{count} for {seconds / 60:.1f} min" for count, seconds in busy.items())
        line = (
            f"- {label}: wall span {span / 60:.1f} min; job seconds {job_minutes:.1f} min over the run's "
            f"cores; {sum(jobs for jobs, _ in totals.values())} jobs; jobs at once: {at_once}; idle "
            f"{idle_core_seconds(busy, cores) / 60:.1f} core-min of {cores} x {span / 60:.1f}"
        )
        sums.append(line)
    title = "# Job seconds per rule, side by side (benchmarks/demo_jobs.py)"
    return "\n".join([title, "", *sums, "", *lines]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "logs",
        nargs="+",
        help="LABEL=PATH of a Snakemake log (.snakemake/log/*.snakemake.log), first the reference",
    )
    parser.add_argument("--output", type=Path, required=True, help="prefix of the .json and .md written")
    parser.add_argument("--cores", type=int, default=2, help="the cores each run had (default 2)")
    args = parser.parse_args(argv)
    runs = {}
    for item in args.logs:
        label, _, path = item.rpartition("=")
        intervals, span = job_intervals(Path(path).read_text(encoding="utf-8"))
        totals = rule_totals(seconds_per_rule(intervals))
        runs[label or Path(path).name] = (totals, span, occupancy(intervals, span), args.cores)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    record = {
        label: {
            "wall_span_s": span,
            "cores": cores,
            "jobs_at_once_s": {str(count): seconds for count, seconds in busy.items()},
            "idle_core_s": idle_core_seconds(busy, cores),
            "rules": {rule: {"jobs": j, "job_s": t} for rule, (j, t) in totals.items()},
        }
        for label, (totals, span, busy, cores) in runs.items()
    }
    args.output.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    text = markdown(runs)
    args.output.with_suffix(".md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
