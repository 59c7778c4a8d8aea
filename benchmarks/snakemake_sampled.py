"""Snakemake with its ``benchmark:`` files sampled every 0.1 s, for measurements of CPU seconds.

Snakemake samples a benchmarked job's process tree every 0.5 s for its first 15 s and then every
30 s, and records the CPU time of the last sample (``snakemake.benchmark``): a job of 15 s to a few
minutes loses up to 30 s of CPU at its end (a job that spent 17.5 s recorded 15.0 s:
``tests/test_benchmark_snakemake_sampled.py``), and the WMT rehearsal (``scale_data_path.py``) fits
its per-stage curves on those CPU seconds, down to jobs of one or two seconds at 1% of WMT size,
where even half a second is a third of the job. Sampled every 0.1 s, a job loses at most 0.1 s.
Everything else is Snakemake's own command line:

    python benchmarks/snakemake_sampled.py -s Snakefile -d WORK --cores 1 TARGET ...
"""

from __future__ import annotations

import sys

import snakemake.benchmark

SAMPLE_SECONDS = 0.1


def sample_every(seconds: float) -> None:
    """Make every ``benchmarked()`` of this process sample at ``seconds`` (its default interval: the
    local executor runs shell jobs in this process's threads and calls it without one)."""
    function = snakemake.benchmark.benchmarked.__wrapped__  # under @contextmanager
    pid, record, _ = function.__defaults__
    function.__defaults__ = (pid, record, seconds)


def main() -> int:
    sample_every(SAMPLE_SECONDS)
    from snakemake.cli import main as snakemake_main

    sys.argv[0] = "snakemake"
    return snakemake_main()


if __name__ == "__main__":
    sys.exit(main())
