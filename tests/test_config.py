"""A bad config stops at start-up with the key's path, both in the library and in Snakemake."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from nmtvariants.config import check_config
from nmtvariants.errors import ConfigError


@pytest.fixture()
def default_config(repo_root):
    return yaml.safe_load((repo_root / "config.yaml").read_text())


@pytest.fixture()
def schema(repo_root):
    return repo_root / "schemas" / "config.schema.yaml"


def test_default_config_is_valid(default_config, schema):
    check_config(default_config, schema)


def test_wrong_type_names_nested_key_path(default_config, schema):
    default_config["toyworld"]["sizes"]["train"] = "many"
    with pytest.raises(ConfigError) as error:
        check_config(default_config, schema)
    assert "toyworld.sizes.train: 'many' is not of type 'integer'" in str(error.value)


def test_unknown_key_names_its_path(default_config, schema):
    default_config["toyworld"]["imgae_size"] = 32
    with pytest.raises(ConfigError) as error:
        check_config(default_config, schema)
    assert "toyworld.imgae_size: unknown key" in str(error.value)


def test_snakemake_stops_at_startup_naming_the_key(repo_root, tmp_path):
    bad = yaml.safe_load((repo_root / "config.yaml").read_text())
    bad["toyworld"]["sizes"]["valid"] = -3
    config_path = tmp_path / "bad.yaml"
    config_path.write_text(yaml.safe_dump(bad))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "--configfile",
            str(config_path),
            "--snakefile",
            str(repo_root / "Snakefile"),
            "--directory",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "toyworld.sizes.valid: -3 is less than the minimum of 1" in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("section", "key", "value", "expected"),
    [
        ("train", "warmpu", 100, "experiments.baseline.train.warmpu: unknown key"),
        ("train", "max_updates", "many", "experiments.baseline.train.max_updates: expected int"),
        ("model", "d_modle", 64, "experiments.baseline.model: unknown override(s) d_modle"),
    ],
)
def test_experiment_settings_checked_with_their_path(default_config, section, key, value, expected):
    from nmtvariants.config import check_experiments

    default_config["experiments"]["baseline"][section][key] = value
    with pytest.raises(ConfigError) as error:
        check_experiments(default_config["experiments"])
    assert expected in str(error.value)


def test_unknown_variant_switch_names_the_variant(default_config):
    from nmtvariants.config import check_experiments

    default_config["experiments"]["baseline"]["variants"]["baseline"] = {"shortcutz": True}
    with pytest.raises(ConfigError) as error:
        check_experiments(default_config["experiments"])
    assert "experiments.baseline.variants.baseline" in str(error.value)
    assert "shortcutz" in str(error.value)


def test_variant_pairs_keep_a_variant_to_some_pairs(default_config, schema):
    """A variant restricted by ``variant_pairs`` trains on its pairs only; the others on every pair."""
    from nmtvariants.config import experiment_systems, training_runs, with_defaults

    spec = {
        "pairs": ["en-de", "en-ru"],
        "variants": {"baseline": {}, "ablation": {}, "lexical": {}},
        "variant_pairs": {"ablation": ["en-de"]},
    }
    assert experiment_systems(spec) == [
        ("en-de", "baseline"),
        ("en-de", "ablation"),
        ("en-de", "lexical"),
        ("en-ru", "baseline"),
        ("en-ru", "lexical"),
    ]
    # the default config's EN-DE study with EN-RU added, Table 4's ablations kept to EN-DE
    default_config["experiments"]["emelin2019"]["pairs"] = ["en-de", "en-ru"]
    default_config["experiments"]["emelin2019"]["variant_pairs"] = {
        "dec_to_enc": ["en-de"],
        "dec_to_enc_self": ["en-de"],
    }
    resolved = with_defaults(default_config, schema)
    users = {user for run in training_runs(resolved).values() for user in run.users}
    emelin = {(pair, variant) for name, pair, variant in users if name == "emelin2019"}
    assert ("en-de", "dec_to_enc") in emelin and ("en-ru", "dec_to_enc") not in emelin
    assert ("en-ru", "lexical") in emelin


@pytest.mark.parametrize(
    ("restriction", "expected"),
    [
        ({"lexicl": ["en-de"]}, "experiments.emelin2019.variant_pairs: lexicl not among the variants"),
        (
            {"lexical": ["en-fr"]},
            "experiments.emelin2019.variant_pairs.lexical: en-fr not among the experiment's pairs",
        ),
    ],
)
def test_variant_pairs_name_variants_and_pairs_of_the_experiment(default_config, restriction, expected):
    from nmtvariants.config import check_experiments

    default_config["experiments"]["emelin2019"]["variant_pairs"] = restriction
    with pytest.raises(ConfigError) as error:
        check_experiments(default_config["experiments"])
    assert expected in str(error.value)


def test_variant_train_changes_that_variants_run_alone(default_config, schema):
    """``variant_train`` overrides the experiment's train settings for one variant: its run gets them
    (and so its own run id), every other variant keeps the experiment's and its shared runs."""
    from nmtvariants.config import training_runs, with_defaults

    spec = default_config["experiments"]["bugliarello2020"]
    spec["variant_train"] = {"pascal": {"batch_tokens": 3 * spec["train"]["batch_tokens"]}}
    runs = training_runs(with_defaults(default_config, schema))
    by_user = {user: run for run in runs.values() for user in run.users}
    pascal = by_user[("bugliarello2020", "en-de", "pascal")].settings["train"]
    lisa = by_user[("bugliarello2020", "en-de", "lisa")].settings["train"]
    assert pascal == {**lisa, "batch_tokens": 3 * lisa["batch_tokens"]}
    assert by_user[("bugliarello2020", "en-de", "transformer")] is by_user[("baseline", "en-de", "baseline")]


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        (
            {"pascl": {"warmup": 10}},
            "experiments.bugliarello2020.variant_train: pascl not among the variants",
        ),
        ({"pascal": {"warmpu": 10}}, "experiments.bugliarello2020.variant_train.pascal.warmpu: unknown key"),
    ],
)
def test_variant_train_is_checked_at_start_up(default_config, override, expected):
    from nmtvariants.config import check_experiments

    default_config["experiments"]["bugliarello2020"]["variant_train"] = override
    with pytest.raises(ConfigError) as error:
        check_experiments(default_config["experiments"])
    assert expected in str(error.value)
