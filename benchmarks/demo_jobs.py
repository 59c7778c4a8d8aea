"""Where a workflow run's wall time goes: job seconds per rule, read from a Snakemake log.

Snakemake stamps the time before each job it starts (``[<date>]`` then ``rule <name>:`` ...
``jobid: N``) and before each job it finishes (``[<date>]`` then ``Finished jobid: N``). A job's
seconds are the difference (one-second resolution); a rule's total is the sum over its jobs. With
``--cores 2`` two jobs overlap, so the totals add up to about twice the wall time: they say which
rules cost the run's cores, the question for the demo's budget.

    python benchmarks/demo_jobs.py .snakemake/log/<run>.snakemake.log --output benchmarks/results/demo_jobs

writes ``demo_jobs.json`` and ``demo_jobs.md`` (rules by total seconds, with counts and means).
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


def job_seconds(log: str) -> tuple[dict[str, list[float]], float]:
    """Rule -> seconds of each of its finished jobs, and the log's first-to-last stamp seconds."""
    stamp: datetime | None = None
    first: datetime | None = None
    rule_of: dict[str, str] = {}
    started: dict[str, datetime] = {}
    pending_rule: str | None = None
    seconds: dict[str, list[float]] = defaultdict(list)
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
        elif (match := FINISHED.match(line)) and stamp and match.group(1) in started:
            job = match.group(1)
            seconds[rule_of[job]].append((stamp - started[job]).total_seconds())
    span = (stamp - first).total_seconds() if stamp and first else 0.0
    return dict(seconds), span


def summary_rows(seconds: dict[str, list[float]]) -> list[dict[str, float | int | str]]:
    rows = [
        {"rule": rule, "jobs": len(values), "total_s": sum(values), "mean_s": sum(values) / len(values)}
        for rule, values in seconds.items()
        if rule != "all"
    ]
    return sorted(rows, key=lambda row: -float(row["total_s"]))


def markdown(rows: list[dict[str, float | int | str]], span: float, source: str) -> str:
    total = sum(float(row["total_s"]) for row in rows)
    lines = [
        f"Job seconds per rule of `{source}` (wall span {span / 60:.1f} min; job seconds add up to "
        f"{total / 60:.1f} min over the run's cores).",
        "",
        "| rule | jobs | total s | share | mean s |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        share = float(row["total_s"]) / total if total else 0.0
        lines.append(
            f"| {row['rule']} | {row['jobs']} | {float(row['total_s']):.0f} | {share:.0%} | "
            f"{float(row['mean_s']):.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path, help="a Snakemake log (.snakemake/log/*.snakemake.log)")
    parser.add_argument("--output", type=Path, required=True, help="prefix of the .json and .md written")
    args = parser.parse_args(argv)
    seconds, span = job_seconds(args.log.read_text(encoding="utf-8"))
    rows = summary_rows(seconds)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    record = {"log": args.log.name, "wall_span_s": span, "rules": rows}
    args.output.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    args.output.with_suffix(".md").write_text(markdown(rows, span, args.log.name), encoding="utf-8")
    print(markdown(rows, span, args.log.name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
