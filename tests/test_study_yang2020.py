"""Yang et al. (2020) wired into the workflow: the table and figure builders on hand-made inputs
(exact rows), the decoding-speed timer against its own raw timings, the toy and full configs against
the study's model overrides, and the planner: each table builds only what it needs, the default DAG
holds every registered table and figure, and the documented switch adds Table 2's depths."""

from __future__ import annotations

import csv
import gzip
import json
import math
import re
import statistics
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml
from data_sources import RealData
from manifests import planned_manifest
from workflow_configs import REPO, default_config_with, dry_run_jobs, snakemake

from nmtvariants.cli import main
from nmtvariants.config import training_runs, with_defaults
from nmtvariants.data.vocab import Vocabulary
from nmtvariants.errors import InputError
from nmtvariants.models import build_model, model_config
from nmtvariants.models.config import study_overrides
from nmtvariants.reporting.deviations import check_registry
from nmtvariants.reporting.manifest import Entry, write_manifest
from nmtvariants.studies.yang2020.tables import (
    DEVIATIONS,
    TABLE_KEYS,
    SpeedSettings,
    System,
    aer_figure_rows,
    bleu_table,
    decode_speed,
    depth_systems,
    layout_systems,
    probe_figure_rows,
    simplified_pairs,
    simplified_table,
    study_systems,
    training_speed,
)
from nmtvariants.text.subword_map import HYPHEN as HYPHEN_MARK
from nmtvariants.text.subword_map import word_ids

SCHEMA = REPO / "schemas" / "config.schema.yaml"
TOY = "yang2020_toy"


def system(
    variant: str, layout: str | None = None, depth: int = 2, experiment: str = "e", pair: str = "en-de"
):
    return System(experiment, pair, variant, layout or variant, "tiny", depth, depth == 2)


def manifest(path: Path, entries: list[dict]) -> str:
    """The manifest a yang2020 rule would write for these entries (a system's dict, its seed, test set
    and files; an AER entry's ``csv`` is its ``layer_aer``, its gold set, corpus and seeds go in info)."""
    written = []
    for entry in entries:
        system, rest = dict(entry["system"]), {k: v for k, v in entry.items() if k != "system"}
        names = {key: system.pop(key) for key in ("experiment", "pair", "variant")}
        files = {
            role: rest.pop(role)
            for role in ("scores", "checkpoint", "train_log", "decode_speed")
            if role in rest
        }
        if "csv" in rest:
            files["layer_aer"] = rest.pop("csv")
        seed, testset = rest.pop("seed", None), rest.pop("testset", None)
        written.append(Entry(files, **names, seed=seed, testset=testset, info={**system, **rest}))
    return str(write_manifest(path, written))


def score_file(path: Path, bleu: float, chrf: float) -> Path:
    record = {
        "system": "x",
        "testset": "test",
        "scores": {
            "bleu": {"score": bleu, "signature": "nrefs:1|bleu"},
            "chrf": {"score": chrf, "signature": "nrefs:1|chrf"},
        },
    }
    path.write_text(json.dumps(record), encoding="utf-8")
    return path


# --- systems from the config ---------------------------------------------------------------------


def resolved(config: dict) -> dict:
    return with_defaults(config, SCHEMA)


def test_the_toy_study_trains_three_layouts_the_standard_one_shared_with_the_baseline():
    systems = study_systems(resolved(yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))))
    assert systems == [
        System(TOY, "en-de", "standard", "standard", "tiny", 2, True),
        System(TOY, "en-de", "sem_ifm", "sem_ifm", "tiny", 2, True),
        System(TOY, "en-de", "simplified", "simplified", "tiny", 2, True),
    ]
    assert [s.variant for s in layout_systems(systems)] == ["standard", "sem_ifm", "simplified"]
    assert [s.variant for s in depth_systems(systems)] == ["standard"]
    assert simplified_pairs(systems) == [(systems[0], systems[2])]
    runs = training_runs(resolved(yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))))
    (shared,) = [run for run in runs.values() if (TOY, "en-de", "standard") in run.users]
    assert ("baseline", "en-de", "baseline") in shared.users  # trained once, for both


def yang_models(config: dict) -> list[dict]:
    return [e["model"] for e in config["experiments"].values() if e["study"] == "yang2020"]


def test_every_full_scale_yang2020_model_is_its_preset_with_the_studys_overrides():
    """The full study is post-norm (fairseq); the toy demo is the pre-norm baseline (config.yaml)."""
    config = yaml.safe_load((REPO / "experiments/yang2020.yaml").read_text(encoding="utf-8"))
    models = yang_models(config)
    assert len(models) == 9
    for model in models:
        extra = {k: v for k, v in model.items() if k not in ("preset", "decoder_layers")}
        assert extra == study_overrides("yang2020", model["preset"]), model


def test_the_full_study_has_every_table_and_paper_setting():
    config = resolved(yaml.safe_load((REPO / "experiments/yang2020.yaml").read_text(encoding="utf-8")))
    systems = study_systems(config)
    assert {s.pair for s in systems} == {"en-de", "en-fr", "en-zh"}
    assert sorted({s.layout for s in layout_systems(systems)}) == [
        "sem_ifm",
        "sem_tem_ifm",
        "simplified",
        "standard",
    ]
    assert sorted({s.decoder_layers for s in depth_systems(systems) if s.pair == "en-de"}) == [2, 4, 6, 8]
    assert {(a.pair, a.size) for a, _ in simplified_pairs(systems)} == {
        (pair, size) for pair in ("en-de", "en-fr", "en-zh") for size in ("base", "big")
    }
    assert config["corpora"]["wmt17_enzh"]["valid"] == "newsdev2017"
    for corpus in config["corpora"].values():
        assert corpus["preprocess"]["bpe"]["merges"] == 40000 and not corpus["preprocess"]["truecase"]
    for name, experiment in config["experiments"].items():
        assert experiment["evaluate"]["beam"] == 10
        compound = "tok-bleu" in experiment["evaluate"]["metrics"]
        assert compound == (experiment["pairs"] != ["en-zh"]), name


# --- tables --------------------------------------------------------------------------------------


