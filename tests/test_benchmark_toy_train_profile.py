"""benchmarks/toy_train_profile.py: its grouping and floor worked by hand, and one real worker run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from benchmark_loader import BENCHMARKS, load_benchmark

bench = load_benchmark("toy_train_profile")


def record(ms: float) -> dict:
    """10 profiled updates: 2 s of products doing 400 GFLOP, 1 s of attention, 1 s of the rest."""
    ops = [
        {"op": "aten::mm", "calls": 100, "self_s": 1.5, "flops": 3e11},
        {"op": "aten::addmm", "calls": 20, "self_s": 0.5, "flops": 1e11},
        {"op": "aten::_scaled_dot_product_flash_attention_for_cpu", "calls": 40, "self_s": 1.0, "flops": 0},
        {"op": "aten::native_layer_norm", "calls": 40, "self_s": 0.25, "flops": 0},
        {"op": "aten::relu", "calls": 40, "self_s": 0.75, "flops": 0},
    ]
    return {"ops": ops, "profiled_updates": 10, "profiled_wall_s": 5.0, "ms_per_update": ms}


def test_groups_rates_and_the_floor_by_hand():
    seconds = bench.grouped(record(50.0))
    assert seconds["matrix products"] == pytest.approx(2.0)
    assert seconds["attention kernels"] == pytest.approx(1.0)
    assert seconds["layer norm"] == pytest.approx(0.25)
    assert seconds["other operators"] == pytest.approx(0.75)
    assert bench.matmul_gflops(record(50.0)) == pytest.approx((40.0, 200.0))  # 400 GFLOP / 10, / 2 s
    runs = [
        {"record": record(50.0), "settings": {"train": {"max_updates": 1600}}},
        {"record": record(25.0), "settings": {"train": {"max_updates": 800}}},
    ]
    floor = bench.floor_of(runs)
    assert floor["update_s"] == pytest.approx(0.05 * 1600 + 0.025 * 800)  # 100 s
    assert floor["matmul_s"] == pytest.approx(100 * 2.0 / 4.0)  # half of each run's operator time
    assert floor["matmul_gflop"] == pytest.approx(40 * 1600 + 40 * 800)
    assert floor["between_ops_share"] == pytest.approx(0.2)  # 1 s of 5 outside the operators
    assert floor["max_updates_note"] == "800 / 1,600"


def test_one_worker_run_times_and_profiles_real_updates(tmp_path):
    from nmtvariants.data.vocab import Vocabulary

    source = [" ".join(f"w{(i * 7 + j) % 40}" for j in range(3 + i % 5)) for i in range(300)]
    target = [" ".join(reversed(line.split())) for line in source]
    for name, lines in (("train.src", source), ("train.tgt", target)):
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    Vocabulary.build([*source, *target]).save(tmp_path / "vocab.txt")
    settings = {
        "data": {"train_src": "train.src", "train_tgt": "train.tgt", "vocab": "vocab.txt"},
        "model": {"preset": "tiny"},
        "variant": {},
        "train": {"batch_tokens": 256, "seed": 1, "max_updates": 1600},
    }
    (tmp_path / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(BENCHMARKS.parent / "src"), "OMP_NUM_THREADS": "1"}
    command = [
        sys.executable,
        str(BENCHMARKS / "toy_train_profile.py"),
        "--worker",
        "settings.json",
        "--warm",
        "2",
        "--timed",
        "3",
    ]
    done = subprocess.run(
        [*command, "--profiled", "2"], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(result["ms_per_update_all"]) == 3 and result["ms_per_update"] > 0
    assert result["profiled_updates"] == 2 and result["profiled_wall_s"] > 0
    names = {op["op"] for op in result["ops"]}
    assert {"aten::mm", "aten::addmm"} & names  # the products were seen, with their FLOPs counted
    assert sum(op["flops"] for op in result["ops"] if op["op"] in ("aten::mm", "aten::addmm")) > 0
