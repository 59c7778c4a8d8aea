"""benchmarks/snakemake_sampled.py: Snakemake's benchmark files with the CPU seconds of a whole job."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest
import snakemake.benchmark
from benchmark_loader import load_benchmark

LAUNCHER = Path(__file__).resolve().parents[1] / "benchmarks" / "snakemake_sampled.py"
# A job that spends this much CPU: past Snakemake's 15 s of half-second samples, so that its default
# 30-second interval loses the end of the job.
BURN_SECONDS = 17.5


def test_sample_every_sets_the_interval_that_the_executor_uses():
    function = snakemake.benchmark.benchmarked.__wrapped__
    before = function.__defaults__
    try:
        load_benchmark("snakemake_sampled").sample_every(0.1)
        assert function.__defaults__ == (None, None, 0.1)
    finally:
        function.__defaults__ = before
    assert before[2] == snakemake.benchmark.BENCHMARK_INTERVAL


def _burn_job_cpu_seconds(tmp_path: Path, command: list[str]) -> float:
    burn = f"import time\nt = time.process_time()\nwhile time.process_time() - t < {BURN_SECONDS}: pass"
    (tmp_path / "burn.py").write_text(burn + "\n")
    (tmp_path / "Snakefile").write_text(
        "rule burn:\n"
        '    output: "done.txt"\n'
        '    benchmark: "burn.tsv"\n'
        f'    shell: "{sys.executable} burn.py && touch {{output}}"\n'
    )
    subprocess.run([*command, "--cores", "1", "-q"], cwd=tmp_path, check=True, capture_output=True)
    with (tmp_path / "burn.tsv").open() as handle:
        return float(next(csv.DictReader(handle, delimiter="\t"))["cpu_time"])


@pytest.mark.slow
def test_a_job_past_fifteen_seconds_keeps_its_cpu_seconds(tmp_path):
    """The job's recorded CPU time is what it spent (process_time is the reference, plus the
    interpreter's start), to a few tenths of a second; Snakemake's default sampling (every 30 s after
    the first 15) records less."""
    cpu = _burn_job_cpu_seconds(tmp_path, [sys.executable, str(LAUNCHER)])
    assert BURN_SECONDS - 0.3 <= cpu <= BURN_SECONDS + 1.0
    (tmp_path / "done.txt").unlink()
    default = _burn_job_cpu_seconds(tmp_path, [sys.executable, "-m", "snakemake"])
    assert default < BURN_SECONDS - 1.2
