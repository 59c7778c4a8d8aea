"""benchmarks/multi30k_gpu_campaign.py plans the workflow's own runs: the same run ids and settings as
nmtvariants.config.training_runs, and every data file a run reads (the parent streams of the PASCAL runs
among them), so that what the GPU machine trains is what the workflow would have trained."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml
from benchmark_loader import load_benchmark

from nmtvariants.config import training_runs, with_defaults

REPO = Path(__file__).resolve().parents[1]
campaign = load_benchmark("multi30k_gpu_campaign")


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


def test_a_multi_source_plan_stages_every_source_and_skips_named_replicas(tmp_path, monkeypatch):
    """The multi-source experiment's runs read their further sources (German and French, line-parallel
    with the English source) in training and in decoding, and ``prepare --skip`` leaves replicas out."""
    config = REPO / "experiments" / "multi30k_libovicky2018.yaml"
    _, runs = campaign.plan(config)
    parallel = next(one for one in runs if one["users"][0][2] == "parallel")
    inputs = "data/multi30k/en-cs/inputs"
    assert parallel["settings"]["data"]["train_sources"] == [
        f"{inputs}/train.src_de",
        f"{inputs}/train.src_fr",
    ]
    assert parallel["tests"]["test_2016_flickr"]["sources"] == [
        f"{inputs}/test_2016_flickr.src_de",
        f"{inputs}/test_2016_flickr.src_fr",
    ]
    baseline = next(one for one in runs if one["users"][0][2] == "baseline")
    assert baseline["tests"]["test_2016_flickr"]["sources"] == []
    assert f"{inputs}/test_2018_flickr.src_fr" in campaign.data_paths(runs)

    workdir = tmp_path / "work"
    for path in campaign.data_paths(runs):
        (workdir / path).parent.mkdir(parents=True, exist_ok=True)
        (workdir / path).write_text("a\n", encoding="utf-8")
    monkeypatch.setattr(campaign, "STAGE", tmp_path / "stage")
    skip = ["serial-seed2", "serial-seed3", "flat-seed2", "flat-seed3"]
    campaign.prepare(argparse.Namespace(config=config, workdir=workdir, smoke=False, skip=skip))
    staged = json.loads((tmp_path / "stage" / "runs.json").read_text(encoding="utf-8"))
    replicas = sorted(one["users"][0][2] for one in staged)
    assert len(replicas) == 11 and not set(skip) & set(replicas) and "serial" in replicas


def test_one_model_per_variant_comes_back_in_one_bundle_that_loads(tmp_path):
    """At most 8 files return from the GPU machine, so every variant's weights travel in weights.tar;
    each member is a checkpoint that `load_model` rebuilds, with the trained weights rounded to bf16."""
    import tarfile

    import torch

    from nmtvariants.models import build_model, load_model, model_config

    bundle = tmp_path / "weights.tar"
    models = {}
    for index, variant in enumerate(("baseline", "serial", "flat")):
        torch.manual_seed(index)
        cfg = model_config("tiny")
        model = build_model(cfg, 20)
        run = tmp_path / variant
        run.mkdir()
        state = {"model": model.state_dict(), "model_config": cfg.to_dict(), "vocab_size": 20, "update": 4}
        torch.save(state, run / "final.pt")
        campaign.save_weights(run / "final.pt", variant, bundle)
        models[variant] = model
    with tarfile.open(bundle) as tar:
        assert tar.getnames() == ["baseline.pt", "serial.pt", "flat.pt"]
        tar.extractall(tmp_path / "back", filter="data")
    for variant, model in models.items():
        loaded = load_model(tmp_path / "back" / f"{variant}.pt")
        for name, value in model.state_dict().items():
            torch.testing.assert_close(loaded.state_dict()[name], value.to(torch.bfloat16).float())
