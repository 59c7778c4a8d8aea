"""The Libovický et al. (2018) study: its attention-over-sources measure, Tables 1 and 2 on hand-made
score files, and its workflow targets on the real planner (the further sources' shared BPE:
test_shared_bpe.py)."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from manifests import planned_manifest
from model_fixtures import single_thread
from workflow_configs import REPO as ROOT
from workflow_configs import dry_run_jobs, snakemake

from nmtvariants.cli import main
from nmtvariants.data.batching import collate
from nmtvariants.data.dataset import ParallelData
from nmtvariants.errors import ConfigError
from nmtvariants.evaluation.adversarial import summarize_adversarial
from nmtvariants.evaluation.results import write_scores_json
from nmtvariants.models import build_model, capture, model_config
from nmtvariants.reporting.deviations import check_registry
from nmtvariants.reporting.manifest import Entry, write_manifest
from nmtvariants.studies.libovicky2018.plan import TABLES
from nmtvariants.studies.libovicky2018.tables import (
    DEVIATIONS,
    TABLE_KEYS,
    System,
    adversarial_table,
    source_attention,
)

by_key = {deviation.key: deviation for deviation in DEVIATIONS}

# --- attention over sources ----------------------------------------------------------------------

VOCAB = 20
CHANNELS, REGIONS = 6, 3
SMALL = {"d_model": 32, "n_heads": 4, "d_ff": 64, "embedding_dropout": 0.0, "residual_dropout": 0.0}
SMALL |= {"attention_dropout": 0.0, "relu_dropout": 0.0}


def flat_tokens(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    return np.concatenate(rows).astype(np.int32), offsets


def random_data(generator: np.random.Generator, count: int, features: bool) -> ParallelData:
    """Pairs of different lengths (each ending in </s> = 2), a second source and a feature grid."""

    def sentence(low: int, high: int) -> list[int]:
        return [*generator.integers(4, VOCAB, int(generator.integers(low, high))).tolist(), 2]

    data = ParallelData.from_sequences([(sentence(2, 7), sentence(2, 8)) for _ in range(count)])
    data.sources = [flat_tokens([sentence(1, 9) for _ in range(count)])]
    if features:
        data.features = generator.standard_normal((count + 2, REGIONS, CHANNELS)).astype(np.float32)
        data.feature_rows = generator.permutation(count + 2)[:count]
    return data


def naive_shares(model, data: ParallelData, strategy: str) -> np.ndarray:
    """[layers, memories]: sentence by sentence (no padding anywhere), every target position of every
    sentence weighted equally, each memory's share averaged over heads and summed over its own keys
    (flat) or read from the second-level weights (hierarchical)."""
    layers = len(model.decoder_layers)
    total, count = np.zeros((layers, model.n_memories)), 0
    for i in range(len(data)):
        tokens, offsets = data.sources[0]
        one = ParallelData.from_sequences([(data.source(i).tolist(), data.target(i).tolist())])
        one.sources = [flat_tokens([tokens[offsets[i] : offsets[i + 1]].tolist()])]
        if data.feature_rows is not None:
            one.features, one.feature_rows = data.features, data.feature_rows[i : i + 1]
        batch = collate(one, np.array([0]))
        with capture(model, attention=True) as rec:
            memories = model.encode_inputs(batch.inputs)
            model.decode_states(batch.tgt_in, memories)
        sizes = [m.states.size(1) for m in memories]
        steps = len(data.target(i))  # collate pads even one sentence to a multiple of 8: real steps only
        for layer in range(layers):
            for t in range(steps):
                for k in range(len(sizes)):
                    if strategy == "flat":
                        w = rec[f"decoder.layers.{layer}.cross.weights"][0][0]  # [H, T, S]
                        start = sum(sizes[:k])
                        heads = [float(w[h, t, start : start + sizes[k]].sum()) for h in range(w.size(0))]
                    else:
                        w = rec[f"decoder.layers.{layer}.cross.hier.weights"][0]  # [T, H, 1, N]
                        heads = [float(w[t, h, 0, k]) for h in range(w.size(1))]
                    total[layer, k] += sum(heads) / len(heads)
        count += steps
    return total / count


@pytest.mark.parametrize(("strategy", "features"), [("flat", False), ("hierarchical", True), ("flat", True)])
def test_attention_shares_equal_a_per_sentence_loop(strategy, features):
    torch.manual_seed(0)
    multi_source = {"strategy": strategy, "sources": 2}
    if features:
        multi_source["features"] = {"channels": CHANNELS}
    cfg = model_config("tiny", overrides=SMALL, variant={"multi_source": multi_source})
    model = build_model(cfg, VOCAB).eval()
    data = random_data(np.random.default_rng(3), 7, features)
    names = ["en", "fr", "image"][: model.n_memories]
    with single_thread():
        frame = source_attention(model, data, names, batch_size=3)
        expected = naive_shares(model, data, strategy)
    assert list(frame.columns) == ["layer", "memory", "share"]
    assert frame["layer"].tolist() == [1] * len(names) + [2] * len(names)
    assert frame["memory"].tolist() == names * 2
    got = frame["share"].to_numpy().reshape(2, len(names))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-5)


def test_attention_shares_need_a_strategy_with_shares():
    cfg = model_config(
        "tiny", overrides=SMALL, variant={"multi_source": {"strategy": "parallel", "sources": 2}}
    )
    model = build_model(cfg, VOCAB)
    with pytest.raises(ConfigError, match="only flat and hierarchical"):
        source_attention(model, random_data(np.random.default_rng(0), 2, False), ["en", "fr"])


# --- Tables 1 and 2 ------------------------------------------------------------------------------------


def scores(path: Path, bleu: float, meteor: float, ref: Path) -> Path:
    entry = {"bleu": {"score": bleu, "signature": "BLEU|test"}, "meteor": {"score": meteor, "signature": "M"}}
    write_scores_json(path, "system", "test", {"scores": entry, "n_lines": 3}, ref_paths=[ref])
    return path


@pytest.fixture
def score_files(tmp_path: Path) -> dict[str, Path]:
    ref = tmp_path / "test.de"
    ref.write_text("a\nb\nc\n", encoding="utf-8")
    files = {
        "baseline": scores(tmp_path / "baseline.json", 40.0, 60.0, ref),
        "flat": scores(tmp_path / "flat.json", 42.0, 61.5, ref),
    }
    for k, bleu in enumerate((30.0, 32.0, 34.0), start=1):  # the image, deranged 3 times
        files[f"image{k}"] = scores(tmp_path / f"image{k}.json", bleu, 50.0, ref)
    for k, bleu in enumerate((10.0, 14.0), start=1):  # en, deranged twice
        files[f"en{k}"] = scores(tmp_path / f"en{k}.json", bleu, 20.0, ref)
    summary = summarize_adversarial(
        files["flat"], {"image": [files[f"image{k}"] for k in (1, 2, 3)], "en": [files["en1"], files["en2"]]}
    )
    files["summary"] = tmp_path / "summary.json"
    files["summary"].write_text(json.dumps(summary), encoding="utf-8")
    return files


def test_adversarial_table_rows(score_files):
    read = lambda name: json.loads(score_files[name].read_text(encoding="utf-8"))  # noqa: E731
    frame, markdown, seeds = adversarial_table(
        [
            System("en-de", "test", "text-only baseline", read("baseline"), seed=1),
            System("en-de", "test", "flat", read("flat"), read("summary"), seed=1),
        ]
    )
    assert seeds == [1]
    assert list(markdown.columns) == [
        "pair", "test set", "system", "n", "BLEU", "METEOR (NLTK, English resources)",
        "adv. BLEU (image)", "derangement sd (image)", "derangements (image)",
        "adv. BLEU (en)", "derangement sd (en)", "derangements (en)",
    ]  # fmt: skip
    rows = markdown.astype(object).where(markdown.notna(), None).values.tolist()
    assert rows == [
        ["en-de", "test", "text-only baseline", 1, "40.00", "60.00", "", "", None, "", "", None],
        ["en-de", "test", "flat", 1, "42.00", "61.50", "32.00", "2.00", 3, "12.00", "2.83", 2],
    ]
    flat = frame.to_dict("records")[1]
    assert (flat["adv. BLEU (en)"], flat["derangement sd (en)"]) == (12.0, pytest.approx(2 * 2**0.5))
    assert flat["adv. BLEU (image) seed 1"] == 32.0 and flat["derangement sd (image) seed 1"] == 2.0
    assert np.isnan(flat["BLEU sd"])  # one training seed: no spread over seeds


def test_over_three_training_seeds_each_row_is_mean_and_sample_sd(tmp_path):
    """Three recorded training seeds of a baseline and a flat system: BLEU, METEOR and the adversarial
    BLEU (each seed's mean over its own derangements) as statistics.mean/stdev over the training seeds;
    each training seed's adversarial mean and derangement sd stay in the CSV."""
    ref = tmp_path / "test.de"
    ref.write_text("a\nb\nc\n", encoding="utf-8")
    clean = {"baseline": [40.0, 41.0, 39.5], "flat": [42.0, 43.5, 41.0]}
    deranged = {1: [30.0, 32.0], 2: [31.0, 35.0], 3: [29.0, 30.0]}  # per training seed, two derangements
    systems = []
    for row, (label, bleus) in enumerate(clean.items()):
        for seed, bleu in zip((1, 2, 3), bleus, strict=True):
            path = scores(tmp_path / f"{label}{seed}.json", bleu, 60.0 + seed, ref)
            summary = None
            if label == "flat":
                runs = [
                    scores(tmp_path / f"image{seed}_{k}.json", adv, 50.0, ref)
                    for k, adv in enumerate(deranged[seed])
                ]
                summary = summarize_adversarial(path, {"image": runs})
            record = json.loads(path.read_text(encoding="utf-8"))
            systems.append(System("en-de", "test", label, record, summary, seed=seed, row=row))
    frame, markdown, seeds = adversarial_table(systems)
    assert seeds == [1, 2, 3]
    rows = frame.to_dict("records")
    assert [(row["system"], row["n"]) for row in rows] == [("baseline", 3), ("flat", 3)]
    meteor = "METEOR (NLTK, English resources)"
    for row, bleus in zip(rows, clean.values(), strict=True):
        assert row["BLEU"] == pytest.approx(statistics.mean(bleus))
        assert row["BLEU sd"] == pytest.approx(statistics.stdev(bleus))
        assert [row[f"BLEU seed {seed}"] for seed in (1, 2, 3)] == bleus
        assert row[meteor] == pytest.approx(62.0) and row[f"{meteor} sd"] == pytest.approx(1.0)
    adversarial = [statistics.mean(values) for values in deranged.values()]
    spreads = [statistics.stdev(values) for values in deranged.values()]
    flat = rows[1]
    assert flat["adv. BLEU (image)"] == pytest.approx(statistics.mean(adversarial))
    assert flat["adv. BLEU (image) sd"] == pytest.approx(statistics.stdev(adversarial))
    assert [flat[f"adv. BLEU (image) seed {s}"] for s in (1, 2, 3)] == pytest.approx(adversarial)
    assert [flat[f"derangement sd (image) seed {s}"] for s in (1, 2, 3)] == pytest.approx(spreads)
    assert flat["derangement sd (image)"] == pytest.approx(statistics.mean(spreads))
    assert flat["derangements (image)"] == 2 and np.isnan(rows[0]["adv. BLEU (image)"])
    mean, sd = statistics.mean(clean["flat"]), statistics.stdev(clean["flat"])
    assert markdown["BLEU"].tolist()[1] == f"{mean:.2f} ± {sd:.2f}"


def test_table_command_writes_the_table_its_csv_and_provenance(score_files, tmp_path):
    out = tmp_path / "tables" / "table1_mmt.md"
    rows = [  # no training seed recorded: seed '?'
        Entry({"clean": str(score_files["baseline"])}, "e", "en-de", "baseline", testset="test",
              label="text-only baseline"),
        Entry({"clean": str(score_files["flat"]), "adversarial": str(score_files["summary"])}, "e", "en-de",
              "flat", testset="test", label="flat"),
    ]  # fmt: skip
    code = main(
        [
            "libovicky2018-table", "--manifest", str(write_manifest(tmp_path / "m.json", rows)),
            "--table", "table1_mmt", "--condition", "nltk_meteor",
            "--condition", "untrained_image_features", "--condition", "standardised_image_features",
            "--title", "Table 1", "--notes", "toy", "--out", str(out),
        ]
    )  # fmt: skip
    assert code == 0
    csv = pd.read_csv(out.with_suffix(".csv"))
    assert csv["system"].tolist() == ["text-only baseline", "flat"]
    assert csv["adv. BLEU (image)"].tolist()[1] == 32.0 and np.isnan(csv["adv. BLEU (image)"].tolist()[0])
    provenance = json.loads(out.with_suffix(".provenance.json").read_text(encoding="utf-8"))
    assert [source["path"] for source in provenance["sources"]] == [
        str(score_files["baseline"]),
        str(score_files["flat"]),
        str(score_files["summary"]),
    ]
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Table 1\n")
    # the deviations that apply to Table 1 under these conditions, after the notes, and no other
    expected = ["meteor", "bpe", "untrained_image_features", "standardised_image_features"]
    assert provenance["deviations"] == expected
    deviations = text.split("**Deviations from the paper**\n\n", 1)[1]
    assert deviations.splitlines() == [f"- {by_key[key].text}" for key in expected]
    for key in set(by_key) - set(expected):  # Table 2's, and those of conditions not met
        assert by_key[key].text not in text
    assert "Meteor 1.5" in by_key["meteor"].text and "word-piece" in by_key["bpe"].text


def test_table2_carries_the_multisource_deviations_and_not_the_image_ones(score_files, tmp_path):
    out = tmp_path / "table2_multisource.md"
    args = ["libovicky2018-table", "--table", "table2_multisource", "--condition", "nltk_meteor"]
    args += ["--condition", "multi30k_sources"]
    row = Entry(
        {"clean": str(score_files["baseline"])}, "e", "en-cs", "baseline", testset="test",
        label="single-source baseline",
    )  # fmt: skip
    args += ["--manifest", str(write_manifest(tmp_path / "m.json", [row]))]
    assert main([*args, "--title", "Table 2", "--out", str(out)]) == 0
    provenance = json.loads(out.with_suffix(".provenance.json").read_text(encoding="utf-8"))
    assert provenance["deviations"] == ["meteor", "bpe", "baseline_vocabulary", "multi30k_sources"]
    text = out.read_text(encoding="utf-8")
    assert by_key["untrained_image_features"].text not in text
    assert by_key["europarl_intersection"].text not in text
    # a condition no deviation knows is a mistake, not a no-op
    assert main([*args, "--condition", "imagenet", "--title", "T", "--out", str(out)]) == 2


def test_deviation_registry_names_only_the_study_tables():
    check_registry(DEVIATIONS, TABLE_KEYS)
    assert TABLE_KEYS == TABLES  # the plan's tables


# --- the workflow: each target plans only what it needs; the default DAG has them all ----------------

TABLE1 = "results/tables/libovicky2018/table1_mmt.md"
TABLE2 = "results/tables/libovicky2018/table2_multisource.md"
FIGURE = "results/figures/libovicky2018/attention_layers.png"


def plan(*args: str) -> list[dict[str, str]]:
    result = snakemake("-n", "-p", "--forceall", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    return dry_run_jobs(result.stdout)


# The demo trains the paper's own strategies in both tables (serial and parallel are beyond its
# budget, config.yaml).
DEMO_STRATEGIES = ("flat", "hierarchical")


def test_table1_plans_the_image_runs_and_nothing_of_table2():
    """Table 1 (MMT): the shared baseline and the demo's strategies with image features; their
    adversarial decodes (the demo's one derangement seed, image deranged); no further source, no
    attention, no other table."""
    jobs = plan(TABLE1)
    rules = Counter(job["rule"] for job in jobs)
    n = len(DEMO_STRATEGIES)
    assert rules["train"] == 1 + n and rules["libovicky2018_table"] == 1
    assert rules["libovicky2018_image_features"] == 3 and rules["libovicky2018_derange_image"] == 1
    assert rules["libovicky2018_translate"] == n and rules["libovicky2018_adversarial"] == n
    assert rules["libovicky2018_score"] == 1 + n + n  # clean baseline and strategies, adversarial
    for absent in ("libovicky2018_source", "libovicky2018_derange_text", "libovicky2018_attention", "report"):
        assert rules[absent] == 0, absent
    trains = [job for job in jobs if job["rule"] == "train" and "resnet" in job["shell"]]
    assert len(trains) == n
    for train in trains:
        assert "data/toyworld/en-de/inputs/train.resnet.npy" in train["shell"]
        assert "data/toyworld/en-de/clean/train.kept" in train["shell"]  # rows follow the cleaned lines
    decodes = [job for job in jobs if job["rule"] == "libovicky2018_translate"]
    assert all("--feature-index" in job["shell"] and ".image.seed" in job["shell"] for job in decodes)
    assert {job["output"].split("/")[4] for job in decodes} == set(DEMO_STRATEGIES)


def test_table2_plans_the_further_source_and_its_derangements():
    jobs = plan(TABLE2)
    rules = Counter(job["rule"] for job in jobs)
    n = len(DEMO_STRATEGIES)
    assert rules["train"] == 1 + n and rules["libovicky2018_table"] == 1
    assert rules["libovicky2018_source"] == 3
    # the derangements are shared by the strategies; each strategy decodes en and fr deranged (1 seed)
    assert rules["libovicky2018_derange_text"] == 2 and rules["libovicky2018_translate"] == n * 2
    for absent in ("libovicky2018_image_features", "libovicky2018_attention", "report"):
        assert rules[absent] == 0, absent
    made = {job["output"]: job["input"] for job in jobs if job["rule"] == "libovicky2018_source"}
    splits = ("train", "valid", "test")
    # fr is en-de's further language: its inputs are the pair's own BPE'd text under the input name
    assert made == {
        f"data/toyworld/en-de/inputs/{s}.src_fr": f"data/toyworld/en-de/bpe/{s}.fr" for s in splits
    }


def table_replicas(job: dict[str, str]) -> dict[tuple, list[tuple[int, str]]]:
    """Row (system) -> (training seed, result folder) of each clean score file of a planned
    libovicky2018_table job's manifest."""
    replicas: dict[tuple, list[tuple[int, str]]] = {}
    for entry in planned_manifest(job["shell"]):
        row = (entry["experiment"], entry["pair"], entry["variant"], entry["testset"])
        replicas.setdefault(row, []).append((entry["seed"], entry["files"]["clean"].split("/")[4]))
    return replicas


@pytest.mark.parametrize("table", [TABLE1, TABLE2])
def test_with_three_seeds_the_table_reads_three_replicas_per_variant(table):
    """experiments/libovicky2018.yaml trains every system with seeds 1, 2 and 3: the table job reads
    each row's three replicas with their seeds, and every replica of a multi-input system is deranged
    over the derangement seeds on its own."""
    jobs = plan(table, "--configfile", "experiments/libovicky2018.yaml")
    (job,) = [job for job in jobs if job["rule"] == "libovicky2018_table"]
    replicas = table_replicas(job)
    assert replicas
    for row in replicas.values():
        variant = row[0][1]
        assert row == [(1, variant), (2, f"{variant}-seed2"), (3, f"{variant}-seed3")]
    summaries = [job["output"] for job in jobs if job["rule"] == "libovicky2018_adversarial"]
    deranged = {path.split("/")[4] for path in summaries}  # every replica of a multi-input system
    firsts = {name for name in deranged if "-seed" not in name}
    assert firsts and deranged == firsts | {f"{name}-seed{seed}" for name in firsts for seed in (2, 3)}
    decodes = [job["output"] for job in jobs if job["rule"] == "libovicky2018_translate"]
    assert {path.rsplit(".seed", 1)[1].split(".")[0] for path in decodes} == {"1", "2", "3"}


def test_derangement_seeds_come_from_the_study_settings(tmp_path):
    """`studies.libovicky2018.derangement_seeds` sets how many deranged decodes each input gets."""
    settings = tmp_path / "seeds.yaml"
    settings.write_text("studies: {libovicky2018: {derangement_seeds: [7]}}\n", encoding="utf-8")
    jobs = plan(TABLE2, "--configfile", "config.yaml", str(settings))
    decodes = [job["output"] for job in jobs if job["rule"] == "libovicky2018_translate"]
    # en and fr, one seed, for each of the demo's strategies
    assert len(decodes) == len(DEMO_STRATEGIES) * 2 and all(".seed7." in path for path in decodes)


def test_the_figure_plans_attention_of_the_flat_and_hierarchical_runs_only():
    rules = Counter(job["rule"] for job in plan(FIGURE))
    # flat and hierarchical of both tables; serial and parallel have no attention over sources
    assert rules["libovicky2018_attention"] == 4 and rules["figure"] == 1
    assert rules["train"] == 4  # the baselines have no attention over sources: not trained for it
    assert rules["libovicky2018_translate"] == 0 and rules["libovicky2018_table"] == 0


def test_with_three_seeds_the_attention_figure_reads_every_replica():
    """experiments/libovicky2018.yaml's seeds 1-3: one attention job per replica of each flat and
    hierarchical system (each on its own seed's model), every replica in the figure data's manifest
    under its system's one label (the figure's band), and no "seed N only" in the title."""
    jobs = plan(FIGURE, "--configfile", "experiments/libovicky2018.yaml")
    attention = [job for job in jobs if job["rule"] == "libovicky2018_attention"]
    models = {next(p for p in job["input"].split(", ") if p.endswith(".pt")) for job in attention}
    assert attention and len(models) == len(attention)
    (data,) = [job for job in jobs if job["rule"] == "libovicky2018_attention_figure_data"]
    entries = planned_manifest(data["shell"])
    by_label = Counter(entry["label"] for entry in entries)
    assert set(by_label.values()) == {3} and len(entries) == len(attention)
    assert {entry["files"]["attention"] for entry in entries} == {job["output"] for job in attention}
    for label in by_label:
        assert sorted(e["seed"] for e in entries if e["label"] == label) == [1, 2, 3]
    (figure,) = [job for job in jobs if job["rule"] == "figure"]
    assert "only" not in figure["shell"]


def test_the_default_dag_builds_every_registered_table_and_figure():
    everything = {job["rule"]: job for job in plan()}
    wanted = everything["all"]["input"].split(", ")
    for path in (TABLE1, TABLE2, FIGURE, "results/tables/libovicky2018/libovicky2018_mmt.md"):
        assert path in wanted, path
    assert TABLE1 in everything["report"]["input"].split(", ")


def test_missing_user_images_stop_with_where_to_get_them_and_where_to_put_them(tmp_path, capsys):
    images = tmp_path / "multi30k_images"
    images.mkdir()
    (images / "1000092795.jpg").write_bytes(b"")
    split_list = tmp_path / "valid.images"
    split_list.write_text("1000092795.jpg\n1000268201.jpg\n", encoding="utf-8")
    assert main(["libovicky2018-images", "--images", str(images), "--list", str(split_list)]) == 2
    message = capsys.readouterr().err
    assert f"1 of 2 images missing from {images} (first: 1000268201.jpg)" in message
    assert "https://forms.illinois.edu/sec/229675" in message and f"Put the images in {images}" in message


def test_the_full_study_builds_europarl_5_way_by_pivoting_instead_of_downloading_it():
    jobs = plan(TABLE2, "--configfile", "experiments/libovicky2018.yaml")  # --configfile takes 1+ files
    rules = Counter(job["rule"] for job in jobs)
    assert rules["libovicky2018_europarl_europarl5"] == 1 and rules["download_europarl5"] == 0
    assert rules["libovicky2018_europarl_bitext"] == 4  # es, fr, de, cs against English
    (pivot,) = [job for job in jobs if job["rule"] == "libovicky2018_europarl_europarl5"]
    assert "--valid 1000 --test 1000" in pivot["shell"]
    made = {job["output"] for job in jobs if job["rule"] == "libovicky2018_source"}
    assert (
        "data/europarl5/en-cs/inputs/test.src_es" in made
        and "data/multi30k/en-cs/inputs/test_2016_flickr.src_de" in made
    )
    # 4 strategies x 2 corpora, 3 derangement seeds each: Europarl randomises 4 languages, Multi30k 3;
    # and that for each of the 3 training seeds (every replica is deranged on its own)
    assert rules["libovicky2018_translate"] == 3 * (4 * 3 * 4 + 4 * 3 * 3)


def test_join_labels_one_line_per_series_and_memory(tmp_path):
    mmt, multi = tmp_path / "mmt.csv", tmp_path / "multi.csv"
    pd.DataFrame({"layer": [1, 1], "memory": ["en", "image"], "share": [0.25, 0.75]}).to_csv(mmt, index=False)
    pd.DataFrame({"layer": [1, 1], "memory": ["en", "fr"], "share": [0.5, 0.5]}).to_csv(multi, index=False)
    out = tmp_path / "joined.csv"
    series = [Entry({"attention": str(mmt)}, label="MMT"), Entry({"attention": str(multi)}, label="MS")]
    manifest = str(write_manifest(tmp_path / "m.json", series))
    assert main(["libovicky2018-join", "--manifest", manifest, "--out", str(out)]) == 0
    joined = pd.read_csv(out)
    assert joined["label"].tolist() == ["MMT: en", "MMT: image", "MS: en", "MS: fr"]
    assert joined["share"].tolist() == [0.25, 0.75, 0.5, 0.5]


def test_a_systems_replicas_join_under_its_labels_and_the_figure_draws_their_band(tmp_path):
    """Two seeds of one system: the joined CSV holds both seeds' rows under the same labels, and the
    figure's line is their mean with a ± sd band (figures.layer_figure)."""
    from nmtvariants.reporting.figures import layer_figure

    shares = {1: [0.25, 0.75], 2: [0.35, 0.65]}
    series = []
    for seed, (en, image) in shares.items():
        path = tmp_path / f"seed{seed}.csv"
        pd.DataFrame({"layer": [1, 1], "memory": ["en", "image"], "share": [en, image]}).to_csv(
            path, index=False
        )
        series.append(Entry({"attention": str(path)}, seed=seed, label="MMT"))
    out = tmp_path / "joined.csv"
    manifest = str(write_manifest(tmp_path / "m.json", series))
    assert main(["libovicky2018-join", "--manifest", manifest, "--out", str(out)]) == 0
    joined = pd.read_csv(out)
    assert joined[["label", "seed"]].values.tolist() == [
        ["MMT: en", 1],
        ["MMT: image", 1],
        ["MMT: en", 2],
        ["MMT: image", 2],
    ]
    figure = layer_figure(out, y="share", group="label")
    (en_line, _) = figure.axes[0].get_lines()
    assert en_line.get_ydata().tolist() == pytest.approx([statistics.mean([0.25, 0.35])])
    assert "n=2" in en_line.get_label()


# --- the paper's image encoder in the study's configs --------------------------------------------


def feature_models(config_file: str) -> list[tuple[str, object]]:
    """(experiment/variant, model built on the meta device) of every libovicky2018 variant with
    image features in a config file, built as the trainer builds it (run config -> model config)."""
    from nmtvariants.training.train_config import parse_run_config

    config = yaml.safe_load((ROOT / config_file).read_text(encoding="utf-8"))
    built = []
    for name, spec in config["experiments"].items():
        if spec.get("study") != "libovicky2018":
            continue
        for variant_name, variant in spec["variants"].items():
            if "features" not in ((variant or {}).get("multi_source") or {}):
                continue
            raw = {"data": {"train_src": "-", "train_tgt": "-", "vocab": "-"}, "model": spec["model"]}
            run = parse_run_config({**raw, "variant": dict(variant), "train": spec["train"]})
            overrides = {key: value for key, value in run.model.items() if key != "preset"}
            with torch.device("meta"):
                model = build_model(model_config(run.model.get("preset", "base"), overrides, run.variant), 8)
            built.append((f"{name}/{variant_name}", model))
    return built


@pytest.mark.parametrize(
    "config_file", ["experiments/libovicky2018.yaml", "experiments/multi30k_libovicky2018.yaml"]
)
def test_configs_build_the_papers_image_encoder_a_projection_with_no_layer_norm(config_file):
    """§4.1: "a linear projection into 512 dimensions" (Neural Monkey's SpatialFiller): W f + b and
    nothing after it. (experiments/multi30k_libovicky2018.yaml has no images: nothing to build.)"""
    built = feature_models(config_file)
    if config_file != "experiments/multi30k_libovicky2018.yaml":
        assert built, f"{config_file}: no multimodal variant"
    for label, model in built:
        encoder = model.feature_encoder
        assert not any(isinstance(m, torch.nn.LayerNorm) for m in encoder.modules()), label
        channels, d_model = encoder.channels, model.cfg.d_model
        assert sum(p.numel() for p in encoder.parameters()) == channels * d_model + d_model, label
        if config_file == "experiments/libovicky2018.yaml":
            assert (channels, d_model) == (2048, 512), label  # ResNet-50's last block -> 512


def test_the_offline_demo_normalises_its_untrained_features_with_the_labelled_option():
    """The paper's configs feed the ImageNet ResNet's raw features to the paper's projection; the
    demo's untrained ResNet needs the LayerNorm option after it (a deviation its Table 1 lists), and
    nothing standardises features unless asked."""
    from nmtvariants.studies.libovicky2018.plan import IMAGE_DEFAULTS

    demo = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))["image_features"]
    paper = yaml.safe_load((ROOT / "experiments/libovicky2018.yaml").read_text(encoding="utf-8"))
    assert IMAGE_DEFAULTS["standardise"] is False
    assert paper["image_features"].get("standardise", False) is False
    assert demo["weights"] == "random" and not demo.get("standardise", False)
    built = feature_models("config.yaml")
    assert len(built) == len(DEMO_STRATEGIES)
    for label, model in built:
        encoder = model.feature_encoder
        assert any(isinstance(m, torch.nn.LayerNorm) for m in encoder.modules()), label
        channels, d_model = encoder.channels, model.cfg.d_model
        assert sum(p.numel() for p in encoder.parameters()) == channels * d_model + 3 * d_model, label


