"""benchmarks/train_throughput.py: each round's ratios are ours over each peer of that round and over
the round's fastest peer, the medians are the rounds' medians, and the report names every contestant."""

from __future__ import annotations

import argparse

from benchmark_loader import load_benchmark

train_throughput = load_benchmark("train_throughput")


def contestant(tok_per_s: float, cpu_tok_per_s: float | None = None) -> dict:
    return {
        "train_tok_per_s": tok_per_s,
        "cpu_tok_per_s": cpu_tok_per_s,
        "tok_per_update": 3900.0,
        "peak_rss_mb": 2000.0,
        "other_cores": 0.01,
        "load_before": 1.0,
    }


def rounds_of(figures: list[tuple[float, float, float]]) -> list[dict]:
    rounds = []
    for ours, ref, opennmt in figures:
        record = {
            "order": ["ours", "ref", "opennmt"],
            "ours": contestant(ours, ours / 2),
            "ref": contestant(ref, ref / 2),
            "opennmt": contestant(opennmt),
        }
        train_throughput.round_ratios(record)
        rounds.append(record)
    return rounds


def test_ratios_are_per_round_and_against_the_rounds_fastest_peer():
    rounds = rounds_of([(4500, 3000, 2500), (4400, 2000, 2200), (4600, 2300, 2300)])
    assert rounds[0]["fastest_peer"] == "ref" and rounds[1]["fastest_peer"] == "opennmt"
    assert rounds[0]["ratio_to_fastest_peer"] == 4500 / 3000
    assert rounds[1]["ratio_to_fastest_peer"] == 4400 / 2200
    assert rounds[1]["ratio_to_ref"] == 4400 / 2000 and rounds[1]["cpu_ratio"] == 2200 / 1000
    med = train_throughput.summarize_rounds(rounds)
    assert med["ratio_to_fastest_peer"] == 4600 / 2300  # the median of 1.5, 2.0 and 2.0
    assert med["ours_train_tok_per_s"] == 4500 and med["opennmt_train_tok_per_s"] == 2300
    assert "ratio_to_fastest_peer_via_ref" not in med  # OpenNMT-py ran: no estimate through the peers


def test_report_names_every_contestant_and_the_estimate_only_without_opennmt():
    args = argparse.Namespace(rounds=3, batch_tokens=4000, maxi_batch=0, amp="none")
    rounds = rounds_of([(4500, 3000, 2500), (4400, 2000, 2200), (4600, 2300, 2300)])
    summary = {
        "date": "2026-11-28",
        "machine": {"cpu": "a CPU", "cpus": 2},
        "setting": {"torch": "2.x"},
        "rounds": rounds,
        "median": train_throughput.summarize_rounds(rounds),
    }
    text = "\n".join(train_throughput.report_lines(args, summary))
    assert "| ours / plain PyTorch | ours / OpenNMT-py | ours / fastest peer |" in text
    assert "| 2 | ours ref opennmt | 4400 | 2000 | 2200 | 2.20 | 2.00 | 2.00 |" in text
    assert "**2.00**" in text and "would be" not in text

    for record in rounds:
        del record["opennmt"]
        train_throughput.round_ratios(record)
    summary["median"] = train_throughput.summarize_rounds(rounds)
    text = "\n".join(train_throughput.report_lines(args, summary))
    assert "OpenNMT-py tok/s" not in text
    assert f"**{2.0 * 2056 / 2166:.2f}x** the fastest peer" in text  # median ours / ref is 2.0
