"""benchmarks/dtype_bleu.py: its table's differences to float32, worked by hand."""

from __future__ import annotations

import json

from benchmark_loader import load_benchmark

bench = load_benchmark("dtype_bleu")


def test_the_table_gives_each_dtype_its_difference_to_float32():
    meta = {"date": "2026-11-27", "checkpoint": "m.pt", "about": "a model", "source": "t.en", "cpu": "cpu"}
    meta.update(beam=5, alpha=1.0, threads=1)
    records = [
        {"dtype": "float32", "bleu": 18.87, "chrf": 38.61, "seconds": 9.0, "sentences": 1000},
        {"dtype": "int8", "bleu": 18.5, "chrf": 38.9, "seconds": 7.0, "sentences": 1000},
    ]
    records[0]["identical_to_float32"], records[1]["identical_to_float32"] = 1.0, 0.803
    lines = bench.table(meta, records).splitlines()
    assert "| float32 | 18.87 | +0.00 | 38.61 | +0.00 | 100.0% | 9.0 |" in lines
    assert "| int8 | 18.50 | -0.37 | 38.90 | +0.29 | 80.3% | 7.0 |" in lines
    assert any("(1000 sentences)" in line for line in lines)


def test_the_record_and_its_table_are_written_side_by_side(tmp_path):
    from result_files import write_record

    results, record = tmp_path / "results", {"meta": {"date": "2026-11-27"}, "records": []}
    write_record(results, "dtype_bleu_x", record, "| a |\n")
    assert json.loads((results / "dtype_bleu_x.json").read_text()) == record
    assert (results / "dtype_bleu_x.md").read_text() == "| a |\n"
    assert sorted(path.name for path in results.iterdir()) == ["dtype_bleu_x.json", "dtype_bleu_x.md"]
