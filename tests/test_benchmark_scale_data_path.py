"""benchmarks/scale_data_path.py: the largest-process table and the decoding paragraph of the report."""

from __future__ import annotations

from benchmark_loader import load_benchmark

bench = load_benchmark("scale_data_path")


def stage(seconds: float, cpu: float, mb: float) -> dict:
    return {"seconds": seconds, "cpu_seconds": cpu, "max_rss_mb": mb}


def test_the_largest_process_table_sets_100_against_10_percent():
    meta = dict(date="2026-11-27", machine="cpu", commit="abc", processes=2)
    small = {
        "corpus": {"pairs": 452_062},
        "largest_process": {**meta, "stages": {"bpe_apply": stage(30, 29, 100)}},
    }
    full = {
        "corpus": {"pairs": 4_520_620},
        "largest_process": {**meta, "stages": {"bpe_apply": stage(300, 290, 150)}},
    }
    lines = bench.largest_process_lines([small, full])
    assert "| bpe_apply | 30 / 29 / 100 | 300 / 290 / 150 | 1.50 |" in lines
    assert lines[-2] == "(cpu; bpe_apply: 2026-11-27, commit abc)"
    assert bench.largest_process_lines([{"corpus": {"pairs": 1}}]) == []


def test_a_stage_measured_again_names_its_own_commit():
    meta = dict(date="2026-11-27", machine="cpu", commit="new", processes=2)
    again = {**stage(40, 39, 120), "date": "2026-11-28", "commit": "new"}
    kept = {**stage(30, 29, 100), "date": "2026-11-27", "commit": "old"}
    record = {
        "corpus": {"pairs": 10},
        "largest_process": {**meta, "stages": {"bpe_apply": kept, "truecase_apply": again}},
    }
    assert bench.largest_process_lines([record])[-2] == (
        "(cpu; bpe_apply: 2026-11-27, commit old; truecase_apply: 2026-11-28, commit new)"
    )


def test_the_decoding_paragraph_projects_the_full_set_from_the_sample():
    decode = dict(
        every=10, sentences=301, full_set_sentences=3003, source_bpe_tokens=19_000,
        dtype="float32", threads=1,
        settings={"beam": 16, "alpha": 0.6, "max_len_a": 2.0, "max_len_b": 10},
        stages={
            "translate": stage(1400, 1400, 5000), "postprocess": stage(1, 1, 50), "evaluate": stage(1, 1, 60),
        },
        scores={"scores": {"bleu": {"score": 0.0}, "chrf": {"score": 1.5}}},
        date="2026-11-27", machine="cpu", commit="abc",
    )  # fmt: skip
    text = "\n".join(bench.decode_lines([{"train": {"updates": 100}, "decodes": [decode]}]))
    # 1,400 CPU s / 301 sentences = 4.65 s; x 3,003 = 3.9 hours
    assert "4.65 CPU s a sentence" in text and "3.9 CPU hours" in text
    assert "| translate | 1,400.0 | 1,400.0 | 5,000 |" in text
