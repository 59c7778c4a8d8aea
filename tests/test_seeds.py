"""Seeds as a dimension (issue 20): an experiment's `seeds:` trains every variant once per seed.

The seed is one of the run settings, so a variant with three seeds is three content-addressed runs and
a baseline that two experiments share is still shared, seed by seed; one seed (the default: the
top-level `seed`) keeps today's run ids and result folders.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import yaml
from workflow_configs import REPO, default_config_with, dry_run_jobs, snakemake

from nmtvariants.config import (
    experiment_replicas,
    parse_replica,
    replica_name,
    training_runs,
    with_defaults,
)
from nmtvariants.errors import ConfigError

SCHEMA = REPO / "schemas" / "config.schema.yaml"
SEEDS = [1, 2, 3]
PAPERS = ["emelin2019", "bugliarello2020", "yang2020", "libovicky2018"]


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def without_seeds(config: dict) -> dict:
    """``config`` with every experiment's ``seeds`` left out (each trains the top-level seed once)."""
    config = copy.deepcopy(config)
    for spec in config["experiments"].values():
        spec.pop("seeds", None)
    return config


def shared_default(seeds: list[int] | None) -> dict:
    """config.yaml's baseline experiment and its Emelin experiment (whose baseline is the same run),
    both with ``seeds``."""
    config = default_config_with({})
    config["experiments"] = {name: config["experiments"][name] for name in ("baseline", "emelin2019")}
    for spec in config["experiments"].values():
        if seeds is not None:
            spec["seeds"] = list(seeds)
    return config


def test_one_seed_keeps_todays_run_ids_and_users():
    config = load(REPO / "config.yaml")
    today = training_runs(with_defaults(config, SCHEMA))
    for spec in config["experiments"].values():
        spec["seeds"] = [config["seed"]]
    explicit = training_runs(with_defaults(config, SCHEMA))
    assert list(explicit) == list(today)
    assert [run.users for run in explicit.values()] == [run.users for run in today.values()]
    assert all(run.settings["train"]["seed"] == config["seed"] for run in today.values())


def test_replica_names_keep_the_first_seed_plain_and_read_back():
    assert [replica_name("lexical", seed, SEEDS) for seed in SEEDS] == [
        "lexical",
        "lexical-seed2",
        "lexical-seed3",
    ]
    assert parse_replica("lexical-seed3", SEEDS) == ("lexical", 3)
    assert parse_replica("lexical", SEEDS) == ("lexical", 1)
    # a suffix that is not one of the further seeds is part of the variant's own name
    assert parse_replica("lexical-seed7", SEEDS) == ("lexical-seed7", 1)


def test_seeds_multiply_runs_and_the_shared_baseline_is_shared_seed_by_seed():
    one = training_runs(with_defaults(shared_default(None), SCHEMA))
    three = training_runs(with_defaults(shared_default(SEEDS), SCHEMA))
    assert len(three) == 3 * len(one)
    baselines = [run for run in three.values() if ("baseline", "en-de", run.users[0][2]) in run.users]
    assert sorted(run.settings["train"]["seed"] for run in baselines) == SEEDS
    for run in baselines:  # one run per seed, used by both experiments
        seed = run.settings["train"]["seed"]
        name = replica_name("baseline", seed, SEEDS)
        assert run.users == [("baseline", "en-de", name), ("emelin2019", "en-de", name)]
        assert run.studies == ["baseline", "emelin2019"]
    # the run of the first seed is named as one seed would name it, under another seed value
    resolved = with_defaults(shared_default(SEEDS), SCHEMA)
    assert [replica.name for replica in experiment_replicas(resolved, "baseline")] == [
        "baseline",
        "baseline-seed2",
        "baseline-seed3",
    ]