def test_bleu_table_rows_and_the_difference_to_the_standard_decoder(tmp_path):
    standard, sem_ifm, deep = system("standard"), system("sem_ifm"), system("standard", depth=4)
    table = bleu_table(
        [
            (standard, "test", score_file(tmp_path / "a.json", 30.0, 55.0), 1),
            (sem_ifm, "test", score_file(tmp_path / "b.json", 27.5, 52.0), 1),
            (deep, "test", score_file(tmp_path / "c.json", 31.0, 56.0), 1),
        ]
    )
    assert table.seeds == [1]
    keys = ["layout", "decoder layers", "n", "BLEU", "chrF", "ΔBLEU", "BLEU seed 1"]
    assert table.csv[keys].to_dict("records") == [
        {"layout": "standard", "decoder layers": 2, "n": 1, "BLEU": 30.0, "chrF": 55.0, "ΔBLEU": 0.0,
         "BLEU seed 1": 30.0},
        {"layout": "sem_ifm", "decoder layers": 2, "n": 1, "BLEU": 27.5, "chrF": 52.0, "ΔBLEU": -2.5,
         "BLEU seed 1": 27.5},
        {"layout": "standard", "decoder layers": 4, "n": 1, "BLEU": 31.0, "chrF": 56.0, "ΔBLEU": 0.0,
         "BLEU seed 1": 31.0},
    ]  # fmt: skip
    assert table.csv["BLEU sd"].isna().all()  # one seed: no spread, not a spread of 0
    assert table.markdown["BLEU"].tolist() == ["30.00", "27.50", "31.00"]


def test_the_bleu_table_over_three_seeds_is_mean_and_sample_sd_of_each_seeds_score(tmp_path):
    """Three recorded seeds per layout: mean and sample sd (statistics.stdev) over the seeds, n = 3,
    every seed's own score in the CSV, ΔBLEU between the means."""
    bleu = {"standard": [30.0, 30.6, 29.1], "sem_ifm": [27.5, 28.4, 27.9]}
    entries = [
        (system(variant), "test", score_file(tmp_path / f"{variant}{seed}.json", score, 50.0 + seed), seed)
        for variant, scores in bleu.items()
        for seed, score in zip((1, 2, 3), scores, strict=True)
    ]
    table = bleu_table(entries)
    assert table.seeds == [1, 2, 3]
    rows = table.csv.to_dict("records")
    for row, (variant, scores) in zip(rows, bleu.items(), strict=True):
        assert row["variant"] == variant and row["n"] == 3
        assert row["BLEU"] == pytest.approx(statistics.mean(scores))
        assert row["BLEU sd"] == pytest.approx(statistics.stdev(scores))
        assert [row[f"BLEU seed {seed}"] for seed in (1, 2, 3)] == scores
        assert row["chrF"] == pytest.approx(52.0) and row["chrF sd"] == pytest.approx(1.0)
    assert rows[1]["ΔBLEU"] == pytest.approx(
        statistics.mean(bleu["sem_ifm"]) - statistics.mean(bleu["standard"])
    )
    mean, sd = statistics.mean(bleu["sem_ifm"]), statistics.stdev(bleu["sem_ifm"])
    assert table.markdown["BLEU"].tolist()[1] == f"{mean:.2f} ± {sd:.2f}"
    # the aggregated columns first, each seed's scores last
    assert list(table.csv.columns)[-6:] == [f"{m} seed {s}" for m in ("BLEU", "chrF") for s in (1, 2, 3)]


def test_a_layout_without_its_standard_decoder_has_no_difference(tmp_path):
    table = bleu_table([(system("sem_ifm"), "test", score_file(tmp_path / "b.json", 27.5, 52.0), 1)])
    assert math.isnan(table.csv["ΔBLEU"].iloc[0])
    assert table.markdown["ΔBLEU"].iloc[0] == ""


