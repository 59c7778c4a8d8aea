"""The lexical-shortcuts study (Emelin et al. 2019): its table builders against hand-made inputs with rows
computed by hand, its commands end to end on small files, and its rules on the real planner
(`snakemake -n`): each table plans only what it needs, and the default DAG holds every table and figure
the study registers."""

from __future__ import annotations

import csv
import json
import re
import shlex
import statistics
from collections import Counter
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sacrebleu
import yaml
from manifests import files_manifest, planned_manifest, score_manifest
from model_fixtures import single_thread
from sacrebleu.significance import PairedTest
from workflow_configs import REPO, dry_run_jobs, snakemake

from nmtvariants.analysis.extract import side_index
from nmtvariants.analysis.states import write_state_file
from nmtvariants.cli import main
from nmtvariants.data.dataset import ParallelData
from nmtvariants.data.vocab import EOS_ID, SPECIALS, Vocabulary
from nmtvariants.errors import InputError
from nmtvariants.fileio import write_lines
from nmtvariants.reporting.manifest import Entry, write_manifest
from nmtvariants.studies.emelin2019 import tables
from nmtvariants.syntax.conllu import make_sentence, write_conllu


def score_record(system: str, testset: str, bleu: float, tok_bleu: float) -> dict:
    return {
        "system": system,
        "testset": testset,
        "scores": {
            "bleu": {"score": bleu, "signature": "nrefs:1|tok:13a"},
            "tok-bleu": {"score": tok_bleu, "signature": "nrefs:1|tok:none"},
        },
    }


RECORDS = [
    score_record("e/en-de/baseline", "nt14", 20.0, 21.0),
    score_record("e/en-de/baseline", "nt15", 30.0, 32.0),
    score_record("e/en-de/lexical", "nt14", 21.0, 22.5),
    score_record("e/en-de/lexical", "nt15", 30.5, 31.5),
    score_record("e/en-ru/baseline", "nt17", 10.0, 11.0),
]


# --- Tables 1, 2 and 4 -------------------------------------------------------------------------------


def test_bleu_table_rows_and_means():
    frame = tables.bleu_table(RECORDS, ["baseline", "lexical"])
    assert list(frame.columns) == ["experiment", "pair", "variant", "testset", "tok. BLEU", "BLEU"]
    assert frame.values.tolist() == [
        ["e", "en-de", "baseline", "nt14", 21.0, 20.0],
        ["e", "en-de", "baseline", "nt15", 32.0, 30.0],
        ["e", "en-de", "baseline", "mean", 26.5, 25.0],  # (21 + 32) / 2, (20 + 30) / 2
        ["e", "en-de", "lexical", "nt14", 22.5, 21.0],
        ["e", "en-de", "lexical", "nt15", 31.5, 30.5],
        ["e", "en-de", "lexical", "mean", 27.0, 25.75],
        ["e", "en-ru", "baseline", "nt17", 11.0, 10.0],
        ["e", "en-ru", "baseline", "mean", 11.0, 10.0],
    ]


def test_bleu_table_needs_tokenised_bleu():
    record = score_record("e/en-de/baseline", "nt14", 20.0, 21.0)
    del record["scores"]["tok-bleu"]
    with pytest.raises(InputError, match="no tok-bleu; evaluate with --metrics bleu,tok-bleu"):
        tables.bleu_table([record])


def test_a_mean_over_given_test_sets_leaves_the_others_out():
    """Table 3's "test mean" is over Table 1's test sets: a test set outside them keeps its row but not
    its share of the mean, and a system without one of them cannot have that mean."""
    records = [*RECORDS[:2], score_record("e/en-de/baseline", "nt17", 40.0, 44.0)]
    frame = tables.bleu_table(records, mean_testsets=["nt14", "nt15"])
    assert frame.values.tolist() == [
        ["e", "en-de", "baseline", "nt14", 21.0, 20.0],
        ["e", "en-de", "baseline", "nt15", 32.0, 30.0],
        ["e", "en-de", "baseline", "nt17", 44.0, 40.0],
        ["e", "en-de", "baseline", "mean", 26.5, 25.0],  # (21 + 32) / 2, (20 + 30) / 2: nt17 left out
    ]
    assert tables.bleu_table(records).values.tolist()[-1][-2:] == [(21 + 32 + 44) / 3, 30.0]
    with pytest.raises(InputError, match="e/en-de/baseline has no scores on nt16; the mean is over"):
        tables.bleu_table(records, mean_testsets=["nt14", "nt15", "nt16"])


def test_variants_table_differences_to_the_baseline():
    switches = {"baseline": {}, "lexical": {"shortcuts": {"kind": "lexical"}, "warmup": 300}}
    frame, markdown = tables.variants_table(tables.bleu_replicas(RECORDS[:4]), switches)
    columns = ["experiment", "pair", "variant", "shortcuts", "n", "tok. BLEU", "BLEU", "Δ BLEU"]
    assert frame[columns].to_dict("records") == [
        {
            "experiment": "e",
            "pair": "en-de",
            "variant": "baseline",
            "shortcuts": "baseline",
            "n": 1,
            "tok. BLEU": 26.5,
            "BLEU": 25.0,
            "Δ BLEU": 0.0,
        },
        {
            "experiment": "e",
            "pair": "en-de",
            "variant": "lexical",
            "shortcuts": "kind=lexical",
            "n": 1,
            "tok. BLEU": 27.0,
            "BLEU": 25.75,
            "Δ BLEU": 0.75,
        },
    ]
    assert list(markdown.columns) == columns
    assert markdown["BLEU"].tolist() == ["25.00", "25.75"]  # one seed: no ± sd
    assert (
        tables.describe_variant({"shortcuts": {"cross_attention": True, "self_attention": "none"}})
        == "kind=lexical, self_attention=none, cross_attention=True"
    )
    with pytest.raises(InputError, match="no 'baseline' variant"):
        tables.variants_table(tables.bleu_replicas(RECORDS[2:4]), switches)


# --- Table 5 -------------------------------------------------------------------------------------------


def write_train_log(path: Path, windows: list[tuple[int, float]]) -> Path:
    """A train_log.csv with training windows (tokens, seconds) and a validation row between them."""
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(
            ["update", "epoch", "split", "loss", "nll", "ppl", "lr", "tokens", "tok_per_s", "elapsed_s"]
        )
        for update, (tokens, seconds) in enumerate(windows, start=1):
            writer.writerow([update * 10, 1, "train", 5, 5, 148, 1e-3, tokens, tokens / seconds])
            writer.writerow([update * 10, 1, "valid", 5, 5, 148, "", "", ""])
    return path


def test_training_speed_weighs_windows_by_their_time(tmp_path):
    log = write_train_log(tmp_path / "train_log.csv", [(1000, 1.0), (3000, 4.0), (500, 0.5)])
    # by hand: 4500 tokens in 5.5 seconds (the unweighted mean of the window speeds would be 916.7)
    assert tables.training_speed(log) == pytest.approx(4500 / 5.5)


def test_training_speed_of_a_log_without_training_rows(tmp_path):
    log = tmp_path / "train_log.csv"
    log.write_text("update,epoch,split,loss,nll,ppl,lr,tokens,tok_per_s,elapsed_s\n", encoding="utf-8")
    with pytest.raises(InputError, match="no training rows"):
        tables.training_speed(log)


