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


def test_the_committed_record_is_of_todays_demo_and_every_run_reached_its_plateau():
    """benchmarks/results/demo_convergence.json names each run by its content id (the hash of its
    settings, seed included), so recomputing the ids from config.yaml + the seeds overlay says whether
    the record still measures the demo's settings; issue 25's bars are then read from it: every run at
    its plateau, the toy baseline's spread within 1 BLEU, every toy experiment of the demo present."""
    import json

    from nmtvariants.config import content_id, run_settings

    config = demo.merged_config([REPO / "config.yaml", REPO / "experiments" / "overlays" / "toy_seeds.yaml"])
    saved = json.loads((REPO / "benchmarks/results/demo_convergence.json").read_text(encoding="utf-8"))
    experiments = {entry["name"]: entry for entry in saved["experiments"]}
    toy = {name for name, spec in config["experiments"].items() if spec["corpus"] == "toyworld"}
    assert toy <= set(experiments), f"not in the record: {sorted(toy - set(experiments))}"
    records = [(name, r) for name, entry in experiments.items() for r in entry["records"]]
    assert len(records) >= 3 * len(toy)
    for name, r in records:
        expected = content_id(run_settings(config, name, r["pair"], r["variant"], r["seed"]))
        assert r["run"] == expected, f"{name}/{r['variant']} seed {r['seed']}: trained with other settings"
        assert r["plateau"]["at_plateau"] is True, (name, r["variant"], r["seed"], r["plateau"])
    (baseline,) = experiments["baseline"]["rows"]
    assert baseline["seeds"] == [1234, 2, 3] and baseline["spread"] <= 1.0
