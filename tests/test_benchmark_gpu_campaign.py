"""benchmarks/multi30k_gpu_campaign.py plans the workflow's own runs: the same run ids and settings as
nmtvariants.config.training_runs, and every data file a run reads (the parent streams of the PASCAL runs
among them), so that what the GPU machine trains is what the workflow would have trained."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import yaml

from nmtvariants.config import training_runs, with_defaults

REPO = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location(
    "gpu_campaign", REPO / "benchmarks" / "multi30k_gpu_campaign.py"
)
campaign = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(campaign)


def test_the_plan_is_the_workflows_runs_with_every_file_they_read():
    _, runs = campaign.plan()
    config = with_defaults(
        yaml.safe_load(campaign.CONFIG.read_text(encoding="utf-8")), REPO / "schemas" / "config.schema.yaml"
    )
    expected = training_runs(config)
    assert {one["id"]: one["settings"] for one in runs} == {
        rid: run.settings for rid, run in expected.items()
    }
    assert len(runs) == 15
    paths = campaign.data_paths(runs)
    pascal = [one for one in runs if "pascal" in one["settings"]["variant"]]
    assert len(pascal) == 6  # PASCAL and the composed model, three seeds each
    for one in pascal:
        assert one["settings"]["data"]["train_aux"] == {
            "parents_x2": "data/multi30k/en-de/inputs/train.parents_x2"
        }
        for test in one["tests"].values():
            assert set(test["aux"]) == {"parents_x2"} and test["aux"]["parents_x2"] in paths
    assert "data/multi30k/en-de/bpe/vocab.txt" in paths and "data/multi30k/en-de/bpe/train.en" in paths