def test_params_speed_table_relative_to_each_experiments_baseline():
    params = {
        "e/baseline": 65_166_000,
        "e/lexical": 71_470_499,
        "big/baseline": 218_413_000,
        "big/ff": 293_935_100,
    }
    speeds = {"e/baseline": 2000.0, "e/lexical": 1500.0, "big/baseline": 800.0, "big/ff": 600.0}
    frame = tables.params_speed_table(params, speeds)
    assert frame.to_dict("records") == [
        {"experiment": "e", "variant": "baseline", "parameters": 65_166_000, "parameters (K)": 65_166,
         "tokens/s": 2000.0, "relative speed": 1.0},
        {"experiment": "e", "variant": "lexical", "parameters": 71_470_499, "parameters (K)": 71_470,
         "tokens/s": 1500.0, "relative speed": 0.75},
        {"experiment": "big", "variant": "baseline", "parameters": 218_413_000, "parameters (K)": 218_413,
         "tokens/s": 800.0, "relative speed": 1.0},
        {"experiment": "big", "variant": "ff", "parameters": 293_935_100, "parameters (K)": 293_935,
         "tokens/s": 600.0, "relative speed": 0.75},
    ]  # fmt: skip
    with pytest.raises(InputError, match="no 'x/baseline' run"):
        tables.params_speed_table({"x/lexical": 1}, {"x/lexical": 1.0})


def test_the_params_command_reads_count_params_and_train_logs(tmp_path):
    """emelin2019-params on the output of the real `count-params` and two hand-made train logs."""
    counts = {}
    for variant, switches in (("baseline", {}), ("lexical", {"shortcuts": {"kind": "lexical"}})):
        config = tmp_path / f"{variant}.yaml"
        config.write_text(json.dumps({"preset": "tiny", "variant": switches}), encoding="utf-8")
        counts[variant] = tmp_path / f"{variant}.txt"
        with open(counts[variant], "w", encoding="utf-8") as out, redirect_stdout(out):
            assert main(["count-params", "--config", str(config), "--vocab-size", "100"]) == 0
    logs = {
        "baseline": write_train_log(tmp_path / "b.csv", [(1000, 1.0)]),
        "lexical": write_train_log(tmp_path / "l.csv", [(900, 1.0), (900, 2.0)]),
    }
    out = tmp_path / "table5.md"
    runs = [Entry({"count": str(counts[v]), "train_log": str(logs[v])}, "e", "en-de", v) for v in counts]
    manifest = write_manifest(tmp_path / "manifest.json", runs)
    assert main(["emelin2019-params", "--title", "T5", "--out", str(out), "--manifest", str(manifest)]) == 0
    rows = pd.read_csv(out.with_suffix(".csv")).to_dict("records")
    d, layers = 64, 4  # tiny: d 64, 2 + 2 self-attention sub-layers, each gated with 2d^2 + 2d (eqs 5-10)
    baseline = int(counts["baseline"].read_text().split()[0])
    assert [row["parameters"] for row in rows] == [baseline, baseline + layers * (2 * d * d + 2 * d)]
    assert [row["relative speed"] for row in rows] == [1.0, pytest.approx(1800 / 3 / 1000)]
    assert json.loads(out.with_suffix(".provenance.json").read_text())["title"] == "T5"


# --- probes, gates, figures ------------------------------------------------------------------------------


def probe_rows() -> pd.DataFrame:
    rows = []
    for variant, shift in (("baseline", 0.0), ("lexical", 0.1)):
        for layer in (0, 1):
            base = {"variant": variant, "side": "encoder", "layer": layer, "name": f"encoder.l{layer}"}
            rows.append({**base, "group_kind": "all", "group": "all", "accuracy": 0.5 + shift})
            for label, accuracy in (("10", 0.9), ("2", 0.2), ("1", 0.1)):
                accuracy -= layer / 10
                rows.append({**base, "group_kind": "frequency_bin", "group": label, "accuracy": accuracy})
            for label, accuracy in (("NOUN", 0.4), ("DET", 0.8)):
                rows.append({**base, "group_kind": "pos", "group": label, "accuracy": accuracy})
    return pd.DataFrame(rows)


def test_probe_breakdown_by_frequency_bin_in_numeric_order():
    frame = tables.probe_breakdown(probe_rows(), "frequency_bin")
    assert list(frame.columns) == ["variant", "side", "layer", "1", "2", "10", "all"]
    assert frame.round(6).values.tolist() == [
        ["baseline", "encoder", 0, 0.1, 0.2, 0.9, 0.5],
        ["baseline", "encoder", 1, 0.0, 0.1, 0.8, 0.5],
        ["lexical", "encoder", 0, 0.1, 0.2, 0.9, 0.6],
        ["lexical", "encoder", 1, 0.0, 0.1, 0.8, 0.6],
    ]
    pos = tables.probe_breakdown(probe_rows(), "pos")
    assert list(pos.columns) == ["variant", "side", "layer", "DET", "NOUN", "all"]
    with pytest.raises(InputError, match="no 'dep' groups"):
        tables.probe_breakdown(probe_rows(), "dep")


def test_the_probe_tables_give_each_group_the_mean_and_sd_over_the_seeds(tmp_path):
    """Three seeds' layer-probes CSVs: each (variant, side, layer) row holds every group's mean
    accuracy and sample sd over the seeds (checked against ``statistics``), n = 3 and each seed's
    value; the markdown shows ``mean ± sd`` and says how many seeds."""
    shifts = {1: 0.0, 2: 0.05, 3: -0.02}
    paths = []
    for seed, shift in shifts.items():
        rows = probe_rows()
        rows["accuracy"] += shift
        rows.to_csv(path := tmp_path / f"probes{seed}.csv", index=False)
        paths.append(path)
    entries = [
        Entry({"probes": str(path)}, "e", "en-de", "v", seed)
        for seed, path in zip(shifts, paths, strict=True)
    ]
    out = tmp_path / "probes_frequency.md"
    args = ["emelin2019-probes", "--manifest", str(write_manifest(tmp_path / "m.json", entries))]
    assert main([*args, "--group-kind", "frequency_bin", "--title", "P", "--out", str(out)]) == 0
    table = pd.read_csv(out.with_suffix(".csv"))
    assert table["n"].tolist() == [3] * 4
    first = table.iloc[0]  # baseline, encoder, layer 0: bin 10 at 0.9 + each seed's shift
    values = [0.9 + shift for shift in shifts.values()]
    assert first["10"] == pytest.approx(statistics.mean(values))
    assert first["10 sd"] == pytest.approx(statistics.stdev(values))
    assert [first[f"10 seed {seed}"] for seed in shifts] == pytest.approx(values)
    text = out.read_text(encoding="utf-8")
    assert f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}" in text
    assert "over 3 seeds (1, 2, 3)" in text


