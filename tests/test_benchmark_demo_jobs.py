"""benchmarks/demo_jobs.py: job seconds per rule from a Snakemake log, against stamps worked by hand."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
import demo_jobs  # noqa: E402

# Two jobs overlap (2 cores): train from 10:00:00 to 10:01:40, tokenize from 10:00:05 to 10:00:07.
LOG = """\
Building DAG of jobs...
[Thu Nov 26 10:00:00 2026]
localrule train:
    output: models/runs/a/final.pt
    jobid: 3
[Thu Nov 26 10:00:05 2026]
rule tokenize:
    jobid: 7
[Thu Nov 26 10:00:07 2026]
Finished jobid: 7 (Rule: tokenize)
[Thu Nov 26 10:01:40 2026]
Finished jobid: 3 (Rule: train)
[Thu Nov 26 10:01:41 2026]
localrule all:
    jobid: 0
[Thu Nov 26 10:01:41 2026]
Finished jobid: 0 (Rule: all)
"""


def test_job_seconds_pair_each_finish_with_its_start():
    seconds, span = demo_jobs.job_seconds(LOG)
    assert seconds == {"train": [100.0], "tokenize": [2.0], "all": [0.0]}
    assert span == 101.0
    assert demo_jobs.rule_totals(seconds) == {"train": (1, 100.0), "tokenize": (1, 2.0)}


def test_two_logs_side_by_side_with_the_ratio(tmp_path):
    before, after = tmp_path / "before.log", tmp_path / "after.log"
    before.write_text(LOG, encoding="utf-8")
    after.write_text(LOG.replace("10:01:40", "10:00:50"), encoding="utf-8")
    assert demo_jobs.main([f"before={before}", f"after={after}", "--output", str(tmp_path / "out")]) == 0
    table = (tmp_path / "out.md").read_text(encoding="utf-8")
    assert "| train | 1 | 100 | 1 | 50 | 0.50 |" in table
    assert "| tokenize | 1 | 2 | 1 | 2 | 1.00 |" in table
    record = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert record["after"]["rules"]["train"] == {"jobs": 1, "job_s": 50.0}


def test_occupancy_and_idle_core_seconds_against_the_hand_worked_log():
    # 0-5 s: train alone; 5-7 s: train and tokenize; 7-100 s: train alone; 100-101 s: nothing (then
    # `all`, which does not count).
    intervals, span = demo_jobs.job_intervals(LOG)
    busy = demo_jobs.occupancy(intervals, span)
    assert busy == {0: 1.0, 1: 98.0, 2: 2.0}
    assert sum(busy.values()) == span
    assert demo_jobs.idle_core_seconds(busy, cores=2) == 2 * 1.0 + 1 * 98.0
    assert demo_jobs.idle_core_seconds(busy, cores=2) == 2 * span - sum(
        end - begin for rule, begin, end in intervals if rule != "all"
    )


def test_the_table_and_record_say_how_many_jobs_ran_at_once(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(LOG, encoding="utf-8")
    assert demo_jobs.main([f"run={log}", "--cores", "2", "--output", str(tmp_path / "out")]) == 0
    table = (tmp_path / "out.md").read_text(encoding="utf-8")
    assert "jobs at once: 0 for 0.0 min, 1 for 1.6 min, 2 for 0.0 min; idle 1.7 core-min of 2 x 1.7" in table
    record = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["run"]
    assert record["jobs_at_once_s"] == {"0": 1.0, "1": 98.0, "2": 2.0}
    assert record["idle_core_s"] == 100.0 and record["cores"] == 2
