"""Plug-ins declare the streams they read (register_variant(..., inputs=...)): a run's data settings
follow from the declaration, a config need not (but may) restate it, and a run that cannot get a
declared stream stops at start-up with one line."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path

import pytest
import yaml
from plugin_fixtures import use_plugins
from training_fixtures import cli_env, make_corpus, run_config, train_command

from nmtvariants.config import check_streams_made, run_settings, training_runs, with_defaults
from nmtvariants.errors import ConfigError
from nmtvariants.models.variants import unregister_variant
from nmtvariants.plugins.lisa import STREAM as LISA_STREAM
from nmtvariants.plugins.pascal import PARENTS_STREAM
from nmtvariants.syntax.dep_labels import STREAM as LABEL_STREAM
from nmtvariants.syntax.dep_labels import UD_RELATIONS
from nmtvariants.training.build import check_declared_inputs
from nmtvariants.training.train_config import parse_run_config

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "schemas" / "config.schema.yaml"
FOLDER = "data/toyworld/en-de/inputs"


def config_with(variants: dict, inputs: dict | None = None) -> dict:
    """config.yaml's baseline experiment alone, with ``variants`` (and ``inputs``), defaults filled in."""
    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    experiment = config["experiments"]["baseline"]
    experiment["variants"] = variants
    if inputs is not None:
        experiment["inputs"] = inputs
    config["experiments"] = {"baseline": experiment}
    return with_defaults(config, SCHEMA)


def data_of(variant: dict, inputs: dict | None = None) -> dict:
    config = config_with({"v": variant}, inputs)
    return run_settings(config, "baseline", "en-de", "v")["data"]


def test_a_pascal_variant_reads_the_parents_without_the_config_naming_them():
    data = data_of({"pascal": {}})
    assert data["train_aux"] == {PARENTS_STREAM: f"{FOLDER}/train.{PARENTS_STREAM}"}
    assert data["valid_aux"] == {PARENTS_STREAM: f"{FOLDER}/valid.{PARENTS_STREAM}"}
    assert data["aux_labels"] == {}


def test_a_composed_variant_reads_the_streams_of_each_plugin():
    data = data_of({"pascal": {"layer": 2}, "lisa": {}, "decoder_layout": "simplified"})
    assert set(data["train_aux"]) == {PARENTS_STREAM, LISA_STREAM} == {"parents_x2", "parents_first"}
    assert data["aux_labels"] == {}


def test_sennrich_haddow_reads_its_labels_with_the_count_of_its_label_table():
    assert (
        data_of({"sennrich_haddow": {}})["aux_labels"]
        == {LABEL_STREAM: len(UD_RELATIONS)}
        == {"dep_labels": 37}
    )
    assert data_of({"sennrich_haddow": {"labels": 40}})["aux_labels"] == {LABEL_STREAM: 40}


def test_a_variant_without_stream_plugins_keeps_the_baselines_run():
    config = config_with({"baseline": {}, "shortcuts": {"shortcuts": {"kind": "feature_fusion"}}})
    assert (
        run_settings(config, "baseline", "en-de", "shortcuts")["data"]
        == run_settings(config, "baseline", "en-de", "baseline")["data"]
    )


@pytest.mark.parametrize(
    ("variant", "restated"),
    [
        ({"pascal": {}}, {"aux": [PARENTS_STREAM]}),
        ({"sennrich_haddow": {}}, {"aux": [LABEL_STREAM], "aux_labels": {LABEL_STREAM: 37}}),
        ({"pascal": {}, "lisa": {}}, {"aux": [LISA_STREAM]}),  # part of them
    ],
)
def test_a_config_that_still_states_the_streams_keeps_the_same_run_id(variant, restated):
    plain = training_runs(config_with({"v": variant}))
    stated = training_runs(config_with({"v": variant}, {"v": restated}))
    assert list(stated) == list(plain)
    assert [run.settings for run in stated.values()] == [run.settings for run in plain.values()]


def test_a_stream_restated_with_another_label_count_is_refused():
    with pytest.raises(ConfigError) as error:
        data_of({"sennrich_haddow": {}}, {"v": {"aux": [LABEL_STREAM], "aux_labels": {LABEL_STREAM: 40}}})
    assert str(error.value) == (
        "experiments.baseline.inputs.v: stream dep_labels is given as 40 labels, but plug-in "
        "sennrich_haddow reads it as 37 labels; drop it there (plug-ins declare their streams)"
    )