def test_layer_curves_keep_the_overall_rows_of_one_side():
    frames = probe_rows()
    curves = tables.layer_curves(frames, "accuracy", "encoder")
    assert curves.values.tolist() == [
        ["baseline", 0, 0.5],
        ["baseline", 1, 0.5],
        ["lexical", 0, 0.6],
        ["lexical", 1, 0.6],
    ]
    with pytest.raises(InputError, match="no decoder rows"):
        tables.layer_curves(frames, "accuracy", "decoder")


# --- ContraWSD --------------------------------------------------------------------------------------------


def contrawsd_item(word: str, sense: str, frequency: str, contrastives: int) -> dict:
    return {
        "source": f"the {word} .",
        "reference": f"der {sense} .",
        "errors": [{"contrastive": f"der x{i} ."} for i in range(contrastives)],
        "ambig word": word,
        "sense": sense,
        "frequency of sense/ambig word in wmt16": frequency,
    }


def test_contrawsd_and_gates_give_the_mean_and_sd_over_the_seeds(tmp_path):
    """Three replicas of one variant: the ContraWSD accuracy and the gates' mean activation are the
    means over the seeds with their sample sd (``statistics``), n = 3, one row per variant."""
    accuracies, activations = {1: 0.5, 2: 0.7, 3: 0.65}, {1: 0.2, 2: 0.3, 3: 0.25}
    reports, gates = [], []
    for seed, accuracy in accuracies.items():
        report = {"correct": round(accuracy * 20), "n_elements": 20, "accuracy": accuracy}
        (path := tmp_path / f"wsd{seed}.json").write_text(
            json.dumps({**report, "by_category": [], "by_frequency": []}), encoding="utf-8"
        )
        reports.append(Entry({"contrawsd": str(path)}, "e", "en-de", "lexical", seed, label="lexical"))
        row = {"variant": "lexical", "side": "encoder", "layer": 1, "attention": "self", "gate": "key",
               "mean": activations[seed], "std": 0.1, "above_half": 0.0, "positions": 50}  # fmt: skip
        pd.DataFrame([row]).to_csv(path := tmp_path / f"gates{seed}.csv", index=False)
        gates.append(Entry({"gates": str(path)}, "e", "en-de", "lexical", seed))
    for command, entries, column, values in (
        ("emelin2019-contrawsd", reports, "accuracy", accuracies),
        ("emelin2019-gates", gates, "mean", activations),
    ):
        out = tmp_path / f"{command}.md"
        manifest = str(write_manifest(tmp_path / f"{command}.json", entries))
        assert main([command, "--manifest", manifest, "--title", "T", "--out", str(out)]) == 0
        (row,) = pd.read_csv(out.with_suffix(".csv")).to_dict("records")
        assert row["n"] == 3 and row[column] == pytest.approx(statistics.mean(values.values()))
        assert row[f"{column} sd"] == pytest.approx(statistics.stdev(values.values()))
        assert "over 3 seeds (1, 2, 3)" in out.read_text(encoding="utf-8")


def test_contrawsd_table_from_the_contrawsd_command(tmp_path):
    """Three items scored by hand (mean NLL, lower is better): the first is right, the second loses to
    one of its two contrastives, the third ties (a tie is an error)."""
    testset = tmp_path / "set.json"
    items = [
        contrawsd_item("bank", "Ufer", "10/40", 1),
        contrawsd_item("bank", "Bank", "30/40", 2),
        contrawsd_item("seal", "Robbe", "60/60", 1),
    ]
    testset.write_text(json.dumps(items), encoding="utf-8")
    scores = tmp_path / "scores.txt"
    scores.write_text("1.0\n2.0\n1.5\n1.4\n3.0\n2.0\n2.0\n", encoding="utf-8")
    result = tmp_path / "result.json"
    assert main(["contrawsd", "--json", str(testset), "--scores", str(scores), "--out-json", str(result),
                 "--out-csv", str(tmp_path / "r.csv")]) == 0  # fmt: skip
    out = tmp_path / "contrawsd.md"
    manifest = files_manifest(tmp_path / "m.json", "contrawsd", [result], variant="lexical")
    assert main(["emelin2019-contrawsd", "--manifest", manifest, "--title", "W", "--out", str(out)]) == 0
    rows = pd.read_csv(out.with_suffix(".csv")).to_dict("records")
    assert [(r["breakdown"], r["group"], r["correct"], r["total"]) for r in rows] == [
        ("overall", "all", 1, 3),
        ("sense", "bank:Bank", 0, 1),
        ("sense", "bank:Ufer", 1, 1),
        ("sense", "seal:Robbe", 0, 1),
        ("frequency", "0-20", 1, 1),
        ("frequency", ">20", 0, 1),
        ("frequency", ">50", 0, 1),
    ]
    assert rows[0]["accuracy"] == pytest.approx(1 / 3) and {r["variant"] for r in rows} == {"lexical"}


# --- POS per BPE token ---------------------------------------------------------------------------------


def test_pos_labels_follow_words_through_truecasing_bpe_and_hyphen_splitting():
    sentence = make_sentence(
        ["The", "dark-blue", "plate", "falls", "."],
        [3, 3, 4, 0, 4],
        ["det", "amod", "nsubj", "root", "punct"],
        upos=["DET", "ADJ", "NOUN", "VERB", "PUNCT"],
    )
    # truecased, Moses -a splits the hyphen as @-@, and BPE splits that token too
    line = "the d@@ ar@@ k @@@ -@@ @ blue pl@@ ate fal@@ ls ."
    assert tables.pos_labels(sentence, line, "x") == [
        "DET", "ADJ", "ADJ", "ADJ", "ADJ", "ADJ", "ADJ", "ADJ", "NOUN", "NOUN", "VERB", "VERB", "PUNCT",
    ]  # fmt: skip
    with pytest.raises(InputError, match="x: BPE word 'plates' at character 13 but 'platef' in the parse"):
        tables.pos_labels(sentence, "the dark @-@ blue plates falls .", "x")
    with pytest.raises(InputError, match="x: the BPE line ends before the parse does"):
        tables.pos_labels(sentence, "the dark @-@ blue plate", "x")


