"""benchmarks/exact_by_length.py: exact hypotheses per source-length bin, against a count by hand."""

from __future__ import annotations

from benchmark_loader import load_benchmark

bench = load_benchmark("exact_by_length")


def test_counts_per_bin_match_a_count_by_hand():
    source = ["a b c", "w " * 12, "w " * 30, "x y"]
    reference = ["„Ja“ , sagt er .", "eins", "lang", "zwei"]
    hypothesis = ['"Ja" , sagt er .', "eins", "falsch", "drei"]
    bins = bench.exact_by_length(source, reference, hypothesis)
    # 3 and 2 words fall in 0-9 (one exact once the quotation marks are mapped), 12 in 10-14, 30 in 25+
    assert bins["0-9"] == dict(sentences=2, exact=1, share=0.5)
    assert bins["10-14"] == dict(sentences=1, exact=1, share=1.0)
    assert bins["25+"] == dict(sentences=1, exact=0, share=0.0)
    assert bins["15-19"] == dict(sentences=0, exact=0, share=None)
    assert bins["all"] == dict(sentences=4, exact=2, share=0.5)


def test_every_length_has_one_bin():
    assert [bench.bin_of(n) for n in (0, 9, 10, 24, 25, 400)] == [
        "0-9",
        "0-9",
        "10-14",
        "20-24",
        "25+",
        "25+",
    ]