def write_log(path: Path, rows: list[dict]) -> Path:
    columns = ["update", "split", "tokens", "tok_per_s", "elapsed_s"]
    with open(path, "w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_training_speed_is_all_tokens_over_the_summed_windows(tmp_path):
    log = write_log(
        tmp_path / "train_log.csv",
        [
            {"update": 100, "split": "train", "tokens": 1000, "tok_per_s": 500},  # 2 s
            {"update": 200, "split": "train", "tokens": 3000, "tok_per_s": 1000},  # 3 s
            {"update": 200, "split": "valid", "tokens": "", "tok_per_s": ""},  # validation: not timed
        ],
    )
    assert training_speed(log) == pytest.approx(4000 / 5)


def test_a_log_without_training_rows_is_an_input_error(tmp_path):
    log = write_log(tmp_path / "train_log.csv", [{"update": 1, "split": "valid"}])
    with pytest.raises(InputError, match="no training rows"):
        training_speed(log)
    with pytest.raises(InputError, match="no training log"):
        training_speed(tmp_path / "missing.csv")


def test_simplified_table_rows_with_ratios_to_the_standard_decoder(tmp_path):
    standard, simplified = system("standard"), system("simplified")
    table = simplified_table(
        [
            (standard, "test", score_file(tmp_path / "a.json", 30.0, 55.0), 1),
            (simplified, "test", score_file(tmp_path / "b.json", 29.8, 54.5), 1),
        ],
        parameters={standard: 1000, simplified: 800},
        train_speed={(standard, 1): 200.0, (simplified, 1): 230.0},
        decode_speed={standard: 10.0, simplified: 11.5},
    )
    rows = table.csv.to_dict("records")
    assert [row["layout"] for row in rows] == ["standard", "simplified"]
    assert "variant" not in table.csv and "variant" not in table.markdown
    assert rows[1]["ΔBLEU"] == pytest.approx(-0.2)
    assert {k: rows[1][k] for k in ("parameters", "train tok/s", "decode sent/s")} == {
        "parameters": 800,
        "train tok/s": 230.0,
        "decode sent/s": 11.5,
    }
    assert rows[1]["parameters ratio"] == pytest.approx(0.8)
    assert rows[1]["train tok/s ratio"] == pytest.approx(1.15)
    assert rows[1]["decode sent/s ratio"] == pytest.approx(1.15)
    assert rows[0]["parameters ratio"] == rows[0]["train tok/s ratio"] == 1.0


def test_table_4_over_seeds_averages_each_seeds_training_speed(tmp_path):
    standard, simplified = system("standard"), system("simplified")
    speeds = {standard: [200.0, 210.0, 190.0], simplified: [230.0, 250.0, 240.0]}
    entries = [
        (s, "test", score_file(tmp_path / f"{s.variant}{seed}.json", 30.0 - seed, 55.0), seed)
        for s in (standard, simplified)
        for seed in (1, 2, 3)
    ]
    table = simplified_table(
        entries,
        parameters={standard: 1000, simplified: 800},
        train_speed={(s, seed): speeds[s][seed - 1] for s in speeds for seed in (1, 2, 3)},
        decode_speed={standard: 10.0, simplified: 11.5},
    )
    rows = table.csv.to_dict("records")
    assert [row["n"] for row in rows] == [3, 3]
    assert rows[1]["train tok/s"] == pytest.approx(statistics.mean(speeds[simplified]))
    assert rows[1]["train tok/s sd"] == pytest.approx(statistics.stdev(speeds[simplified]))
    assert rows[1]["train tok/s ratio"] == pytest.approx(240.0 / 200.0)
    assert rows[1]["BLEU"] == pytest.approx(28.0) and rows[1]["BLEU sd"] == pytest.approx(1.0)
    assert rows[1]["parameters"] == 800 and rows[1]["decode sent/s"] == 11.5


def test_the_table_command_writes_markdown_csv_and_provenance(tmp_path):
    entries = [
        {"system": system("standard").__dict__, "testset": "test",
         "scores": str(score_file(tmp_path / "a.json", 30.0, 55.0))},
        {"system": system("sem_ifm").__dict__, "testset": "test",
         "scores": str(score_file(tmp_path / "b.json", 27.5, 52.0))},
    ]  # fmt: skip
    out = tmp_path / "table1_layouts.md"
    assert (
        main(
            [
                "yang2020-table",
                "--kind",
                "layouts",
                "--manifest",
                manifest(tmp_path / "m.json", entries),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    rows = pd.read_csv(out.with_suffix(".csv")).to_dict("records")
    assert [(r["layout"], float(r["BLEU"]), float(r["ΔBLEU"])) for r in rows] == [
        ("standard", 30.0, 0.0),
        ("sem_ifm", 27.5, -2.5),
    ]
    provenance = json.loads(out.with_suffix(".provenance.json").read_text(encoding="utf-8"))
    assert [s["path"] for s in provenance["sources"]] == [e["scores"] for e in entries]
    assert out.read_text(encoding="utf-8").startswith("# Yang et al. (2020) Table 1")


def test_the_table_command_gives_mean_sd_and_n_over_seeds_and_says_1_seed_for_one(tmp_path):
    bleu = [30.0, 31.0, 29.5]
    entries = [
        {"system": system("standard").__dict__, "seed": seed, "testset": "test",
         "scores": str(score_file(tmp_path / f"a{seed}.json", score, 55.0))}
        for seed, score in zip((1, 2, 3), bleu, strict=True)
    ]  # fmt: skip
    out = tmp_path / "table2_depth.md"
    args = ["yang2020-table", "--kind", "depth", "--out", str(out), "--manifest"]
    assert main([*args, manifest(tmp_path / "m.json", entries)]) == 0
    (row,) = pd.read_csv(out.with_suffix(".csv")).to_dict("records")
    assert row["n"] == 3 and row["BLEU"] == pytest.approx(statistics.mean(bleu))
    assert row["BLEU sd"] == pytest.approx(statistics.stdev(bleu))
    assert [row[f"BLEU seed {seed}"] for seed in (1, 2, 3)] == bleu
    text = out.read_text(encoding="utf-8")
    assert f"{statistics.mean(bleu):.2f} ± {statistics.stdev(bleu):.2f}" in text
    assert "over 3 seeds (1, 2, 3)" in text
    assert main([*args, manifest(tmp_path / "m1.json", entries[:1])]) == 0
    text = out.read_text(encoding="utf-8")
    assert "1 seed (1)" in text and "±" not in text.split("\n\n")[1]  # the table itself


def test_the_aer_table_gives_each_layer_the_mean_and_sd_over_the_seeds(tmp_path):
    """Three replicas' layer-aer CSVs: each layer's AER and coverage is their mean with the sample sd
    (checked against ``statistics``), n is 3, the CSV keeps each seed's value; one seed says so."""
    aers = {1: [0.6, 0.4], 2: [0.5, 0.45], 3: [0.7, 0.3]}
    entries = [
        {
            "system": system("standard").__dict__,
            "csv": str(layer_csv(tmp_path / f"s{seed}.csv", values)),
            "gold": "own",
            "corpus": "toyworld",
            "seed": seed,
        }
        for seed, values in aers.items()
    ]
    out = tmp_path / "layer_aer.md"
    args = ["yang2020-table", "--kind", "aer", "--out", str(out)]
    assert main([*args, "--manifest", manifest(tmp_path / "m.json", entries)]) == 0
    rows = pd.read_csv(out.with_suffix(".csv")).to_dict("records")
    assert [row["layer"] for row in rows] == [1, 2] and {row["n"] for row in rows} == {3}
    for layer, row in enumerate(rows):
        values = [aers[seed][layer] for seed in (1, 2, 3)]
        assert row["AER"] == pytest.approx(statistics.mean(values))
        assert row["AER sd"] == pytest.approx(statistics.stdev(values))
        assert [row[f"AER seed {seed}"] for seed in (1, 2, 3)] == pytest.approx(values)
        assert row["cumulative coverage"] == pytest.approx(0.1 * (layer + 1))
    text = out.read_text(encoding="utf-8")
    assert "over 3 seeds (1, 2, 3)" in text
    assert (
        f"{statistics.mean(aers[s][0] for s in aers):.2f} ± {statistics.stdev(aers[s][0] for s in aers):.2f}"
        in text
    )
    assert main([*args, "--manifest", manifest(tmp_path / "m1.json", entries[:1])]) == 0
    assert "1 seed (1)" in out.read_text(encoding="utf-8")


def test_tables_carry_their_deviations_from_the_paper_and_no_others(tmp_path):
    """Checkpoint averaging under every BLEU table, the missing Chinese segmentation only where a pair
    has Chinese, the gold sets under the AER table only."""
    from nmtvariants.studies.yang2020.cli import TABLES

    check_registry(DEVIATIONS, TABLE_KEYS)
    assert tuple(TABLES) == TABLE_KEYS  # the command's kinds

    by_key = {deviation.key: deviation for deviation in DEVIATIONS}

    def written(kind: str, pair: str) -> tuple[list[str], str]:
        entries = [{"system": system("standard", pair=pair).__dict__, "testset": "test",
                    "scores": str(score_file(tmp_path / f"{pair}.json", 30.0, 55.0))}]  # fmt: skip
        out = tmp_path / f"{kind}-{pair}.md"
        assert (
            main(
                [
                    "yang2020-table",
                    "--kind",
                    kind,
                    "--manifest",
                    manifest(tmp_path / f"{kind}-{pair}.json", entries),
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
        keys = json.loads(out.with_suffix(".provenance.json").read_text(encoding="utf-8"))["deviations"]
        return keys, out.read_text(encoding="utf-8")

    keys, text = written("layouts", "en-de")
    assert keys == ["checkpoint_average"]
    assert text.endswith(f"**Deviations from the paper**\n\n- {by_key['checkpoint_average'].text}\n")
    assert by_key["chinese_segmentation"].text not in text and by_key["aer_gold"].text not in text
    assert written("depth", "en-zh")[0] == ["checkpoint_average", "chinese_segmentation"]
    toy = {"system": system("standard").__dict__, "csv": str(layer_csv(tmp_path / "a.csv", [0.6, 0.4])),
           "gold": "own", "corpus": "toyworld"}  # fmt: skip
    out = tmp_path / "layer_aer.md"
    assert (
        main(
            [
                "yang2020-table",
                "--kind",
                "aer",
                "--manifest",
                manifest(tmp_path / "aer.json", [toy]),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    text = out.read_text(encoding="utf-8")
    assert by_key["aer_gold"].text in text and by_key["checkpoint_average"].text not in text


def layer_csv(path: Path, aers: list[float]) -> Path:
    rows = [{"layer": k + 1, "aer": a, "precision": 1 - a, "recall": 0.5, "coverage": 0.1 * (k + 1),
             "layer_coverage": 0.1} for k, a in enumerate(aers)]  # fmt: skip
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_the_aer_table_has_a_row_per_layer_and_the_domain_gap_note_for_hansards(tmp_path):
    toy = {"system": system("standard").__dict__, "csv": str(layer_csv(tmp_path / "a.csv", [0.6, 0.4])),
           "gold": "own", "corpus": "toyworld"}  # fmt: skip
    enfr = system("standard", experiment="m30k", pair="en-fr").__dict__
    real = {"system": enfr, "csv": str(layer_csv(tmp_path / "b.csv", [0.8, 0.7, 0.75])),
            "gold": "hansards", "corpus": "multi30k"}  # fmt: skip
    out = tmp_path / "layer_aer.md"
    args = ["yang2020-table", "--kind", "aer", "--out", str(out)]
    assert main([*args, "--manifest", manifest(tmp_path / "m2.json", [toy, real])]) == 0
    rows = pd.read_csv(out.with_suffix(".csv")).to_dict("records")
    assert [(r["pair"], r["gold"], r["layer"], r["AER"]) for r in rows] == [
        ("en-de", "own test set", 1, 0.6),
        ("en-de", "own test set", 2, 0.4),
        ("en-fr", "Hansards EN-FR", 1, 0.8),
        ("en-fr", "Hansards EN-FR", 2, 0.7),
        ("en-fr", "Hansards EN-FR", 3, 0.75),
    ]
    assert [r["cumulative coverage"] for r in rows[2:]] == pytest.approx([0.1, 0.2, 0.3])
    text = out.read_text(encoding="utf-8")
    assert "domain gap" in text and "Multi30k's image captions" in text and "parliament" in text
    assert (
        main([*args, "--manifest", manifest(tmp_path / "m1.json", [toy])]) == 0
    )  # no Hansards row: no caveat
    assert "domain gap" not in out.read_text(encoding="utf-8")
    (tmp_path / "a.csv").write_text("layer,aer\n1,0.5\n", encoding="utf-8")
    assert (
        main([*args, "--manifest", manifest(tmp_path / "m1.json", [toy])]) == 2
    )  # a CSV without layer-aer's columns


def test_table_4_counts_the_checkpoints_parameters(tmp_path):
    """Parameters come from the stored checkpoints, and the simplified decoder has exactly the FFN and
    LayerNorm of each decoder layer fewer (counted by hand from the preset's sizes)."""
    vocab_size, cfg = 50, model_config("tiny")
    entries = []
    for variant in ("standard", "simplified"):
        model_cfg = model_config("tiny", variant={"decoder_layout": variant})
        path = tmp_path / f"{variant}.pt"
        torch.manual_seed(0)
        model = build_model(model_cfg, vocab_size)
        torch.save(
            {"model": model.state_dict(), "model_config": model_cfg.to_dict(), "vocab_size": vocab_size}, path
        )
        log = write_log(tmp_path / f"{variant}.csv", [{"split": "train", "tokens": 100, "tok_per_s": 50}])
        speed = tmp_path / "speed.json"
        speed.write_text(json.dumps({"sentences_per_second": {"standard": 4.0, "simplified": 5.0}}))
        entries.append(
            {"system": system(variant).__dict__, "testset": "test", "checkpoint": str(path),
             "scores": str(score_file(tmp_path / f"{variant}.json", 30.0, 55.0)),
             "train_log": str(log), "decode_speed": str(speed)}
        )  # fmt: skip
    out = tmp_path / "table4.md"
    main(
        [
            "yang2020-table",
            "--kind",
            "simplified",
            "--manifest",
            manifest(tmp_path / "m.json", entries),
            "--out",
            str(out),
        ]
    )
    frame = pd.read_csv(out.with_suffix(".csv"))
    d, f = cfg.d_model, cfg.d_ff
    removed_per_layer = (d * f + f) + (f * d + d) + 2 * d  # FFN (biased) + its LayerNorm
    assert (
        frame["parameters"].tolist()[0] - frame["parameters"].tolist()[1]
        == cfg.decoder_layers * removed_per_layer
    )
    assert frame["decode sent/s ratio"].tolist() == [1.0, 1.25]


# --- figures -------------------------------------------------------------------------------------


def probe_frame(rows: list[tuple[str, int, str, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["target_side", "layer", "module", "perplexity"])


PROBES_STANDARD = probe_frame(
    [
        ("source", 0, "Encoder", 2.0),
        ("source", 1, "TEM", 9.0),
        ("source", 1, "SEM", 5.0),
        ("source", 1, "Add-NormI", 6.0),
        ("source", 1, "FF", 7.0),
        ("source", 1, "Add-Norm", 8.0),
        ("source", 1, "IFM", 8.0),
        ("target", 1, "IFM", 20.0),
    ]
)
PROBES_SIMPLIFIED = probe_frame([("source", 1, "TEM", 9.5), ("source", 1, "IFM", 7.5)])


def test_figure_3_and_8_rows_are_the_standard_decoders_modules():
    probes = [(system("standard"), PROBES_STANDARD), (system("simplified"), PROBES_SIMPLIFIED)]
    assert probe_figure_rows("fig3", "source", probes) == [
        {"layer": 0, "perplexity": 2.0, "series": "Encoder"},
        {"layer": 1, "perplexity": 9.0, "series": "TEM"},
        {"layer": 1, "perplexity": 5.0, "series": "SEM"},
        {"layer": 1, "perplexity": 8.0, "series": "IFM"},
    ]
    assert probe_figure_rows("fig8", "source", probes) == [
        {"layer": 1, "perplexity": 6.0, "series": "Add-NormI"},
        {"layer": 1, "perplexity": 7.0, "series": "FF"},
        {"layer": 1, "perplexity": 8.0, "series": "Add-Norm"},
    ]
    assert probe_figure_rows("fig3", "target", probes) == [{"layer": 1, "perplexity": 20.0, "series": "IFM"}]


def test_figure_10_draws_both_decoders():
    probes = [(system("standard"), PROBES_STANDARD), (system("simplified"), PROBES_SIMPLIFIED)]
    assert probe_figure_rows("fig10", "source", probes) == [
        {"layer": 1, "perplexity": 9.0, "series": "standard TEM"},
        {"layer": 1, "perplexity": 5.0, "series": "standard SEM"},
        {"layer": 1, "perplexity": 8.0, "series": "standard IFM"},
        {"layer": 1, "perplexity": 9.5, "series": "simplified TEM"},
        {"layer": 1, "perplexity": 7.5, "series": "simplified IFM"},
    ]


def test_a_systems_replicas_share_its_line_so_the_figure_draws_their_mean_and_band(tmp_path):
    """Two seeds of the standard decoder: their rows carry the same series name as one seed's would
    (the figure averages rows of one series and layer); so do their AER rows."""
    second = probe_frame([("source", 1, "IFM", 10.0)])
    probes = [(system("standard"), PROBES_STANDARD), (system("standard"), second)]
    rows = probe_figure_rows("fig3", "source", probes)
    assert [row for row in rows if row["layer"] == 1 and row["series"] == "IFM"] == [
        {"layer": 1, "perplexity": 8.0, "series": "IFM"},
        {"layer": 1, "perplexity": 10.0, "series": "IFM"},
    ]
    tables = [(system("standard"), layer_csv(tmp_path / f"{k}.csv", [0.6 - k / 10])) for k in range(2)]
    assert {row["series"] for row in aer_figure_rows("aer", tables)} == {"standard"}


def test_figures_4_to_7_name_layouts_and_depths(tmp_path):
    tables = []
    for name, depth, values in (
        ("standard", 2, [0.6, 0.4]),
        ("sem_ifm", 2, [0.7, 0.65]),
        ("standard", 1, [0.5]),
    ):
        path = tmp_path / f"{name}{depth}.csv"
        pd.DataFrame({"layer": range(1, depth + 1), "aer": values, "coverage": [0.9] * depth}).to_csv(
            path, index=False
        )
        tables.append((system(name, depth=depth, experiment=f"e{depth}"), path))
    rows = aer_figure_rows("aer", tables)
    assert rows == [
        {"layer": 1, "aer": 0.6, "series": "e2 en-de standard (2 layers)"},
        {"layer": 2, "aer": 0.4, "series": "e2 en-de standard (2 layers)"},
        {"layer": 1, "aer": 0.7, "series": "e2 en-de sem_ifm (2 layers)"},
        {"layer": 2, "aer": 0.65, "series": "e2 en-de sem_ifm (2 layers)"},
        {"layer": 1, "aer": 0.5, "series": "e1 en-de standard (1 layers)"},
    ]
    assert aer_figure_rows("coverage", tables[:2])[0] == {"layer": 1, "coverage": 0.9, "series": "standard"}


# --- the gold-aligned test set -------------------------------------------------------------------


def pieces_of(words: list[str]) -> tuple[list[str], list[int]]:
    """Gold-tokenised words -> (pieces, word of each piece), built forwards: hyphens split the Moses
    way (``a-b`` -> ``a @-@ b``), then every token cut into one-character BPE pieces."""
    pieces, owners = [], []
    for index, word in enumerate(words):
        tokens = []
        for number, part in enumerate(word.split("-")):
            tokens += ([HYPHEN_MARK] if number else []) + [part]
        for token in tokens:
            chars = [token] if token == HYPHEN_MARK else list(token)
            pieces += [c + "@@" for c in chars[:-1]] + [chars[-1]]
            owners += [index] * len(chars)
    return pieces, owners


@pytest.mark.parametrize(
    "words",
    [
        ["the", "dark-blue", "ball"],
        ["Tom", "trifft", "die", "Stein-Münze", "."],
        ["a", "b-c-d", "e-f"],
        ["no", "hyphen", "here"],
    ],
)
def test_word_ids_glue_hyphen_splits_back_into_the_golds_words(words):
    pieces, owners = pieces_of(words)
    assert word_ids(pieces) == owners


def test_word_ids_of_a_segmented_marker_and_of_a_line_starting_with_one():
    assert word_ids(["the", "dar@@", "k", "@@@", "-@@", "@", "blue", "cube"]) == [
        0,
        1,
        1,
        1,
        1,
        1,
        1,
        2,
    ]
    assert word_ids(["@-@", "x"]) == [0, 0]  # a marker glues what follows it


def save_model(path: Path, layout: str, vocab_size: int, seed: int) -> Path:
    cfg = model_config("tiny", study_overrides("yang2020", "tiny"), {"decoder_layout": layout})
    torch.manual_seed(seed)
    model = build_model(cfg, vocab_size)
    torch.save({"model": model.state_dict(), "model_config": cfg.to_dict(), "vocab_size": vocab_size}, path)
    return path


def aer_files(
    tmp_path: Path, src: list[str], tgt: list[str], gold: list[str]
) -> tuple[Path, Path, Path, Path]:
    paths = []
    for name, lines in (("src", src), ("tgt", tgt), ("gold", gold)):
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(tmp_path / name)
    vocab = Vocabulary.build([*src, *tgt])
    vocab.save(tmp_path / "vocab.txt")
    return (*paths, tmp_path / "vocab.txt")  # type: ignore[return-value]


def test_without_hyphens_the_study_command_equals_layer_aer(tmp_path):
    src, tgt, gold, vocab = aer_files(
        tmp_path,
        ["the red b@@ all is here", "a cu@@ be", "Tom sees the st@@ one coin ."],
        ["der rote Ba@@ ll ist hier", "ein Wür@@ fel", "Tom sieht die St@@ ein@@ münze ."],
        ["0-0 1-1 2-2 3-3 4-4", "0-0 1-1", "0-0 1-1 2-2 3-3 4-3 5-4"],
    )
    checkpoint = save_model(tmp_path / "m.pt", "standard", len(Vocabulary.load(vocab)), seed=3)
    common = ["--checkpoint", str(checkpoint), "--vocab", str(vocab), "--src", str(src), "--tgt", str(tgt)]
    common += ["--gold", str(gold)]
    main(["layer-aer", *common, "--output", str(tmp_path / "library.csv")])
    main(["yang2020-layer-aer", *common, "--output", str(tmp_path / "study.csv")])
    library = (tmp_path / "library.csv").read_text(encoding="utf-8")
    assert (tmp_path / "study.csv").read_text(encoding="utf-8") == library
    assert len(library.splitlines()) == 1 + 2  # a row per decoder layer


def test_with_hyphens_the_gold_links_are_read_against_the_glued_words(tmp_path):
    """``Metall @-@ Stern`` is one gold word: the target has 7 words, not the 9 tokens layer-aer's
    own sub-word map would count, so each layer aligns 7 target words (one link each), and a gold
    link to an 8th target word is out of range."""
    src, tgt, gold, vocab = aer_files(
        tmp_path,
        ["the bottle is below the star ."],
        ["die Fla@@ sche ist unter dem Metall @-@ Stern ."],
        ["0-0 1-1 2-2 3-3 4-4 5-5 6-6"],
    )
    checkpoint = save_model(tmp_path / "m.pt", "simplified", len(Vocabulary.load(vocab)), seed=4)
    out = tmp_path / "study.csv"
    main(["yang2020-layer-aer", "--checkpoint", str(checkpoint), "--vocab", str(vocab), "--src", str(src),
          "--tgt", str(tgt), "--gold", str(gold), "--output", str(out)])  # fmt: skip
    rows = pd.read_csv(out).to_dict("records")
    assert [row["n_hyp_links"] for row in rows] == [7, 7]  # one source word per target word: 7, not 9
    assert all(row["n_source_words"] == 7 for row in rows)
    (tmp_path / "gold").write_text("0-0 1-1 2-2 3-3 4-4 5-5 6-7\n", encoding="utf-8")
    with pytest.raises(InputError, match="gold"):
        from nmtvariants.studies.yang2020.tables import gold_aligned_set

        gold_aligned_set(src, tgt, tmp_path / "gold")


# --- decoding speed ------------------------------------------------------------------------------


def test_decode_speed_is_sentences_over_the_median_round():
    vocab = Vocabulary.build(["a b c d e f"])
    torch.manual_seed(0)
    models = {
        name: build_model(model_config("tiny", variant={"decoder_layout": name}), len(vocab)).eval()
        for name in ("standard", "simplified")
    }
    lines = ["a b c", "d e f a", "b"]
    settings = SpeedSettings(beam_size=2, max_len_a=0.0, max_len_b=4, rounds=3)
    with torch.inference_mode():
        record = decode_speed(models, vocab, lines, settings)
    for name in models:
        seconds = record["seconds"][name]
        assert len(seconds) == 3 and all(s > 0 for s in seconds)
        assert record["sentences_per_second"][name] == pytest.approx(3 / sorted(seconds)[1])
    assert record["sentences"] == 3 and record["settings"]["beam_size"] == 2


# --- the planner ---------------------------------------------------------------------------------


def plan(*args: str) -> list[dict[str, str]]:
    result = snakemake("-n", "-p", "--forceall", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    return dry_run_jobs(result.stdout)


def rules_of(jobs: list[dict[str, str]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for job in jobs:
        counts[job["rule"]] = counts.get(job["rule"], 0) + 1
    return counts


STUDY_RULES = {"yang2020_probes", "yang2020_layer_aer", "yang2020_decode_speed"}


@pytest.mark.parametrize(
    ("table", "trained", "study_jobs"),
    [
        ("table1_layouts", 3, set()),
        ("table2_depth", 1, set()),
        ("table4_simplified", 2, {"yang2020_decode_speed"}),
    ],
)
def test_a_table_target_plans_only_what_it_needs(table, trained, study_jobs):
    rules = rules_of(plan(f"results/tables/yang2020/{table}.md"))
    assert rules["train"] == rules["average"] == rules["evaluate"] == trained
    assert rules["yang2020_table"] == 1
    assert {rule for rule in rules if rule in STUDY_RULES} == study_jobs
    assert "figure" not in rules and "report" not in rules and "scores_table" not in rules


def test_a_figure_target_plans_its_analysis_only():
    rules = rules_of(plan("results/figures/yang2020/fig10_source.png"))
    assert rules["yang2020_probes"] == 2 and rules["train"] == 2  # standard and simplified
    assert not {"yang2020_layer_aer", "evaluate", "yang2020_table"} & set(rules)
    rules = rules_of(plan("results/figures/yang2020/figs4_7_coverage.png"))
    assert rules["yang2020_layer_aer"] == 3
    assert "yang2020_probes" not in rules and "evaluate" not in rules


TABLES = [
    f"results/tables/yang2020/{name}.md" for name in ("table1_layouts", "table2_depth", "table4_simplified")
]
FIGURES = [
    f"results/figures/yang2020/{name}.png"
    for name in (
        *(f"{figure}_{side}" for figure in ("fig3", "fig8", "fig10") for side in ("source", "target")),
        "figs4_7_aer",
        "figs4_7_coverage",
    )
]


def test_the_default_dag_builds_every_table_and_figure_of_the_study():
    jobs = plan()
    (everything,) = [job for job in jobs if job["rule"] == "all"]
    inputs = everything["input"].split(", ")
    for path in [*TABLES, *FIGURES, f"results/tables/yang2020/{TOY}.md"]:
        assert path in inputs
    drawn = {job["output"] for job in jobs if job["rule"] == "figure"}
    assert set(FIGURES) <= drawn
    (aer,) = [job for job in jobs if job["rule"] == "yang2020_layer_aer"][:1]
    assert "--gold data/toyworld/raw/test.en-de.align" in aer["shell"]
    (probes,) = [job for job in jobs if job["rule"] == "yang2020_probes"][:1]
    assert "--max-sentences=300" in probes["shell"] and "--max-epochs=3" in probes["shell"]  # capped
    by_study = rules_of(plan("yang2020"))
    assert by_study["train"] == 3 and "yang2020_probes" in by_study


def table_entries(job: dict[str, str]) -> list[dict]:
    """The manifest of a planned yang2020_table job."""
    return planned_manifest(job["shell"])


@pytest.mark.parametrize("table", ["table1_layouts", "table2_depth", "table4_simplified"])
def test_with_three_seeds_each_table_reads_three_replicas_per_variant(table):
    """experiments/yang2020.yaml trains every system with seeds 1, 2 and 3: the table job reads each
    system's three replicas (the first seed under the variant's own name), with their seeds."""
    jobs = plan(f"results/tables/yang2020/{table}.md", "--configfile", "experiments/yang2020.yaml")
    (job,) = [job for job in jobs if job["rule"] == "yang2020_table"]
    entries = table_entries(job)
    by_system: dict[tuple, list] = {}
    seeds: dict[tuple, list] = {}
    for entry in entries:
        key = (entry["experiment"], entry["pair"], entry["variant"])
        by_system.setdefault(key, []).append(entry["files"])
        seeds.setdefault(key, []).append(entry["seed"])
    assert by_system
    for (experiment, pair, variant), replicas in by_system.items():
        assert seeds[experiment, pair, variant] == [1, 2, 3]
        folders = [entry["scores"].split("/")[3] for entry in replicas]
        assert folders == [variant, f"{variant}-seed2", f"{variant}-seed3"]
        for entry in replicas:
            assert entry["scores"].startswith(f"results/{experiment}/{pair}/")
            assert entry["scores"] in job["input"]
        if table == "table4_simplified":  # each seed's own run, one decoding-speed job per pair
            assert len({entry["train_log"] for entry in replicas}) == 3
            assert len({entry["decode_speed"] for entry in replicas}) == 1
    assert Counter(job["rule"] for job in jobs)["yang2020_decode_speed"] == (
        len({(e, p) for e, p, _ in by_system}) if table == "table4_simplified" else 0
    )


@pytest.mark.parametrize(
    ("figure", "rule", "data"),
    [
        ("figs4_7_aer", "yang2020_layer_aer", "yang2020_aer_figures"),
        ("fig3_source", "yang2020_probes", "yang2020_probe_figures"),
    ],
)
def test_with_three_seeds_the_per_layer_analyses_run_on_every_replica(figure, rule, data):
    """experiments/yang2020.yaml's seeds 1-3: one analysis job per replica of each analysed system
    (each reading its own seed's model), all of them in the figure data's manifest, and the figure's
    title claims no single seed."""
    jobs = plan(f"results/figures/yang2020/{figure}.png", "--configfile", "experiments/yang2020.yaml")
    analyses = [job for job in jobs if job["rule"] == rule]
    folders = Counter(  # (experiment, pair, variant) of each job's folder
        (*Path(job["output"]).parts[2:4], Path(job["output"]).parent.name.split("-seed")[0])
        for job in analyses
    )
    assert folders and set(folders.values()) == {3}
    models = {next(path for path in job["input"].split(", ") if path.endswith(".pt")) for job in analyses}
    assert len(models) == len(analyses)  # every replica reads its own seed's model
    (figure_data,) = [job for job in jobs if job["rule"] == data]
    entries = planned_manifest(figure_data["shell"])
    assert sorted(entry["seed"] for entry in entries) == sorted([1, 2, 3] * len(folders))
    assert {file for entry in entries for file in entry["files"].values()} == {
        job["output"] for job in analyses
    }
    (drawn,) = [job for job in jobs if job["rule"] == "figure"]
    assert "seed 1 only" not in drawn["shell"]


def uncommented_switch() -> dict:
    """config.yaml with the yang2020 block's commented switch lines turned on."""
    lines, block = [], False
    for line in (REPO / "config.yaml").read_text(encoding="utf-8").splitlines():
        if re.fullmatch(r"      # sem_tem_ifm: .*", line):
            line = line.replace("# ", "", 1)
        elif re.fullmatch(r"  # yang2020_toy_dec\d:", line):
            line, block = line.replace("# ", "", 1), True
        elif block and line.startswith("  #   "):
            line = "    " + line[len("  #   ") :]
        else:
            block = False
        lines.append(line)
    return yaml.safe_load("\n".join(lines))


def test_the_documented_switch_adds_the_reordered_decoder_and_the_depths(tmp_path):
    config = uncommented_switch()
    assert set(config["experiments"]) >= {TOY, f"{TOY}_dec1", f"{TOY}_dec3"}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    table2 = plan("results/tables/yang2020/table2_depth.md", "--configfile", str(path))
    assert rules_of(table2)["train"] == 3  # 1, 2 and 3 decoder layers
    table1 = plan("results/tables/yang2020/table1_layouts.md", "--configfile", str(path))
    assert rules_of(table1)["train"] == 4  # + sem_tem_ifm
    systems = study_systems(resolved(default_config_with({"experiments": config["experiments"]})))
    assert sorted(s.decoder_layers for s in depth_systems(systems)) == [1, 2, 3]


# --- real data: the Hansards EN-FR gold through a Multi30k EN-FR chain ---------------------------

MULTI30K_CONFIG = REPO / "experiments" / "multi30k_yang2020.yaml"
PREPROCESS = yaml.safe_load(MULTI30K_CONFIG.read_text(encoding="utf-8"))["corpora"]["multi30k"]["preprocess"]
GOLD_LINES = 64  # the first gold sentences: parentheses (line 47) and « » (line 62) among them


def _write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def hansards(real_data: RealData, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """data/multi30k/en-fr as rules/preprocess.smk trains it (Moses without -a or escaping, truecaser,
    joint BPE), on 300 real Multi30k training lines, and the first Hansards gold sentences as the
    study's download rule fetches them (catalogue `hansards_enfr_align`, from the mirror)."""
    root = tmp_path_factory.mktemp("m30k_hansards")
    pair = root / "multi30k" / "en-fr"
    tc = {}
    for lang in ("en", "fr"):
        with gzip.open(
            real_data.file(f"multi30k/task1/raw/train.{lang}.gz"), "rt", encoding="utf-8"
        ) as handle:
            raw = _write(root / f"raw.{lang}", [next(handle).rstrip("\n") for _ in range(300)])
        norm, tok, tc[lang] = root / f"norm.{lang}", root / f"tok.{lang}", pair / "tc" / f"train.{lang}"
        model = pair / "truecase" / f"model.{lang}"
        assert main(["normalize", "-l", lang, str(raw), "-o", str(norm)]) == 0
        assert main(["tokenize", "-l", lang, "--no-escape", str(norm), "-o", str(tok)]) == 0
        assert main(["truecase", "train", "--model", str(model), str(tok)]) == 0
        assert main(["truecase", "apply", "--model", str(model), "-o", str(tc[lang]), str(tok)]) == 0
    assert (
        main(
            [
                "bpe",
                "learn",
                "--input",
                f"en={tc['en']}",
                "--input",
                f"fr={tc['fr']}",
                "-s",
                "400",
                "--codes",
                str(pair / "bpe" / "codes"),
                "--vocab-dir",
                str(pair / "bpe"),
            ]
        )
        == 0
    )
    gold = root / "hansards_enfr_align" / "raw"
    mirror = real_data.corpus("hansards_enfr_align")
    assert main(["download", "hansards_enfr_align", "--dest", str(gold), "--mirror", str(mirror)]) == 0
    files = {"pair": pair}
    for name in ("test.orig.en", "test.orig.fr", "test.talp", "test.align", "test.en"):
        lines = (gold / name).read_text(encoding="utf-8").splitlines()
        assert len(lines) == 447, name
        files[name] = _write(root / "gold" / name, lines[:GOLD_LINES])
    return files


def chain(hansards: dict[str, Path], lang: str, source: Path, output: Path) -> int:
    return main(
        [
            "yang2020-gold-chain",
            "--corpus-dir",
            str(hansards["pair"]),
            "-l",
            lang,
            "--preprocess",
            json.dumps(PREPROCESS),
            "--input",
            str(source),
            "--output",
            str(output),
        ]
    )


def test_the_hansards_gold_keeps_its_tokens_through_the_models_chain(hansards, tmp_path):
    """Each gold line's BPE pieces, joined by hand, give back the gold's tokens one for one, as Moses'
    normaliser writes them (« -> ") and up to case (the truecaser), and the gold-aligned set read
    from the chained text has the talp gold's links, equal to the Berkeley copy's 0-based
    French-first links reversed."""
    from nmtvariants.text.moses import Normalizer

    for lang in ("en", "fr"):
        normalize = Normalizer(lang)
        out = tmp_path / f"test.{lang}"
        assert chain(hansards, lang, hansards[f"test.orig.{lang}"], out) == 0
        given = hansards[f"test.orig.{lang}"].read_text(encoding="utf-8").splitlines()
        chained = out.read_text(encoding="utf-8").splitlines()
        assert len(chained) == len(given) == GOLD_LINES
        assert any("@@" in line for line in chained)  # BPE did split words
        for gold_line, bpe_line in zip(given, chained, strict=True):
            joined = re.sub(r"@@( |$)", "", bpe_line).split()
            expected = [normalize(t).strip().lower() for t in gold_line.split()]
            assert [t.lower() for t in joined] == expected, gold_line
    from nmtvariants.corpora.alignments import read_alignments
    from nmtvariants.studies.yang2020.tables import gold_aligned_set

    words = (hansards["test.orig.en"], hansards["test.orig.fr"])
    test_set = gold_aligned_set(
        tmp_path / "test.en", tmp_path / "test.fr", hansards["test.talp"], "talp", words=words
    )
    berkeley = read_alignments(hansards["test.align"], "berkeley", reverse=True)
    assert test_set.gold == berkeley and sum(len(g.sure) for g in berkeley) > 0
    counts = [len(line.split()) for line in words[0].read_text(encoding="utf-8").splitlines()]
    assert test_set.src_word_counts == counts
    # FR-EN: the same gold read reversed
    reverse = gold_aligned_set(
        tmp_path / "test.fr",
        tmp_path / "test.en",
        hansards["test.talp"],
        "talp",
        reverse=True,
        words=words[::-1],
    )
    assert reverse.gold == [g.reversed() for g in test_set.gold]


def test_a_gold_line_the_chain_cannot_reconcile_is_named(hansards, tmp_path, capsys):
    lines = hansards["test.orig.en"].read_text(encoding="utf-8").splitlines()
    lines[4] = lines[4].replace(" ", "(", 1)  # Moses' normaliser puts a space back before "("
    bad = _write(tmp_path / "bad.en", lines)
    assert chain(hansards, "en", bad, tmp_path / "out.en") == 2
    error = capsys.readouterr().err
    assert f"{bad}:5: the chain gives {len(lines[4].split()) + 1} words" in error
    assert not (tmp_path / "out.en").exists()


def test_layer_aer_on_the_hansards_gold_checks_words_and_equals_the_library(hansards, tmp_path):
    for lang in ("en", "fr"):
        assert chain(hansards, lang, hansards[f"test.orig.{lang}"], tmp_path / f"test.{lang}") == 0
    bpe = [tmp_path / "test.en", tmp_path / "test.fr"]
    vocab = Vocabulary.build([line for path in bpe for line in path.read_text(encoding="utf-8").splitlines()])
    vocab.save(tmp_path / "vocab.txt")
    checkpoint = save_model(tmp_path / "m.pt", "standard", len(vocab), seed=5)
    common = [
        "--checkpoint",
        str(checkpoint),
        "--vocab",
        str(tmp_path / "vocab.txt"),
        "--src",
        str(bpe[0]),
        "--tgt",
        str(bpe[1]),
        "--gold",
        str(hansards["test.talp"]),
        "--format",
        "talp",
        "--src-words",
        str(hansards["test.orig.en"]),
        "--tgt-words",
        str(hansards["test.orig.fr"]),
    ]
    assert main(["yang2020-layer-aer", *common, "--output", str(tmp_path / "study.csv")]) == 0
    assert main(["layer-aer", *common, "--output", str(tmp_path / "library.csv")]) == 0
    study = pd.read_csv(tmp_path / "study.csv")
    assert study.equals(pd.read_csv(tmp_path / "library.csv"))
    english = hansards["test.orig.en"].read_text(encoding="utf-8").split()
    assert list(study["n_source_words"]) == [len(english)] * 2  # words of the gold, not BPE pieces
    # a word file whose line 3 lost a token: the BPE'd line 3 no longer matches it
    lines = hansards["test.orig.fr"].read_text(encoding="utf-8").splitlines()
    lines[2] = " ".join(lines[2].split()[:-1])
    short = _write(tmp_path / "short.fr", lines)
    from nmtvariants.studies.yang2020.tables import gold_aligned_set

    with pytest.raises(InputError, match=rf"test\.fr:3: .* but {re.escape(str(short))}:3 has"):
        gold_aligned_set(
            bpe[0], bpe[1], hansards["test.talp"], "talp", words=(hansards["test.orig.en"], short)
        )


def test_the_multi30k_config_scores_the_enfr_model_on_hansards_and_shares_the_ende_baseline():
    from nmtvariants.config import run_index
    from nmtvariants.studies.yang2020.plan import Yang2020Plan

    config = resolved(yaml.safe_load(MULTI30K_CONFIG.read_text(encoding="utf-8")))
    flow = Yang2020Plan(config, run_index(training_runs(config)))
    assert [(s.experiment, s.variant) for s in flow.aligned] == [("m30k_yang2020_enfr", "standard")]
    assert flow.aer_options("m30k_yang2020_enfr", "en-fr", "standard")[:2] == ["--format", "talp"]
    assert {"table4_simplified", "layer_aer"} <= set(flow.table_entries)
    assert len(flow.probed) == 3  # en-fr standard, en-de standard and simplified
    assert "--max-sentences=2000" in flow.probe_options(flow.probed[0])  # the small preset's caps
    assert flow.speed_sentences(flow.probed[0]) == 500
    # the standard EN->DE run is the baseline every study's Multi30k config trains (same settings)
    spec = config["experiments"]["m30k_yang2020_ende"]
    baseline = {**spec, "study": "baseline", "variants": {"baseline": {}}}
    runs = training_runs({**config, "experiments": {**config["experiments"], "m30k_other": baseline}})
    shared = [run.users for run in runs.values() if ("m30k_other", "en-de", "baseline") in run.users]
    assert shared == [[("m30k_yang2020_ende", "en-de", "standard"), ("m30k_other", "en-de", "baseline")]]
    rules = rules_of(
        plan(
            "results/tables/yang2020/layer_aer.md",
            "--configfile",
            str(MULTI30K_CONFIG),
            "--config",
            "mirror=/nonexistent/mirror",
        )
    )
    assert rules["yang2020_hansards_download"] == 1 and rules["yang2020_gold_chain"] == 2
    # the EN-FR model's three seeds: each is trained and aligned, one table over them
    assert rules["train"] == 3 and rules["yang2020_layer_aer"] == 3 and rules["yang2020_table"] == 1