def test_the_pos_command_writes_one_label_per_bpe_token(tmp_path):
    sentences = [
        make_sentence(
            ["A", "cat", "sleeps"], [2, 3, 0], ["det", "nsubj", "root"], upos=["DET", "NOUN", "VERB"]
        ),
        make_sentence(["Dogs", "run"], [2, 0], ["nsubj", "root"], upos=["NOUN", "VERB"]),
    ]
    conllu = tmp_path / "test.en.conllu"
    write_conllu(conllu, sentences)
    bpe = tmp_path / "test.en"
    bpe.write_text("a c@@ at sle@@ ep@@ s\ndogs run\n", encoding="utf-8")
    out = tmp_path / "pos.en"
    assert main(["emelin2019-pos", "--conllu", str(conllu), "--bpe", str(bpe), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8").splitlines() == ["DET NOUN NOUN VERB VERB VERB", "NOUN VERB"]
    bpe.write_text("a c@@ at sle@@ ep@@ s\n", encoding="utf-8")
    assert main(["emelin2019-pos", "--conllu", str(conllu), "--bpe", str(bpe), "-o", str(out)]) == 2


def test_target_pos_labels_follow_words_through_bpe_and_hyphen_splitting():
    # toyworld's target tags index Moses tokens before hyphen splitting ("Stein-Ei" is one NOUN)
    tags = ["ADV", "VERB", "DET", "ADJ", "NOUN", "PUNCT"]
    line = "plötzlich rut@@ scht das gel@@ be St@@ ein @-@ E@@ i ."
    assert tables.target_pos_labels(tags, line, "x") == [
        "ADV", "VERB", "VERB", "DET", "ADJ", "ADJ", "NOUN", "NOUN", "NOUN", "NOUN", "NOUN", "PUNCT",
    ]  # fmt: skip
    with pytest.raises(InputError, match="x: 6 tags but the BPE line has 8 words"):
        tables.target_pos_labels(tags, "plötzlich rutscht das gelbe Stein - Ei .", "x")


def test_the_pos_command_projects_target_tags(tmp_path):
    tags, bpe, out = tmp_path / "test.de.pos", tmp_path / "test.de", tmp_path / "pos.de"
    tags.write_text("DET NOUN VERB\nNOUN VERB\n", encoding="utf-8")
    bpe.write_text("die kat@@ ze schl@@ äft\nhunde laufen\n", encoding="utf-8")
    assert main(["emelin2019-pos", "--tags", str(tags), "--bpe", str(bpe), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8").splitlines() == ["DET NOUN NOUN VERB VERB", "NOUN VERB"]
    bpe.write_text("die katze schläft\n", encoding="utf-8")
    assert main(["emelin2019-pos", "--tags", str(tags), "--bpe", str(bpe), "-o", str(out)]) == 2


# --- the decoder's probes by target POS, end to end on hand-made states -----------------------------------

TARGET_WORDS = ["der", "die", "hu@@", "nd", "katze", "läuft", "schläft"]


def hand_made_states(path: Path, vocab: Vocabulary, targets: list[str]) -> None:
    """Decoder states that name their input token, except that "der" and "die" share one state: a
    probe can tell every token apart but those two, and says the more frequent one for both."""
    data = ParallelData.from_sequences([([4, EOS_ID], vocab.encode(line)) for line in targets])
    index = side_index(data, "decoder")
    kind = {vocab.stoi["die"]: vocab.stoi["der"]}
    rows = np.array([kind.get(int(token), int(token)) for token in index.tokens])
    states = 3.0 * np.eye(len(vocab), dtype=np.float32)[rows]
    names = {"decoder.embeddings": states, "decoder.layers.0": states[:, ::-1].copy()}
    write_state_file(path, data, {"decoder": index}, names, {"vocab_size": len(vocab)})


def test_the_decoder_probes_break_down_by_target_pos(tmp_path):
    """Training (and dev) sentences hold "der" twice and "die" once: the probe tells every token apart
    but says "der" for "die". The held-out
    target, tagged per word as toyworld tags its targets: DET die (wrong), der (right), die (wrong):
    1/3; NOUN katze, hu@@ nd, hu@@ nd: 5/5; VERB 3/3; all 9/11, on every layer."""
    vocab = Vocabulary([*SPECIALS, *TARGET_WORDS])
    vocab.save(tmp_path / "vocab.txt")
    training = "der hu@@ nd der katze die hu@@ nd läuft schläft"
    hand_made_states(tmp_path / "train.npz", vocab, [training] * 36)
    hand_made_states(tmp_path / "valid.npz", vocab, [training] * 4)
    test = ["die katze läuft", "der hu@@ nd schläft", "die hu@@ nd läuft"]
    hand_made_states(tmp_path / "test.npz", vocab, test)
    write_lines(tmp_path / "test.de", test)
    write_lines(tmp_path / "test.de.pos", ["DET NOUN VERB", "DET NOUN VERB", "DET NOUN VERB"])
    pos = tmp_path / "pos.de"
    bpe = str(tmp_path / "test.de")
    assert (
        main(["emelin2019-pos", "--tags", str(tmp_path / "test.de.pos"), "--bpe", bpe, "-o", str(pos)]) == 0
    )
    probes = tmp_path / "probes.csv"
    args = [
        "layer-probes",
        *(f"--{part}-states={tmp_path / part}.npz" for part in ("train", "valid", "test")),
    ]
    args += ["--output", str(probes), "--label", "lexical", "--target-group", f"pos={pos}"]
    args += ["--hidden", "32", "--lr", "1e-2", "--batch-size", "32", "--max-epochs", "40", "--patience", "40"]
    with single_thread():
        assert main(args) == 0
    out = tmp_path / "probes_pos.md"
    manifest = files_manifest(tmp_path / "m.json", "probes", [probes])
    assert main(["emelin2019-probes", "--manifest", manifest, "--group-kind", "pos", "--title", "P",
                 "--out", str(out)]) == 0  # fmt: skip
    table = pd.read_csv(out.with_suffix(".csv"))
    means = [column for column in table.columns if " " not in column]  # not "<group> sd"/"seed <s>"
    assert means == ["variant", "side", "layer", "n", "DET", "NOUN", "VERB", "all"]
    assert table[["variant", "side", "layer"]].values.tolist() == [
        ["lexical", "decoder", 0],
        ["lexical", "decoder", 1],
    ]
    for _, row in table.iterrows():
        assert row[["DET", "NOUN", "VERB", "all"]].tolist() == pytest.approx([1 / 3, 1.0, 1.0, 9 / 11])
    counts = pd.read_csv(probes).query("group_kind == 'pos'").groupby("group")["count"].first().to_dict()
    assert counts == {"DET": 3, "NOUN": 5, "VERB": 3}


def test_the_pos_table_leaves_a_label_of_one_side_empty_on_the_other(tmp_path):
    rows = probe_rows()
    decoder = rows[rows["layer"] == 0].assign(side="decoder", name="decoder.l0")
    decoder.loc[decoder["group"] == "DET", "group"] = "PRON"  # a target tag the source lacks
    csv_path = tmp_path / "probes.csv"
    pd.concat([rows, decoder]).to_csv(csv_path, index=False)
    out = tmp_path / "pos.md"
    manifest = files_manifest(tmp_path / "m.json", "probes", [csv_path])
    assert main(["emelin2019-probes", "--manifest", manifest, "--group-kind", "pos", "--title", "P",
                 "--out", str(out)]) == 0  # fmt: skip
    table = pd.read_csv(out.with_suffix(".csv"))
    means = [column for column in table.columns if " " not in column]  # not "<group> sd"/"seed <s>"
    assert means == ["variant", "side", "layer", "n", "DET", "NOUN", "PRON", "all"]
    decoder_rows = table[table["side"] == "decoder"]
    assert decoder_rows["DET"].isna().all() and decoder_rows["PRON"].tolist() == [0.8, 0.8]
    assert table[table["side"] == "encoder"]["PRON"].isna().all()
    assert "nan" not in out.read_text(encoding="utf-8")


# --- the real-data comparison: paired bootstrap against the baseline ---------------------------------------

REFS = [
    "Ein Mann fährt Fahrrad auf der Straße .",
    "Zwei Hunde spielen im Schnee .",
    "Eine Frau liest ein Buch im Park .",
    "Kinder spielen Fußball auf einer Wiese .",
    "Ein Mädchen isst ein Eis .",
    "Der alte Mann sitzt auf einer Bank .",
]
SYSTEMS = {
    "baseline": [
        "Ein Mann fährt Rad auf der Straße .",
        "Zwei Hunde spielen in Schnee .",
        "Eine Frau liest Buch im Park .",
        "Kinder spielen Fußball auf Wiese .",
        "Ein Mädchen isst Eis .",
        "Der Mann sitzt auf der Bank .",
    ],
    "lexical": [
        "Ein Mann fährt Fahrrad auf der Straße .",
        "Zwei Hunde spielen im Schnee .",
        "Eine Frau liest Buch im Park .",
        "Kinder spielen Ball auf Wiese .",
        "Ein Mädchen isst Eis .",
        "Der Mann sitzt .",
    ],
}


def test_the_bootstrap_table_equals_sacrebleus_own_paired_test(tmp_path, monkeypatch):
    """`significance` per variant and test set, then the table; against sacreBLEU's corpus scores and its
    own PairedTest run here with the same seed (the second test set: the first three lines)."""
    entries = []
    for testset, lines in (("t16", slice(None)), ("t18", slice(0, 3))):
        for name, hyps in SYSTEMS.items():
            write_lines(tmp_path / f"{name}.{testset}.hyp", hyps[lines])
        write_lines(tmp_path / f"ref.{testset}", REFS[lines])
        result = tmp_path / f"lexical.{testset}.json"
        # one output each: the replica test is sacreBLEU's paired bootstrap, sample for sample
        args = ["significance", "--baseline", str(tmp_path / f"baseline.{testset}.hyp")]
        args += [
            "--system",
            str(tmp_path / f"lexical.{testset}.hyp"),
            "--ref",
            str(tmp_path / f"ref.{testset}"),
        ]
        args += [
            "-l",
            "de",
            "--metrics",
            "bleu,chrf",
            "--samples",
            "200",
            "--seed",
            "7",
            "--json",
            str(result),
        ]
        assert main(args) in (0, None)
        entries.append(Entry({"significance": str(result)}, "e", "en-de", "lexical", testset=testset))
    out = tmp_path / "bootstrap.md"
    manifest = str(write_manifest(tmp_path / "manifest.json", entries))
    assert main(["emelin2019-bootstrap", "--manifest", manifest, "--title", "B", "--out", str(out)]) == 0
    table = pd.read_csv(out.with_suffix(".csv"))
    assert list(table.columns) == [
        "variant", "testset", "n", "BLEU", "BLEU sd", "Δ BLEU", "p (BLEU)", "chrF", "chrF sd", "Δ chrF",
        "p (chrF)",
    ]  # fmt: skip
    assert table["n"].tolist() == [1, 1, 1, 1] and table["BLEU sd"].isna().all()
    assert table[["variant", "testset"]].values.tolist() == [
        ["baseline", "t16"], ["baseline", "t18"], ["lexical", "t16"], ["lexical", "t18"],
    ]  # fmt: skip
    assert (
        table.loc[table["variant"] == "baseline", ["Δ BLEU", "p (BLEU)", "Δ chrF", "p (chrF)"]]
        .isna()
        .all()
        .all()
    )
    monkeypatch.setenv("SACREBLEU_SEED", "7")
    for testset, lines in (("t16", slice(None)), ("t18", slice(0, 3))):
        base, system, refs = SYSTEMS["baseline"][lines], SYSTEMS["lexical"][lines], [REFS[lines]]
        _, scores = PairedTest(
            [("baseline", base), ("lexical", system)],
            {"BLEU": sacrebleu.BLEU(), "chrF": sacrebleu.CHRF()},
            refs,
            test_type="bs",
            n_samples=200,
        )()
        keys = [key for key in scores if key != "System"]  # sacreBLEU's own names, in the order given
        for key, metric, corpus in zip(
            keys, ("BLEU", "chrF"), (sacrebleu.corpus_bleu, sacrebleu.corpus_chrf), strict=True
        ):
            base_row = table[(table["variant"] == "baseline") & (table["testset"] == testset)].iloc[0]
            row = table[(table["variant"] == "lexical") & (table["testset"] == testset)].iloc[0]
            assert base_row[metric] == pytest.approx(corpus(base, refs).score)
            assert row[metric] == pytest.approx(corpus(system, refs).score)
            assert row[f"Δ {metric}"] == pytest.approx(corpus(system, refs).score - corpus(base, refs).score)
            assert row[f"p ({metric})"] == pytest.approx(scores[key][1].p_value)
    assert "One training seed per variant" in out.read_text(encoding="utf-8")


def test_the_bootstrap_table_needs_one_baseline_output_per_test_set():
    def result(base: float) -> dict:
        block = {"baseline": {"score": base}, "system": {"score": 30.0}, "delta": 30.0 - base, "p_value": 0.1}
        return {"metrics": {"bleu": block}}

    with pytest.raises(InputError, match="t: the bleu of 'baseline' differs"):
        tables.bootstrap_table({("lexical", "t"): result(20.0), ("ff", "t"): result(21.0)})
    with pytest.raises(InputError, match="no significance result of 'ff' on u"):
        tables.bootstrap_table(
            {("lexical", "t"): result(20.0), ("ff", "t"): result(20.0), ("lexical", "u"): result(20.0)}
        )


def test_the_bleu_command_writes_the_table_csv_and_provenance(tmp_path):
    paths = []
    for index, record in enumerate(RECORDS):
        paths.append(tmp_path / f"{index}.scores.json")
        paths[-1].write_text(json.dumps(record), encoding="utf-8")
    out = tmp_path / "table2.md"
    table2 = [path for path, record in zip(paths, RECORDS, strict=True) if "/en-de/" not in record["system"]]
    args = ["emelin2019-bleu", "--manifest", score_manifest(tmp_path / "m.json", table2), "--title", "T2"]
    assert main([*args, "--out", str(out)]) == 0
    written = pd.read_csv(out.with_suffix(".csv"))
    shown = ["experiment", "pair", "variant", "testset", "n", "tok. BLEU", "BLEU"]
    assert written[shown].values.tolist() == [
        ["e", "en-ru", "baseline", "nt17", 1, 11.0, 10.0],
        ["e", "en-ru", "baseline", "mean", 1, 11.0, 10.0],
    ]
    assert written[["tok. BLEU sd", "BLEU sd"]].isna().all().all()  # one seed: no sd
    assert written["BLEU seed ?"].tolist() == [10.0, 10.0]  # a plain folder without --seeds
    assert "1 seed (?)" in out.read_text(encoding="utf-8")
    provenance = json.loads(out.with_suffix(".provenance.json").read_text(encoding="utf-8"))
    assert [source["path"] for source in provenance["sources"]] == [path.as_posix() for path in table2]
    assert out.read_text(encoding="utf-8").startswith("# T2\n")


def test_tables_carry_the_deviations_that_apply_to_them_and_no_others(tmp_path):
    """Table 4 names the non-lexical module only when it has such a variant; Tables 1-4 name the shared
    warm-up only when no shortcut variant has its own; the POS breakdown names its taggers, the
    frequency breakdown does not."""
    from nmtvariants.reporting.deviations import check_registry

    check_registry(tables.DEVIATIONS, tables.TABLE_KEYS)
    by_key = {deviation.key: deviation for deviation in tables.DEVIATIONS}
    paths = []
    for index, record in enumerate(RECORDS[:4]):
        paths.append(str(tmp_path / f"{index}.scores.json"))
        Path(paths[-1]).write_text(json.dumps(record), encoding="utf-8")

    def written(*args: str) -> tuple[list[str], str]:
        out = tmp_path / "table.md"
        assert main([*args, "--title", "T", "--out", str(out)]) == 0
        keys = json.loads(out.with_suffix(".provenance.json").read_text(encoding="utf-8"))["deviations"]
        return keys, out.read_text(encoding="utf-8")

    lexical = {"baseline": {}, "lexical": {"shortcuts": {"kind": "lexical"}, "warmup": 6000}}
    manifest = score_manifest(tmp_path / "m.json", paths, None, lexical)
    keys, text = written("emelin2019-variants", "--manifest", manifest)
    assert keys == [] and "Deviations from the paper" not in text
    assert written("emelin2019-bleu", "--manifest", manifest)[0] == []
    non_lexical = {
        "baseline": {},
        "lexical": {"shortcuts": {"kind": "feature_fusion", "source": "n_minus_2"}},
    }
    manifest = score_manifest(tmp_path / "m.json", paths, None, non_lexical)
    keys, text = written("emelin2019-variants", "--manifest", manifest)
    assert keys == ["non_lexical_shortcuts", "shared_warmup"]
    assert f"- {by_key['non_lexical_shortcuts'].text}\n" in text
    assert text.endswith(f"- {by_key['shared_warmup'].text}\n")
    assert written("emelin2019-bleu", "--manifest", manifest)[0] == ["shared_warmup"]
    probes = tmp_path / "probes.csv"
    probe_rows().to_csv(probes, index=False)
    manifest = files_manifest(tmp_path / "probes.json", "probes", [probes])
    keys, text = written("emelin2019-probes", "--manifest", manifest, "--group-kind", "pos")
    assert keys == ["pos_tags"] and "TreeTagger" in text
    keys, text = written("emelin2019-probes", "--manifest", manifest, "--group-kind", "frequency_bin")
    assert keys == [] and by_key["pos_tags"].text not in text
    assert written("emelin2019-bleu", "--manifest", score_manifest(tmp_path / "m.json", paths))[0] == []


# --- the workflow ----------------------------------------------------------------------------------------

TABLES = [
    "emelin2019",  # the scores table every experiment gets
    "emelin2019_en_ru",  # ... and the EN-RU experiment's
    "table1_bleu",
    "table2_pairs",  # EN-RU
    "table4_variants",
    "table5_params_speed",
    "bootstrap",
    "probes_frequency",
    "probes_pos",
    "gates",
    "contrawsd",
]
MAIN_VARIANTS = ("baseline", "lexical", "feature_fusion")
FIGURES = ["probes_encoder", "probes_decoder", "similarity_encoder", "similarity_decoder"]


def planned(*args: str) -> dict[str, int]:
    result = snakemake("-n", "-p", "--forceall", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    counts: dict[str, int] = {}
    for job in dry_run_jobs(result.stdout):
        counts[job["rule"]] = counts.get(job["rule"], 0) + 1
    return counts


ANALYSIS = {"emelin2019_states", "emelin2019_layer_probes", "emelin2019_similarity", "emelin2019_gate_stats"}
CONTRAWSD = {"emelin2019_contrawsd_expand", "emelin2019_contrawsd_score", "emelin2019_contrawsd"}
DECODING = {"translate", "postprocess", "evaluate"}


@pytest.mark.parametrize(
    ("table", "needed", "not_needed"),
    [
        # BLEU tables: the three runs decoded and scored, no analysis
        ("table1_bleu", {"train": 3, "translate": 3, "evaluate": 3}, ANALYSIS | CONTRAWSD),
        # Table 4 adds the EN-DE ablations (dec-to-enc, dec-to-enc + self)
        ("table4_variants", {"train": 5, "evaluate": 5}, ANALYSIS | CONTRAWSD),
        # parameters and speed: trained runs and count-params, nothing decoded or averaged
        (
            "table5_params_speed",
            {"train": 3, "emelin2019_count_params": 3},
            DECODING | {"average"} | ANALYSIS,
        ),
        # probes: states of the three averaged models over a training sample, the dev and the test set,
        # source POS from the parse and target POS from toyworld's tags, nothing decoded
        (
            "probes_pos",
            {
                "train": 3,
                "average": 3,
                "emelin2019_states": 9,  # the training sample's, the dev set's and the test set's
                "emelin2019_layer_probes": 3,
                "emelin2019_pos": 2,
            },
            DECODING | CONTRAWSD | {"emelin2019_similarity"},
        ),
        # the paired bootstrap: each shortcut run's translation against the baseline's, no analysis
        (
            "bootstrap",
            {"train": 5, "translate": 5, "significance": 4},
            ANALYSIS | CONTRAWSD | {"evaluate"},
        ),
        # gates: the two shortcut runs only
        ("gates", {"train": 2, "emelin2019_gate_stats": 2}, DECODING | {"emelin2019_states"}),
        # ContraWSD: one expansion through the en-de chain, three scorings, no decoding
        (
            "contrawsd",
            {"train": 3, "emelin2019_contrawsd_expand": 1, "emelin2019_contrawsd_score": 3},
            DECODING,
        ),
    ],
)
def test_each_table_plans_only_what_it_needs(table, needed, not_needed):
    counts = planned(f"results/tables/emelin2019/{table}.md")
    assert {rule: counts.get(rule, 0) for rule in needed} == needed
    assert not_needed.isdisjoint(counts), sorted(not_needed & set(counts))
    others = {
        f"emelin2019_{name}" for name in ("bleu", "variants", "params_speed", "bootstrap", "probes", "gates")
    }
    assert sum(counts.get(rule, 0) for rule in others | {"emelin2019_contrawsd_table"}) == 1
    assert "report" not in counts and "figure" not in counts


def test_a_figure_plans_its_curves_and_not_the_tables():
    counts = planned("results/figures/emelin2019/similarity_decoder.png")
    # each analysed variant's test states and their similarity (one seed in the demo config)
    assert counts["emelin2019_similarity"] == 3 and counts["emelin2019_states"] == 3
    assert counts["emelin2019_curves"] == 1 and counts["figure"] == 1
    assert "emelin2019_layer_probes" not in counts and not DECODING & set(counts)


def test_the_default_dag_holds_every_table_and_figure_of_the_study():
    result = snakemake("-n", "--forceall")
    assert result.returncode == 0, result.stdout + result.stderr
    jobs = {job["rule"]: job for job in dry_run_jobs(result.stdout)}
    inputs = jobs["all"]["input"].split(", ")
    study = [path for path in inputs if "/emelin2019/" in path]
    assert sorted(study) == sorted(
        [f"results/tables/emelin2019/{table}.md" for table in TABLES]
        + [f"results/figures/emelin2019/{figure}.png" for figure in FIGURES]
    )
    assert set(study) <= set(jobs["report"]["input"].split(", "))


@pytest.mark.parametrize(
    ("configfile", "experiment"),
    [("experiments/emelin2019.yaml", "emelin2019_ende_base"), ("config.yaml", "emelin2019")],
)
def test_the_table_4_and_figure_5_variants_are_feature_fusion(configfile, experiment):
    """§4: "The following analysis is based on models utilizing lexical shortcuts with feature-fusion".
    Table 4's "+ self-attn. shortcuts" row is Table 1's feature-fusion row, so its dec-to-enc, non-lexical
    and Figure 5's encoder-/decoder-only models fuse features too, with feature-fusion's warm-up."""
    spec = yaml.safe_load((REPO / configfile).read_text(encoding="utf-8"))["experiments"][experiment]
    variants = spec["variants"]
    ablations = {name: switches for name, switches in variants.items() if name not in MAIN_VARIANTS}
    assert {"dec_to_enc", "dec_to_enc_self"} <= set(ablations)
    for name, switches in ablations.items():
        assert switches["shortcuts"]["kind"] == "feature_fusion", name
        assert switches.get("warmup") == variants["feature_fusion"].get("warmup"), name
    if configfile == "experiments/emelin2019.yaml":
        others = {"non_lexical", "encoder_only", "decoder_only"}
        assert set(ablations) == {"dec_to_enc", "dec_to_enc_self", *others}


@pytest.fixture(scope="module")
def full_scale_jobs() -> list[dict[str, str]]:
    """The dry-run jobs of the full-scale study (experiments/emelin2019.yaml), planned once."""
    result = snakemake("-n", "-p", "--forceall", "emelin2019", "--configfile", "experiments/emelin2019.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    return dry_run_jobs(result.stdout)


def test_the_full_scale_study_plans_tables_2_and_3_and_the_real_contrawsd(full_scale_jobs):
    jobs = full_scale_jobs
    outputs = {job.get("output", "") for job in jobs}
    for table in ("table1_bleu", "table2_pairs", "table3_small", "table4_variants", "contrawsd"):
        assert any(output.startswith(f"results/tables/emelin2019/{table}.md") for output in outputs), table
    (download,) = [job for job in jobs if job["rule"] == "emelin2019_contrawsd_download"]
    assert "nmtvariants download contrawsd_deen" in download["shell"]
    expands = [job for job in jobs if job["rule"] == "emelin2019_contrawsd_expand"]
    assert [job["output"] for job in expands] == [
        "data/wmt14_ende/raw/contrawsd-de-en.de, data/wmt14_ende/raw/contrawsd-de-en.en"
    ]
    # decoding with beam 16 from the average of the last 5 (BASE) or 16 (BIG) checkpoints
    translations = [job["shell"] for job in jobs if job["rule"] == "translate"]
    assert translations and all("--beam 16" in shell for shell in translations)
    assert {"averaged-last5.pt", "averaged-last16.pt"} == {
        shell.split("--checkpoint ")[1].split()[0].rsplit("/", 1)[1] for shell in translations
    }
    # 89,500 merges for EN-CS and EN-FI, Russian merges on ISO 9 Latin
    learned = {job["output"].split("/")[1]: job["shell"] for job in jobs if job["rule"] == "bpe_learn"}
    assert "-s 89500" in learned["wmt18_encs"] and "-s 89500" in learned["wmt18_enfi"]
    assert "--translit ru" in learned["wmt17_enru"] and "-s 32000" in learned["wmt14_ende"]


def test_table_3_scores_table_1s_test_sets_and_averages_exactly_those(full_scale_jobs):
    """Table 3's caption: "'test mean' denotes the average of test-sets in table (1)". The small models
    are evaluated on newstest2014-2018, and the table's mean is told to average exactly those."""
    table1_testsets = ["newstest2014-full", "newstest2015", "newstest2016", "newstest2017", "newstest2018"]
    (table3,) = [
        job for job in full_scale_jobs if job["rule"] == "emelin2019_bleu" and "table3_small" in job["output"]
    ]
    assert sorted(table3["input"].split(", ")) == sorted(  # every replica: seeds 1, 2, 3
        f"results/emelin2019_ende_small/en-de/{replica}/{testset}.scores.json"
        for variant in MAIN_VARIANTS
        for replica in (variant, f"{variant}-seed2", f"{variant}-seed3")
        for testset in table1_testsets
    )
    seeds = [seed for _ in MAIN_VARIANTS for seed in (1, 2, 3) for _ in table1_testsets]
    assert [entry["seed"] for entry in planned_manifest(table3["shell"])] == seeds
    assert f"--mean-testsets {' '.join(table1_testsets)} " in table3["shell"]
    (table1,) = [
        job for job in full_scale_jobs if job["rule"] == "emelin2019_bleu" and "table1_bleu" in job["output"]
    ]
    assert "--mean-testsets" not in table1["shell"]


def test_the_table_3_command_notes_its_mean(tmp_path):
    paths = []
    for index, record in enumerate([*RECORDS[:2], score_record("e/en-de/baseline", "nt17", 40.0, 44.0)]):
        paths.append(tmp_path / f"{index}.scores.json")
        paths[-1].write_text(json.dumps(record), encoding="utf-8")
    out = tmp_path / "table3.md"
    args = ["emelin2019-bleu", "--manifest", score_manifest(tmp_path / "m.json", paths)]
    args += ["--mean-testsets", "nt14", "nt15"]
    assert main([*args, "--title", "T3", "--out", str(out)]) == 0
    table = pd.read_csv(out.with_suffix(".csv"))
    mean = table[["experiment", "pair", "variant", "testset", "tok. BLEU", "BLEU"]].values.tolist()[-1]
    assert mean == ["e", "en-de", "baseline", "mean", 26.5, 25.0]
    assert "the unweighted mean over nt14, nt15 (Table 1's test sets" in out.read_text(encoding="utf-8")


def probe_protocol(jobs: list[dict[str, str]], variant: str) -> tuple[dict[str, str], dict[str, str]]:
    """The layer-probes job of ``variant`` and, per states file it reads, the extraction's command."""
    (probe,) = [
        job for job in jobs if job["rule"] == "emelin2019_layer_probes" and f"/{variant}/" in job["output"]
    ]
    extractions = {job["output"]: job["shell"] for job in jobs if job["rule"] == "emelin2019_states"}
    states = {
        part: extractions[probe["shell"].split(f"--{part}-states ")[1].split()[0]]
        for part in ("train", "valid", "test")
    }
    return probe, states


@pytest.fixture(scope="module")
def probes_pos_jobs() -> list[dict[str, str]]:
    """The dry-run jobs of the default run's POS probe table, planned once."""
    result = snakemake("-n", "-p", "--forceall", "results/tables/emelin2019/probes_pos.md")
    assert result.returncode == 0, result.stdout + result.stderr
    return dry_run_jobs(result.stdout)


def test_the_probes_train_on_the_training_corpus_stop_on_dev_and_report_on_test(probes_pos_jobs):
    """The authors' protocol (seed brief §1.7): the probe learns from states of the NMT training corpus
    (its first sentences), early-stops on the dev set's and reports on the test set's (newstest2014 for
    EN-DE, §A.3); at toy scale a few hundred sentences each, so that the demo stays quick."""
    jobs = probes_pos_jobs
    probe, states = probe_protocol(jobs, "lexical")
    analysis = "results/emelin2019/en-de/lexical/analysis"
    assert {f"{analysis}/states-{part}.npz" for part in ("train", "valid", "test")} <= set(
        probe["input"].split(", ")
    )
    for part, split in (("train", "train"), ("valid", "valid"), ("test", "test")):
        assert f"--source data/toyworld/en-de/bpe/{split}.en " in states[part], part
        assert f"--target data/toyworld/en-de/bpe/{split}.de " in states[part], part
        assert "--max-sentences 300 " in states[part]
    assert len({shell.split("--checkpoint ")[1].split()[0] for shell in states.values()}) == 1  # one model
    (table,) = [job for job in jobs if job["rule"] == "emelin2019_probes"]
    assert "first 300 sentences of the NMT training corpus (train)" in table["shell"]
    assert "Deviation: the authors stream 100 batches of the training corpus" in table["shell"]


def test_the_full_scale_probes_train_on_a_sample_of_wmt14(full_scale_jobs, tmp_path):
    probe, states = probe_protocol(full_scale_jobs, "feature_fusion")
    assert "results/emelin2019_ende_base/" in probe["output"]
    for part, split, sentences in (
        ("train", "train", 10000),
        ("valid", "newstest2013", 5000),
        ("test", "newstest2014-full", 5000),
    ):
        assert f"--source data/wmt14_ende/en-de/bpe/{split}.en " in states[part], part
        assert f"--max-sentences {sentences} " in states[part], part
    # the sample's size is a setting of the study
    config = yaml.safe_load((REPO / "experiments/emelin2019.yaml").read_text(encoding="utf-8"))
    config["studies"] = {"emelin2019": {"probe_train_sentences": 2500}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    result = snakemake(
        "-n", "-p", "--forceall", "--configfile", str(tmp_path / "c.yaml"), "--",
        "results/emelin2019_ende_base/en-de/feature_fusion/analysis/probes.csv",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    _, states = probe_protocol(dry_run_jobs(result.stdout), "feature_fusion")
    assert "--max-sentences 2500 " in states["train"] and "--max-sentences 5000 " in states["test"]


def test_the_probes_read_both_pos_files_in_the_default_run(probes_pos_jobs):
    jobs = probes_pos_jobs
    (lexical,) = [
        job for job in jobs if job["rule"] == "emelin2019_layer_probes" and "/lexical/" in job["output"]
    ]
    assert "--source-group pos=data/toyworld/en-de/pos/test.en" in lexical["shell"]
    assert "--target-group pos=data/toyworld/en-de/pos/test.de" in lexical["shell"]
    pos = {job["output"]: job["shell"] for job in jobs if job["rule"] == "emelin2019_pos"}
    assert "--tags data/toyworld/raw/test.de.pos" in pos["data/toyworld/en-de/pos/test.de"]
    assert "--conllu data/toyworld/raw/test.en.conllu" in pos["data/toyworld/en-de/pos/test.en"]


def test_the_en_ru_experiment_gives_table_2_through_the_iso9_bpe():
    """Table 2 at toy scale: the EN-RU experiment's three runs, 2,800 updates each (config.yaml,
    emelin2019_en_ru), through the transliterated joint BPE; Table 1, the analyses and Table 5 stay EN-DE."""
    result = snakemake("-n", "-p", "--forceall", "emelin2019")
    assert result.returncode == 0, result.stdout + result.stderr
    jobs = dry_run_jobs(result.stdout)
    (table2,) = [job for job in jobs if job["rule"] == "emelin2019_bleu" and "table2_pairs" in job["output"]]
    assert table2["input"].split(", ") == [
        f"results/emelin2019_en_ru/en-ru/{variant}/test.scores.json" for variant in MAIN_VARIANTS
    ]
    (learn,) = [job for job in jobs if job["rule"] == "bpe_learn" and "/en-ru/" in job["output"]]
    assert "--translit ru" in learn["shell"]
    updates: dict[str, list[int]] = {}  # pair -> each run's max_updates
    for job in jobs:
        if job["rule"] == "train":
            words = shlex.split(job["shell"])
            settings = json.loads(words[words.index("--config-json") + 1])
            pair = settings["data"]["vocab"].split("/")[2]  # data/<corpus>/<pair>/bpe/vocab.txt
            updates.setdefault(pair, []).append(settings["train"]["max_updates"])
    assert updates == {"en-de": [1200] * 5, "en-ru": [2800] * 3}
    (table1,) = [job for job in jobs if job["rule"] == "emelin2019_bleu" and "table1_bleu" in job["output"]]
    assert "/en-ru/" not in table1["input"]
    assert not [
        job for job in jobs if job["rule"].startswith("emelin2019_") and "/en-ru/" in job.get("output", "")
    ]


def test_the_multi30k_config_plans_the_real_data_comparison():
    result = snakemake(
        "-n", "-p", "--forceall", "emelin2019", "--configfile", "experiments/multi30k_emelin2019.yaml",
        "--config", "mirror=../shared/data",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    jobs = dry_run_jobs(result.stdout)
    (study,) = [job for job in jobs if job["rule"] == "emelin2019"]
    assert sorted(study["input"].split(", ")) == sorted(
        [f"results/tables/emelin2019/{name}.md" for name in
         ("m30k_emelin2019", "table5_params_speed", "bootstrap", "probes_frequency", "gates")]
        + [f"results/figures/emelin2019/{figure}.png" for figure in FIGURES]
    )  # fmt: skip
    tests = {(job["wildcards"]) for job in jobs if job["rule"] == "significance"}
    assert len(tests) == 4 and all("testset=test_201" in wildcards for wildcards in tests)
    significance = [job["shell"] for job in jobs if job["rule"] == "significance"]
    assert all("--metrics bleu,chrf" in shell and "--seed 1234" in shell for shell in significance)
    probes = [job["shell"] for job in jobs if job["rule"] == "emelin2019_layer_probes"]
    assert len(probes) == 3 * 3 and all(  # every variant's three seeds, each its own model's states
        "--source-frequency data/multi30k/en-de/bpe/train.en" in shell
        and "-group" not in shell
        and "--max-epochs 30" in shell
        for shell in probes
    )
    labels = Counter(re.search(r"--label (\S+)", shell).group(1) for shell in probes)
    assert labels == {"baseline": 3, "lexical": 3, "feature_fusion": 3}  # a seed's rows join its variant's
    (frequency,) = [job for job in jobs if job["rule"] == "emelin2019_probes"]
    assert "No POS breakdown" in frequency["shell"] and "seed 1 only" not in frequency["shell"]
    entries = planned_manifest(frequency["shell"])
    assert sorted((e["variant"], e["seed"]) for e in entries) == sorted(
        (variant, seed) for variant in labels for seed in (1, 2, 3)
    )
    assert {job["rule"] for job in jobs} & {
        "emelin2019_pos",
        "emelin2019_variants",
        "emelin2019_bleu",
    } == set()
    # one content-addressed run per variant and seed (the bootstrap reads all three seeds), the
    # baseline's the same as multi30k.yaml's shared settings
    assert sum(job["rule"] == "train" for job in jobs) == 3 * 3