def test_config_only_inputs_stay_beside_the_declared_streams():
    """A derived corpus (and sources, features) are the study's choice: the config keeps stating them."""
    config = config_with({"v": {"pascal": {}}}, {"v": {"derived": "multitask"}})
    (run,) = training_runs(config).values()
    assert run.inputs == {"derived": "multitask", "aux": [PARENTS_STREAM]}
    assert run.settings["data"]["train_src"].startswith("data/toyworld/en-de/derived/multitask/")


def test_a_user_plugin_declares_its_streams(tmp_path, monkeypatch):
    plugin = tmp_path / "needs_foo.py"
    plugin.write_text(
        "from nmtvariants.models.variants import PluginInputs, register_variant\n\n\n"
        "@register_variant('needs_foo', inputs=PluginInputs(aux=('foo',), made_by='`make-foo`'))\n"
        "def install(model, options):\n"
        "    pass\n",
        encoding="utf-8",
    )
    use_plugins(monkeypatch, plugin)
    try:
        assert data_of({"needs_foo": {}})["train_aux"] == {"foo": f"{FOLDER}/train.foo"}
    finally:
        unregister_variant("needs_foo")


# --- start-up: the workflow ----------------------------------------------------------------------


def test_the_workflow_stops_when_no_rule_makes_a_declared_stream():
    config = config_with({"baseline": {}, "pascal": {"pascal": {}}})
    runs = training_runs(config)
    check_streams_made(config, runs, lambda path: True)
    with pytest.raises(ConfigError) as error:
        check_streams_made(config, runs, lambda path: not path.endswith(PARENTS_STREAM))
    assert str(error.value) == (
        "experiments.baseline.variants.pascal: plug-in pascal reads the stream parents_x2, but no rule "
        f"makes {FOLDER}/train.parents_x2 (written by `nmtvariants parents --mode middle` on the parsed "
        "source, rule bugliarello2020_parents); include that rule or drop the plug-in"
    )


def test_a_stated_stream_without_a_rule_names_the_config_key():
    config = config_with({"v": {"decoder_layout": "simplified"}}, {"v": {"aux": ["foo"]}})
    with pytest.raises(ConfigError, match=r"^experiments\.baseline\.inputs\.v: the stream foo has no rule"):
        check_streams_made(config, training_runs(config), lambda path: False)


# --- start-up: nmtvariants train ------------------------------------------------------------------


def test_train_without_the_declared_stream_stops_in_one_line_with_status_2(tmp_path):
    config = run_config(make_corpus(tmp_path / "corpus", pairs=20))
    config["variant"] = {"pascal": {}}
    result = subprocess.run(
        train_command(config, tmp_path / "run"), env=cli_env(), capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "nmtvariants train: error: data.train_aux: variant pascal reads the stream parents_x2, which the "
        "run config does not name; give data.train_aux and data.valid_aux {parents_x2: FILE} (written by "
        "`nmtvariants parents --mode middle` on the parsed source, rule bugliarello2020_parents)"
    ]
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_train_checks_the_label_count_and_each_text_split(tmp_path):
    base = run_config({"vocab": "v", "train_src": "s", "train_tgt": "t", "valid_src": "s", "valid_tgt": "t"})
    base["variant"] = {"sennrich_haddow": {}}
    base["data"]["train_aux"] = base["data"]["valid_aux"] = {LABEL_STREAM: "f"}
    with pytest.raises(
        ConfigError, match=r"^data\.aux_labels: .* dep_labels as 37 labels, the run config gives positions"
    ):
        check_declared_inputs(parse_run_config(base))
    labelled = copy.deepcopy(base)
    labelled["data"]["aux_labels"] = {LABEL_STREAM: 37}
    check_declared_inputs(parse_run_config(labelled))
    del labelled["data"]["valid_aux"]
    with pytest.raises(
        ConfigError, match=r"^data\.valid_aux: variant sennrich_haddow reads the stream dep_labels"
    ):
        check_declared_inputs(parse_run_config(labelled))
