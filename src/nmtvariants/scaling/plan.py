"""A cluster plan before the first job: each stage's core-hours, memory and wall time, and GPU-hours.

The workflow's own dry run gives the jobs (rule and wildcards of each, in an empty folder so that
every job is planned); the fitted curves of :mod:`nmtvariants.scaling.costs` give each data-path
job's seconds and peak memory from its input size, which is the corpus's pair count times the
stage's MB per pair (a job on a test set reads a few thousand lines: its cost is the stage's cost at
that size). Training runs cost GPU-hours: updates x tokens per update / the throughput the user
states. A stage's wall time on an N-core node is the larger of its longest job and its core-seconds
spread over N cores (its jobs are independent; the stages of the data path follow each other).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from nmtvariants.scaling.costs import STAGE_OF_RULE, STAGES, StageCost

# Published training sizes the plan may assume without the data (pairs before cleaning).
KNOWN_PAIRS = {"wmt14_ende": 4_520_620}
TEST_SET_LINES = 3_000  # a newstest set: the size a job on a non-training split is planned at

_RULE = re.compile(r"^(?:local)?rule (\w+):$")
_WILDCARDS = re.compile(r"^\s+wildcards: (.*)$")
_THREADS = re.compile(r"^\s+threads: (\d+)$")


@dataclass
class Job:
    rule: str
    wildcards: dict[str, str] = field(default_factory=dict)
    threads: int = 1


def parse_dry_run(text: str) -> list[Job]:
    """The jobs of ``snakemake -n`` output: rule, wildcards and threads of each."""
    jobs: list[Job] = []
    for line in text.splitlines():
        if match := _RULE.match(line):
            jobs.append(Job(match.group(1)))
        elif jobs and (match := _WILDCARDS.match(line)):
            jobs[-1].wildcards = dict(item.split("=", 1) for item in match.group(1).split(", "))
        elif jobs and (match := _THREADS.match(line)):
            jobs[-1].threads = int(match.group(1))
    return jobs


def job_pairs(job: Job, pairs: Mapping[str, int]) -> int:
    """Lines a data-path job reads: the corpus's training pairs, or a test set's size."""
    split = job.wildcards.get("split", "train")
    if split != "train":
        return TEST_SET_LINES
    corpus = job.wildcards["corpus"]
    if corpus not in pairs:
        raise KeyError(corpus)
    return pairs[corpus]


@dataclass
class StagePlan:
    stage: str
    jobs: int = 0
    core_seconds: float = 0.0
    longest_seconds: float = 0.0
    peak_mb: float = 0.0
    gpu_hours: float = 0.0

    def wall_seconds(self, cores: int) -> float:
        return max(self.longest_seconds, self.core_seconds / max(1, cores))


def plan_data_path(
    jobs: Iterable[Job], pairs: Mapping[str, int], stages: Mapping[str, StageCost] = STAGES
) -> dict[str, StagePlan]:
    """Stage -> its planned jobs' core-seconds, longest job and peak memory (data-path rules only)."""
    plans: dict[str, StagePlan] = {}
    for job in jobs:
        stage = STAGE_OF_RULE.get(job.rule)
        if stage is None:
            continue
        cost = stages[stage]
        size_mb = job_pairs(job, pairs) * cost.mb_per_pair
        seconds = cost.seconds(size_mb)
        plan = plans.setdefault(job.rule, StagePlan(job.rule))
        plan.jobs += 1
        plan.core_seconds += seconds
        plan.longest_seconds = max(plan.longest_seconds, seconds)
        plan.peak_mb = max(plan.peak_mb, cost.peak_mb(size_mb))
    return plans


def run_tokens(train: Mapping, gpus: int) -> float:
    """Target tokens one training run reads: updates x tokens per update (all ``gpus`` together)."""
    per_update = train.get("effective_batch_tokens") or (
        train["batch_tokens"] * train.get("update_freq", 1) * max(1, gpus)
    )
    return float(train["max_updates"]) * per_update


def plan_training(
    jobs: Iterable[Job], tokens_per_run: Mapping[str, float], tokens_per_gpu_second: float
) -> StagePlan:
    """GPU-hours of the planned training runs: each run's tokens over the stated throughput."""
    plan = StagePlan("train")
    for job in jobs:
        if job.rule != "train":
            continue
        hours = tokens_per_run[job.wildcards["run"]] / tokens_per_gpu_second / 3600
        plan.jobs += 1
        plan.gpu_hours += hours
        plan.longest_seconds = max(plan.longest_seconds, hours * 3600)
    return plan


def markdown(plans: Iterable[StagePlan], cores: int, unplanned: Mapping[str, int]) -> str:
    lines = [
        f"| stage | jobs | core-hours | longest job (h) | peak memory (GB) | wall on {cores} cores (h)"
        " | GPU-hours |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    total_wall = 0.0
    for plan in plans:
        wall = plan.wall_seconds(cores) if not plan.gpu_hours else 0.0
        total_wall += wall
        lines.append(
            f"| {plan.stage} | {plan.jobs} | {plan.core_seconds / 3600:,.2f}"
            f" | {plan.longest_seconds / 3600:,.2f} | {plan.peak_mb / 1000:,.1f}"
            f" | {wall / 3600:,.2f} | {plan.gpu_hours:,.1f} |"
        )
    lines.append(
        f"\nData path wall time on one {cores}-core node, stage after stage: {total_wall / 3600:,.2f} h."
    )
    if unplanned:
        listed = ", ".join(f"{rule} ({count})" for rule, count in sorted(unplanned.items()))
        lines.append(
            f"Not modelled (no fitted curve yet; decoding and scoring are not in the totals): {listed}."
        )
    return "\n".join(lines) + "\n"
