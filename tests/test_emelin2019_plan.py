"""The Emelin study's plan without Snakemake: what its tables and analyses read in the default config
and in the Multi30k one, against the configs read by hand."""

from __future__ import annotations

from types import SimpleNamespace

import yaml
from workflow_configs import REPO

from nmtvariants.config import run_index, training_runs, with_defaults
from nmtvariants.layout import averaged_model
from nmtvariants.studies.emelin2019.plan import Emelin2019Plan

SCHEMA = REPO / "schemas" / "config.schema.yaml"


def plan_of(path: str) -> Emelin2019Plan:
    config = with_defaults(yaml.safe_load((REPO / path).read_text(encoding="utf-8")), SCHEMA)
    run_of = run_index(training_runs(config))
    return Emelin2019Plan(config, run_of)


def test_the_default_config_analyses_its_toy_en_de_models_and_builds_tables_1_2_and_4():
    plan = plan_of("config.yaml")
    assert plan.analysed == "emelin2019" and plan.pos and plan.variants_table and plan.bootstrap
    assert list(plan.bleu_tables) == ["table1_bleu", "table2_pairs"]  # no small experiment: no Table 3
    assert plan.mean_args("table1_bleu") == []  # Tables 1 and 2 average their own test sets
    assert plan.mean_args("table3_small") == ["--mean-testsets", "test"]  # Table 3: Table 1's
    table1 = plan.bleu_systems("table1_bleu")
    # the main setting only: Table 4's decoder-to-encoder ablations are not in Table 1
    assert table1 == [("emelin2019", "en-de", v) for v in ("baseline", "lexical", "feature_fusion")]
    assert [system[2] for system in plan.variant_systems()] == [
        "baseline",
        "lexical",
        "feature_fusion",
        "dec_to_enc",
        "dec_to_enc_self",
    ]
    assert plan.contrawsd == ("emelin2019", "en-de")
    assert plan.checkpoint("emelin2019", "en-de", "lexical") == averaged_model(
        plan.run_of[("emelin2019", "en-de", "lexical")], 3
    )
    inputs = plan.probe_inputs(SimpleNamespace(experiment="emelin2019", pair="en-de", variant="lexical"))
    assert inputs["train_states"] == "results/emelin2019/en-de/lexical/analysis/states-train.npz"
    assert inputs["source_train"] == "data/toyworld/en-de/bpe/train.en"
    assert inputs["pos"] == "data/toyworld/en-de/pos/test.en"
    assert plan.states_sentences("emelin2019", "train") == 300  # the toy cap
    # toy probes learn at 10x the authors' rate, and the tables say so
    assert plan.caps("emelin2019")["lr"] == 10 * 2e-4
    assert "Deviation (toy scale): Adam at 0.002, not the authors' 0.0002" in plan.probe_note()


def test_the_multi30k_config_probes_its_small_models_on_a_thousand_training_sentences():
    plan = plan_of("experiments/multi30k_emelin2019.yaml")
    assert plan.analysed is not None and not plan.pos
    assert plan.states_sentences(plan.analysed, "train") == 1000
    assert (
        plan.states_split(plan.analysed, "valid")
        == plan.corpora[plan.experiments[plan.analysed]["corpus"]]["valid"]
    )
    assert "first 1000 sentences" in plan.probe_note()
    assert plan.caps(plan.analysed)["lr"] == 2e-4 and "toy scale" not in plan.probe_note()  # the authors'