@pytest.mark.parametrize(
    ("config_file", "table", "conditions"),
    [
        (
            "config.yaml",
            "table1_mmt",
            ["nltk_meteor", "toyworld", "untrained_image_features", "image_layer_norm"],
        ),
        ("config.yaml", "table2_multisource", ["nltk_meteor", "toyworld"]),
        ("experiments/libovicky2018.yaml", "table1_mmt", ["nltk_meteor"]),
        (
            "experiments/libovicky2018.yaml",
            "table2_multisource",
            ["nltk_meteor", "multi30k_sources", "europarl"],
        ),
        (
            "experiments/multi30k_libovicky2018.yaml",
            "table2_multisource",
            ["nltk_meteor", "multi30k_sources"],
        ),
        ("meteor 1.5 + experiments/libovicky2018.yaml", "table1_mmt", []),
    ],
)
def test_plan_reports_the_deviation_conditions_its_config_meets(config_file, table, conditions):
    """The ImageNet configuration of the paper, scored with Meteor 1.5, meets none of Table 1's
    conditional deviations."""
    from types import SimpleNamespace

    from nmtvariants.config import with_defaults
    from nmtvariants.studies.libovicky2018.plan import Libovicky2018Plan

    config = yaml.safe_load((ROOT / config_file.removeprefix("meteor 1.5 + ")).read_text(encoding="utf-8"))
    if config_file.startswith("meteor 1.5 + "):
        config["meteor"] = {"home": "meteor-1.5"}
    plan = Libovicky2018Plan(with_defaults(config, ROOT / "schemas" / "config.schema.yaml"), {})
    args = plan.table_conditions(SimpleNamespace(table=table))
    assert args == [arg for condition in conditions for arg in ("--condition", condition)]
    assert set(conditions) <= {deviation.when for deviation in DEVIATIONS}
