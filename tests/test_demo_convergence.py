"""benchmarks/demo_convergence.py: whether a toy table's difference holds in every seed, computed from
hand-made per-seed records and checked against values worked out by hand; the overlay that trains the
demo with three seeds merges into the default config as Snakemake merges it."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmark_loader import load_benchmark

REPO = Path(__file__).resolve().parents[1]
demo = load_benchmark("demo_convergence")


def record(variant: str, seed: int, bleu: float, change: float = 0.01) -> dict:
    plateau = {"last_fifth_change": change, "at_plateau": change < 0.02}
    return {"pair": "en-de", "variant": variant, "seed": seed, "run": "x", "bleu": bleu, "plateau": plateau}


def test_a_difference_holds_only_with_the_same_sign_in_every_seed():
    records = [
        *(record("base", s, b) for s, b in ((1, 90.0), (2, 91.0), (3, 92.0))),
        *(record("better", s, b) for s, b in ((1, 91.0), (2, 91.5), (3, 93.0))),
        *(record("mixed", s, b, 0.05) for s, b in ((1, 89.0), (2, 92.0), (3, 92.0))),
    ]
    rows = {row["variant"]: row for row in demo.compare(records, "base")}
    assert rows["base"]["delta"] == [] and rows["base"]["same_sign"] is None
    assert rows["base"]["mean"] == pytest.approx(91.0) and rows["base"]["sd"] == pytest.approx(1.0)
    assert rows["better"]["delta"] == pytest.approx([1.0, 0.5, 1.0]) and rows["better"]["same_sign"] is True
    assert rows["mixed"]["delta"] == pytest.approx([-1.0, 1.0, 0.0]) and rows["mixed"]["same_sign"] is False
    assert rows["mixed"]["spread"] == pytest.approx(3.0) and rows["mixed"]["at_plateau"] == [False] * 3


def test_one_seed_says_nothing_of_a_sign():
    rows = demo.compare([record("base", 1, 90.0), record("other", 1, 95.0)], "base")
    assert rows[1]["delta"] == [5.0] and rows[1]["same_sign"] is None and rows[1]["sd"] is None


def test_the_seeds_overlay_adds_seeds_and_keeps_the_rest_of_the_default():
    config = demo.merged_config([REPO / "config.yaml", REPO / "experiments" / "overlays" / "toy_seeds.yaml"])
    toy = [name for name, spec in config["experiments"].items() if spec["corpus"] == "toyworld"]
    assert toy and all(config["experiments"][name]["seeds"] == [1234, 2, 3] for name in toy)
    assert config["experiments"]["bugliarello2020"]["variants"]["pascal"] == {"pascal": {}}
    assert config["experiments"]["baseline"]["train"]["max_updates"] == 1200


def test_each_replica_is_read_where_its_table_reads_it():
    """The workflow's score file, or the multi-source study's score of the clean translation (the rule
    libovicky2018_score's output, which its tables read)."""
    config = demo.merged_config([REPO / "config.yaml"])
    assert demo.score_file(config, "baseline", "en-de", "baseline-seed2", "test") == (
        "results/baseline/en-de/baseline-seed2/test.scores.json"
    )
    assert demo.score_file(config, "libovicky2018_mmt", "en-de", "flat", "test") == (
        "results/libovicky2018/libovicky2018_mmt/en-de/flat/test.clean.json"
    )
