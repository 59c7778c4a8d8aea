"""benchmarks/gpu_amp_shapes.py: the shape stream it feeds every setting, and its table's medians and
ratios, against values worked by hand."""

from __future__ import annotations

from benchmark_loader import load_benchmark

bench = load_benchmark("gpu_amp_shapes")


def test_the_shape_stream_is_seeded_fills_the_batch_and_varies_only_when_asked():
    varied = bench.shapes("varied", 150, 8192)
    assert varied == bench.shapes("varied", 150, 8192)  # every setting sees the same stream
    assert len(set(varied)) > 100  # real data's many shapes: the cost under test is per shape
    for rows, source, target in varied:
        assert 6 <= source <= 48 and 4 <= target <= 52
        assert rows == 8192 // max(source, target)
    assert set(bench.shapes("fixed", 20, 8192)) == {(8192 // 24, 24, 24)}


def test_the_table_takes_window_medians_over_rounds_and_divides_by_fp32_varied():
    def record(name, values):
        return {"setting": name, "tok_per_s": values, "distinct_shapes": 3}

    rounds = [
        [record(name, [100.0, 200.0]) for name in bench.SETTINGS],
        [record(name, [300.0, 400.0]) for name in bench.SETTINGS],
        [record(name, [200.0, 300.0]) for name in bench.SETTINGS],
    ]
    rounds[0][1] = record("bf16 varied", [10.0, 30.0])
    rounds[1][1] = record("bf16 varied", [20.0, 60.0])
    rounds[2][1] = record("bf16 varied", [90.0, 90.0])
    meta = {"date": "2026-11-27", "gpu": "GPU", "torch": "t", "cuda": "c", "preset": "small", "d_model": 128}
    meta.update(batch_tokens=8192, steps=4, window=2, rounds=3)
    lines = bench.table(meta, rounds).splitlines()
    assert "| fp32 varied | 200 | 300 | 1.00 |" in lines  # medians of (100, 300, 200), (200, 400, 300)
    assert "| bf16 varied | 20 | 60 | 0.20 |" in lines  # 60 / 300
