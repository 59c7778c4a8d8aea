"""A fifth study that lives only in tests/fifth_study/ (a plug-in, its planner, one table, a config)
runs through the real workflow, which knows of it only through the config's `extensions`; and an
experiment of a study nobody defines stops the workflow with one line."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import pandas as pd
import pytest
import yaml
from toy_workflow import run_snakemake, workflow_copy
from workflow_configs import REPO, default_config_with, snakemake

STUDY = Path(__file__).resolve().parent / "fifth_study"
TABLE = "results/tables/fifth_study/gate.md"
REPLICAS = {1: "gated", 2: "gated-seed2"}  # seed -> result folder (nmtvariants.config.replica_name)
METRICS = {"bleu": "BLEU", "chrf": "chrF"}


@pytest.mark.slow
def test_the_fifth_study_builds_its_table_over_two_seeds(tmp_path):
    """The workflow's copy plus tests/fifth_study/ and its config, as committed: the gate table has
    n = 2, mean ± sd cells, each seed's score, and the mean and sd of the two score files."""
    shutil.copytree(STUDY, tmp_path / "tests" / "fifth_study", ignore=shutil.ignore_patterns("__pycache__"))
    workflow_copy(tmp_path, yaml.safe_load((STUDY / "config.yaml").read_text(encoding="utf-8")))
    result = run_snakemake(tmp_path, TABLE)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]

    (row,) = pd.read_csv(tmp_path / TABLE.replace(".md", ".csv")).to_dict("records")
    markdown = (tmp_path / TABLE).read_text(encoding="utf-8")
    assert row["n"] == 2 and row["variant"] == "gated"
    for metric, label in METRICS.items():
        scores = {seed: score_of(tmp_path, folder, metric) for seed, folder in REPLICAS.items()}
        for seed, score in scores.items():
            assert row[f"{label} seed {seed}"] == pytest.approx(score)
        mean, sd = statistics.mean(scores.values()), statistics.stdev(scores.values())
        assert (row[label], row[f"{label} sd"]) == (pytest.approx(mean), pytest.approx(sd))
        assert f"{mean:.2f} ± {sd:.2f}" in markdown
    # the plug-in trained: its gate left its start (0.5) in both seeds' models
    assert all(row[f"gate seed {seed}"] != 0.5 for seed in REPLICAS)


def score_of(root: Path, folder: str, metric: str) -> float:
    """One replica's score, read from its score file, not through any table code."""
    path = root / "results" / "gate_toy" / "en-de" / folder / "test.scores.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    return record["scores"][metric]["score"]


def test_an_experiment_of_an_unknown_study_stops_the_workflow(tmp_path):
    config = default_config_with({})
    config["experiments"] = {"baseline": {**config["experiments"]["baseline"], "study": "nosuch"}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    result = snakemake("-n", "--configfile", str(path), cwd=REPO)
    assert result.returncode != 0
    message = "experiments.baseline.study: unknown study 'nosuch' (known: baseline, bugliarello2020,"
    assert message in result.stdout + result.stderr