def test_a_variant_named_like_a_replica_is_a_config_error(tmp_path):
    config = shared_default(SEEDS)
    config["experiments"]["baseline"]["variants"] = {"baseline": {}, "baseline-seed2": {}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    result = snakemake("-n", "--configfile", str(path))
    assert result.returncode != 0
    assert "experiments.baseline.variants: baseline-seed2 ends in -seed<N>" in result.stdout + result.stderr
    from nmtvariants.config import check_experiments

    with pytest.raises(ConfigError, match="ends in -seed<N>"):
        check_experiments(with_defaults(config, SCHEMA)["experiments"])


# --- dry runs --------------------------------------------------------------------------------------


def train_settings(jobs: list[dict[str, str]]) -> list[dict]:
    """The run settings of each planned `train` job, from its shell command's --config-json."""
    settings = []
    for job in jobs:
        if job["rule"] == "train":
            words = shlex.split(job["shell"].split(" nmtvariants ", 1)[1])
            settings.append(json.loads(words[words.index("--config-json") + 1]))
    return settings


def without_seed(settings: dict) -> str:
    return json.dumps({**settings, "train": {**settings["train"], "seed": None}}, sort_keys=True)


def test_the_default_scores_tables_plan_each_shared_run_once_per_seed(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(shared_default(SEEDS)), encoding="utf-8")
    tables = ["results/tables/baseline/baseline.md", "results/tables/emelin2019/emelin2019.md"]
    result = snakemake("-n", "-p", "--forceall", *tables, "--configfile", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    jobs = dry_run_jobs(result.stdout)
    settings = train_settings(jobs)
    systems = len(training_runs(with_defaults(shared_default(None), SCHEMA)))
    assert len(settings) == 3 * systems
    assert sorted(map(sorted, _seeds_by_system(settings).values())) == [SEEDS] * systems
    # the baseline experiment's table reads the shared baseline's three replicas, with their seeds
    (table,) = [job for job in jobs if job["rule"] == "scores_table" and "tables/baseline/" in job["output"]]
    assert re.findall(r"results/baseline/en-de/([\w-]+)/test\.scores\.json", table["shell"]) == [
        "baseline",
        "baseline-seed2",
        "baseline-seed3",
    ]
    assert "--seeds 1 2 3 " in table["shell"]


@pytest.mark.parametrize("paper", PAPERS)
def test_a_paper_config_plans_three_training_runs_per_variant(paper):
    config = load(REPO / "experiments" / f"{paper}.yaml")
    assert {tuple(spec["seeds"]) for spec in config["experiments"].values()} == {tuple(SEEDS)}
    result = snakemake("-n", "-p", "--forceall", "--configfile", f"experiments/{paper}.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    settings = train_settings(dry_run_jobs(result.stdout))
    # one run per distinct (data, model, variant, train) setting with one seed: shared runs stay shared
    systems = len(training_runs(with_defaults(without_seeds(config), SCHEMA)))
    assert len(settings) == 3 * systems
    seeds_per_system = Counter(tuple(sorted(seeds)) for seeds in _seeds_by_system(settings).values())
    assert seeds_per_system == {tuple(SEEDS): systems}


def _seeds_by_system(settings: list[dict]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = defaultdict(list)
    for one in settings:
        grouped[without_seed(one)].append(one["train"]["seed"])
    return grouped


def test_the_multi30k_study_configs_train_every_model_for_the_same_updates_with_three_seeds():
    """Equal updates, not a wall-clock budget (which compared training speed), and three replicas of
    every run: one update count for the corpus, the same in each study's config."""
    updates = set()
    for paper in [*PAPERS, "composition"]:
        config = load(REPO / "experiments" / f"multi30k_{paper}.yaml")
        resolved = with_defaults(config, SCHEMA)
        for name, spec in resolved["experiments"].items():
            assert spec["seeds"] == SEEDS, (paper, name)
            assert spec["train"].get("max_minutes") is None, (paper, name)
            updates.add(spec["train"]["max_updates"])
        runs = training_runs(resolved)
        assert len(runs) == 3 * len(training_runs(with_defaults(without_seeds(config), SCHEMA))), paper
        assert (
            sorted(Counter(run.settings["train"]["seed"] for run in runs.values()).values())
            == [len(runs) // 3] * 3
        )
    assert updates == {1200}
