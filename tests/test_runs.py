"""Content-addressed training runs (nmtvariants.config): ids, sharing, defaults, bad references."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from nmtvariants.config import content_id, decode_settings, training_runs, with_defaults
from nmtvariants.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "schemas" / "config.schema.yaml"


def default_config() -> dict:
    """config.yaml with its baseline experiment alone (the studies' experiments add runs of their own)."""
    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    config["experiments"] = {"baseline": config["experiments"]["baseline"]}
    return config


def test_content_id_is_the_sha256_of_sorted_compact_json():
    value = {"b": [1, 2.5, "x"], "a": {"z": None, "y": True}}
    text = '{"a":{"y":true,"z":null},"b":[1,2.5,"x"]}'  # written by hand
    assert content_id(value) == hashlib.sha256(text.encode()).hexdigest()[:12]
    assert content_id(json.loads(json.dumps(value))) == content_id(
        {"a": {"y": True, "z": None}, "b": [1, 2.5, "x"]}
    )
    assert content_id({"a": 1}) != content_id({"a": 1.5})


def test_defaults_are_filled_at_every_level():
    resolved = with_defaults(default_config(), SCHEMA)
    corpus = resolved["corpora"]["toyworld"]
    assert (corpus["train"], corpus["valid"]) == ("train", "valid")
    assert corpus["preprocess"]["lowercase"] is False and corpus["preprocess"]["bpe"]["translit"] == ["ru"]
    evaluate = resolved["experiments"]["baseline"]["evaluate"]
    assert (evaluate["max_len_a"], evaluate["max_len_b"], evaluate["dtype"]) == (1.5, 10, "float32")
    assert "train" not in default_config()["corpora"]["toyworld"]  # the input is left as it was


def test_runs_are_shared_by_settings_and_split_by_any_difference():
    config = default_config()
    baseline = config["experiments"]["baseline"]
    config["experiments"]["again"] = {**baseline, "study": "yang2020", "resources": {"threads": 1, "gpus": 1}}
    config["experiments"]["baseline"]["variants"] = {"baseline": {}, "copy": None}
    runs = training_runs(with_defaults(config, SCHEMA))
    (run,) = runs.values()
    assert run.users == [
        ("baseline", "en-de", "baseline"),
        ("baseline", "en-de", "copy"),
        ("again", "en-de", "baseline"),
    ]
    assert run.studies == ["baseline", "yang2020"]
    assert run.resources == {"threads": 1, "mem_mb": 4000, "runtime": 120, "gpus": 1}  # 120: the default
    assert run.settings["train"]["seed"] == config["seed"]
    config["experiments"]["again"]["pairs"] = ["en-ru"]
    config["seed"] = 5
    assert len(training_runs(with_defaults(config, SCHEMA))) == 2


def test_decode_settings_leave_out_what_is_not_decoding():
    resolved = with_defaults(default_config(), SCHEMA)
    assert decode_settings(resolved, "baseline") == {
        "average_last": 3,
        "beam": 5,
        "alpha": 0.6,
        "max_len_a": 1.5,
        "max_len_b": 10,
        "dtype": "float32",
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"corpus": "toyworl"}, "experiments.baseline.corpus: 'toyworl' is not a configured corpus"),
        ({"pairs": ["en-fr"]}, "experiments.baseline.pairs: en-fr not among the pairs of corpus toyworld"),
    ],
)
def test_an_experiment_naming_a_missing_corpus_or_pair_is_a_config_error(change, message):
    config = default_config()
    config["experiments"]["baseline"].update(change)
    with pytest.raises(ConfigError, match=message):
        training_runs(with_defaults(config, SCHEMA))
