"""benchmarks/fork_server.py: the machine's busy CPU time read from /proc/stat agrees with psutil's
reading of the same counters, and grows by what a child burns; the record's ratios are the rounds'."""

from __future__ import annotations

import subprocess
import sys

import psutil
from benchmark_loader import load_benchmark

fork_server = load_benchmark("fork_server")

BURN = "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass"


def test_busy_cpu_matches_psutil_and_counts_a_childs_cpu():
    times = psutil.cpu_times()
    busy = fork_server.busy_cpu_s()
    psutil_busy = times.user + times.nice + times.system + times.irq + times.softirq + times.steal
    assert abs(busy - psutil_busy) < 0.5
    subprocess.run([sys.executable, "-c", BURN], check=True)
    assert fork_server.busy_cpu_s() - busy >= 0.5


def test_markdown_reports_each_rounds_ratio_and_the_medians():
    def arm(wall, cpu, rules):
        return {"wall_s": wall, "machine_cpu_s": cpu, "rules": rules}

    rounds = [
        {
            "order": ["off", "on"],
            "off": arm(150.0, 300.0, {"translate": (18, 44.0)}),
            "on": arm(100.0, 200.0, {"translate": (18, 18.0)}),
        },
        {
            "order": ["on", "off"],
            "off": arm(160.0, 320.0, {"translate": (18, 40.0)}),
            "on": arm(80.0, 160.0, {"translate": (18, 20.0)}),
        },
    ]
    meta = {
        "date": "2026-11-28",
        "machine": {"cpu": "a CPU", "cpus": 2, "python": "3.11"},
        "workload": "w",
        "beside": "nothing",
        "command": "python benchmarks/fork_server.py --workdir DEMO",
    }
    text = fork_server.markdown({"meta": meta, "rounds": rounds, "differing_tables": ["results/t.md"]})
    assert "| 1 | off on | 150.0 | 100.0 | 1.50 | 300 | 200 | 1.50 |" in text
    assert "| 2 | on off | 160.0 | 80.0 | 2.00 | 320 | 160 | 2.00 |" in text
    assert "wall 155.0 -> 90.0 s (**1.72x**)" in text  # medians of two rounds: means
    assert "| translate | 18 | 40 | 20 | 2.00 |" in text  # the last round
    assert "`results/t.md`" in text
