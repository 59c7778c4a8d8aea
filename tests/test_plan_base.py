"""The base of every study's planner (nmtvariants.studies.plan_base) on a small config written here:
which experiments a study plans, the replicas of each system, their runs, checkpoints and BPE files,
and the manifest entries of its tables, each against the config read by hand and the runs of
nmtvariants.config.training_runs."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from workflow_configs import REPO

from nmtvariants.config import run_index, training_runs, with_defaults
from nmtvariants.reporting.manifest import manifest_inputs
from nmtvariants.studies.plan_base import StudyPlan

SCHEMA = REPO / "schemas" / "config.schema.yaml"
TRAIN = {
    "max_updates": 10,
    "batch_tokens": 256,
    "warmup": 5,
    "save_every": 5,
    "keep_last": 2,
    "valid_every": 5,
}


def experiment(study: str, variants: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "study": study,
        "corpus": "toyworld",
        "pairs": ["en-de", "en-ru"],
        "model": {"preset": "tiny"},
        "variants": variants,
        "train": TRAIN,
        "average_last": 2,
        "resources": {"threads": 1, "mem_mb": 1000, "runtime": 10, "gpus": 0},
        "evaluate": {"testsets": ["test", "valid"], "metrics": ["bleu"]},
        **extra,
    }


def small_config() -> dict[str, Any]:
    """Two experiments of the study around one of another: three seeds, a variant kept to one pair
    and trained on a derived corpus; the other study's experiment has the top-level seed only."""
    config = {
        "seed": 11,
        "corpora": {
            "toyworld": {
                "source": "toyworld",
                "pairs": ["en-de", "en-ru"],
                "testsets": ["test", "valid"],
                "preprocess": {"truecase": False, "bpe": {"merges": 100}},
            }
        },
        "experiments": {
            "first": experiment(
                "mystudy",
                {"baseline": {}, "tagged": {}},
                seeds=[3, 7, 9],
                variant_pairs={"tagged": ["en-de"]},
                inputs={"tagged": {"derived": "multitask"}},
            ),
            "other": experiment("baseline", {"baseline": {}}),
            "second": experiment("mystudy", {"baseline": {}}),
        },
    }
    config = with_defaults(config, SCHEMA)
    config["studies"] = {"mystudy": {"threshold": 5}}  # an external study's key (the schema knows ours only)
    return config


class MyStudyPlan(StudyPlan):
    study = "mystudy"
    defaults: ClassVar[dict[str, Any]] = {"threshold": 1, "kept": "yes"}


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    return small_config()


@pytest.fixture(scope="module")
def plan(config: dict[str, Any]) -> MyStudyPlan:
    return MyStudyPlan(config, run_index(training_runs(config)))


def run_of_user(config: dict[str, Any], user: tuple[str, str, str]) -> Any:
    """The one run of training_runs that ``user`` (experiment, pair, replica) trains on."""
    [run] = [run for run in training_runs(config).values() if user in run.users]
    return run


def test_the_study_plans_its_own_experiments_in_config_order_with_its_settings(plan):
    assert list(plan.experiments) == ["first", "second"]
    assert plan.settings == {"threshold": 5, "kept": "yes"}  # the config's over the study's defaults
    assert plan.corpus("second") == "toyworld" and plan.testsets("first") == ["test", "valid"]
    assert plan.reference_variant("first") == "baseline"


def test_a_system_has_one_replica_per_seed_named_as_the_runs_users(plan, config):
    assert plan.seeds("first") == [3, 7, 9] and plan.seeds("second") == [11]
    replicas = plan.replicas("first", "en-de", "tagged")
    assert [(r.seed, r.name) for r in replicas] == [(3, "tagged"), (7, "tagged-seed7"), (9, "tagged-seed9")]
    assert plan.replicas("first", "en-ru", "tagged") == []  # variant_pairs keeps it to en-de
    assert [r.name for r in plan.replicas("second", "en-ru", "baseline")] == ["baseline"]
    # each replica's run is the one training_runs lists it as a user of, trained with its seed
    for replica in replicas:
        run = run_of_user(config, ("first", "en-de", replica.name))
        assert run.settings["train"]["seed"] == replica.seed
        assert plan.run_id("first", "en-de", replica.name) == run.id
        assert plan.checkpoint("first", "en-de", replica.name) == f"models/runs/{run.id}/averaged-last2.pt"


def test_a_replica_reads_the_inputs_of_its_variant(plan):
    assert plan.variant_of("first", "tagged-seed9") == "tagged"
    assert plan.variant_inputs("first", "tagged-seed7") == {"derived": "multitask"}
    assert (
        plan.bpe("first", "en-de", "vocab.txt", "tagged-seed7")
        == "data/toyworld/en-de/derived/multitask/vocab.txt"
    )
    assert plan.bpe("first", "en-de", "vocab.txt") == "data/toyworld/en-de/bpe/vocab.txt"
    assert plan.reference_text("first", "en-ru", "valid") == "data/toyworld/raw/valid.ru"


def test_score_entries_name_every_replica_and_test_set_system_by_system(plan):
    entries = plan.score_entries(
        [("first", "en-de", "tagged"), ("second", "en-ru", "baseline")],
        lambda name, pair, variant: {"system": f"{name}/{pair}/{variant}"},
    )
    expected = [
        ("first", "en-de", "tagged", seed, folder, testset)
        for seed, folder in ((3, "tagged"), (7, "tagged-seed7"), (9, "tagged-seed9"))
        for testset in ("test", "valid")
    ] + [("second", "en-ru", "baseline", 11, "baseline", testset) for testset in ("test", "valid")]
    assert [entry.to_json() for entry in entries] == [
        {
            "experiment": name,
            "pair": pair,
            "variant": variant,
            "seed": seed,
            "testset": testset,
            "files": {"scores": f"results/{name}/{pair}/{folder}/{testset}.scores.json"},
            "info": {"system": f"{name}/{pair}/{variant}"},
        }
        for name, pair, variant, seed, folder, testset in expected
    ]
    significance = plan.significance_entry("first", "en-de", "tagged", "valid")
    assert significance.to_json() == {
        "experiment": "first",
        "pair": "en-de",
        "variant": "tagged",
        "testset": "valid",
        "files": {"significance": "results/first/en-de/tagged/valid.significance.json"},
    }
    assert manifest_inputs([significance]) == ["results/first/en-de/tagged/valid.significance.json"]


def test_targets_are_the_subclass_s_and_under_the_study_s_folders(plan):
    assert plan.tables() == [] and plan.figures() == {} and plan.significance_tests() == {}
    assert plan.table_path("t1") == "results/tables/mystudy/t1.md"
    assert plan.figure_path("f") == "results/figures/mystudy/f.png"
    assert plan.regex(["first", "a.b"]) == r"first|a\.b" and plan.regex([]) == "(?!)"


def test_a_config_without_experiments_plans_nothing():
    plan = MyStudyPlan({"seed": 1}, {})
    assert plan.experiments == {} and plan.settings == {"threshold": 1, "kept": "yes"}
