"""benchmarks/scheduler_overhead.py reads a process's own CPU time from /proc/<pid>/stat, whose second
field (the command name, in parentheses) may hold spaces and parentheses: checked against psutil's
reading of the same process, a child whose command name is built to break a naive split."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil
from benchmark_loader import load_benchmark

overhead = load_benchmark("scheduler_overhead")

BURN = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\ntime.sleep(30)"


def test_own_cpu_matches_psutil_for_a_child_with_a_hostile_name(tmp_path):
    interpreter = tmp_path / "a b) (c"  # the kernel names the process after its executable
    interpreter.symlink_to(Path(sys.executable).resolve())
    child = subprocess.Popen([str(interpreter), "-c", BURN])
    try:
        deadline = time.monotonic() + 20
        while overhead.own_cpu_s(child.pid) < 0.3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert Path(f"/proc/{child.pid}/comm").read_text() == "a b) (c\n"  # exec'd by now
        times = psutil.Process(child.pid).cpu_times()
        assert abs(overhead.own_cpu_s(child.pid) - (times.user + times.system)) < 0.02
        assert overhead.own_cpu_s(child.pid) >= 0.3
    finally:
        child.kill()
        child.wait()
