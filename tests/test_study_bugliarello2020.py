"""The PASCAL study: gold trees on the preprocessed tokens, its tables on hand-made result files, and
what its targets plan on the real planner (`snakemake -n`)."""

from __future__ import annotations

import json
import shlex
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml
from manifests import planned_manifest
from test_multitask import recursive
from workflow_configs import REPO, default_config_with, dry_run_jobs, snakemake

from nmtvariants.cli import main as cli_main
from nmtvariants.errors import ConfigError, InputError
from nmtvariants.fileio import read_lines, write_lines
from nmtvariants.reporting.deviations import check_registry
from nmtvariants.reporting.manifest import Entry, write_manifest
from nmtvariants.studies.bugliarello2020.plan import Bugliarello2020Plan
from nmtvariants.studies.bugliarello2020.tables import (
    DEVIATIONS,
    TABLE_KEYS,
    ablation_table,
    gold_parse,
    hyphen_groups,
    length_rows,
    main_table,
    project_tree,
)
from nmtvariants.syntax.conllu import format_sentence, make_sentence, read_conllu
from nmtvariants.syntax.parents import iter_parents_x2

# "The dark-blue ball rolls ." with heads The->ball, dark-blue->ball, ball->rolls, .->rolls.
GOLD = make_sentence(
    ["The", "dark-blue", "ball", "rolls", "."],
    [3, 3, 4, 0, 4],
    ["det", "amod", "nsubj", "root", "punct"],
    upos=["DET", "ADJ", "NOUN", "VERB", "PUNCT"],
    comments=["# sent_id = s1", "# text = The dark-blue ball rolls."],
)
TOKENS = "the dark @-@ blue ball rolls ."


def test_hyphen_markers_glue_their_neighbours_into_one_word():
    assert hyphen_groups(["the", "dark", "@-@", "blue", "ball"]) == [[0], [1, 2, 3], [4]]
    assert hyphen_groups(["a", "@-@", "b", "@-@", "c"]) == [[0, 1, 2, 3, 4]]
    assert hyphen_groups(["@-@", "x"]) == [[0], [1]]  # a leading marker glues nothing before it


def test_a_gold_tree_moves_onto_truecased_hyphen_split_tokens():
    tree = project_tree(GOLD, TOKENS, "here")
    rows = [(w.id, w.form, w.head, w.deprel) for w in tree.words]
    assert rows == [
        (1, "the", 5, "det"),
        (2, "dark", 4, "compound"),
        (3, "@-@", 4, "punct"),
        (4, "blue", 5, "amod"),  # the last piece heads the word and keeps its relation
        (5, "ball", 6, "nsubj"),
        (6, "rolls", 0, "root"),
        (7, ".", 6, "punct"),
    ]
    assert "# sent_id = s1" in tree.comments and f"# text = {TOKENS}" in tree.comments


def test_projected_trees_give_hand_checked_parent_positions(tmp_path):
    """Through `nmtvariants parents`: BPE 'the dar@@ k @-@ blue ball rolls .' (8 tokens). Middle
    positions by hand: the->ball 5; dar@@ k @-@ -> blue 4; blue->ball 5; ball->rolls 6; rolls and .->6.
    First-subword positions are the same here (every head is one token)."""
    conllu = tmp_path / "tree.conllu"
    conllu.write_text(format_sentence(project_tree(GOLD, TOKENS, "here")), encoding="utf-8")
    bpe = tmp_path / "bpe.en"
    bpe.write_text("the dar@@ k @-@ blue ball rolls .\n", encoding="utf-8")
    out = tmp_path / "parents"
    assert cli_main(["parents", "--conllu", str(conllu), "--bpe", str(bpe), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == "5 4 4 4 5 6 6 6\n"
    assert list(iter_parents_x2(conllu, bpe, "first")) == [[10, 8, 8, 8, 10, 12, 12, 12]]


def test_a_word_that_differs_beyond_case_is_refused():
    with pytest.raises(InputError, match=r"here: word 3 is 'ball' in the gold tree but 'bell'"):
        project_tree(GOLD, "the dark @-@ blue bell rolls .", "here")
    with pytest.raises(InputError, match="4 words but the gold tree has 5"):
        project_tree(GOLD, "the dark-blue ball rolls", "here")


def test_the_training_split_follows_the_kept_lines(tmp_path):
    trees = [
        make_sentence(["A", "cat", "sleeps", "."], [2, 3, 0, 3], ["det", "nsubj", "root", "punct"]),
        make_sentence(["Dogs", "bark", "."], [2, 0, 2], ["nsubj", "root", "punct"]),
        make_sentence(["It", "rains", "."], [2, 0, 2], ["expl", "root", "punct"]),
    ]
    raw = tmp_path / "train.en.conllu"
    raw.write_text("".join(format_sentence(tree) for tree in trees), encoding="utf-8")
    tokens = tmp_path / "train.tc"
    tokens.write_text("a cat sleeps .\nit rains .\n", encoding="utf-8")
    kept = tmp_path / "train.kept"
    kept.write_text("1\n3\n", encoding="utf-8")
    out = tmp_path / "out.conllu"
    command = ["bugliarello2020-gold-parse", "--conllu", str(raw), "--tokens", str(tokens)]
    assert cli_main([*command, "--kept", str(kept), "-o", str(out)]) == 0
    assert [tree.forms for tree in read_conllu(out)] == [["a", "cat", "sleeps", "."], ["it", "rains", "."]]
    assert [tree.heads for tree in read_conllu(out)] == [[2, 3, 0, 3], [2, 0, 2]]
    with pytest.raises(InputError, match="gives 3 trees for the 2 lines"):
        gold_parse(raw, tokens)


# --- tables on hand-made result files -------------------------------------------------------------


def scores(path: Path, bleu: float, ribes: float | None = None) -> str:
    document = {"scores": {"bleu": {"score": bleu, "signature": "nrefs:1|bleu"}}}
    if ribes is not None:
        document["scores"]["ribes"] = {"score": ribes, "signature": "nltk-ribes"}
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


def significance(path: Path, delta: float, p: float, replicas: int = 1) -> str:
    """A significance JSON with each side's per-seed scores (``replicas`` of them)."""
    sides = {side: {"scores": [20.0] * replicas} for side in ("baseline", "system")}
    path.write_text(
        json.dumps({"metrics": {"bleu": {"delta": delta, "p_value": p, **sides}}}), encoding="utf-8"
    )
    return str(path)


def entry(tmp_path: Path, variant: str, switches: dict, bleu: float, sig=None, pair="en-de", ribes=None):
    stem = f"{pair}-{variant}"
    return {
        "experiment": "toy",
        "pair": pair,
        "testset": "test",
        "variant": variant,
        "switches": switches,
        "scores": scores(tmp_path / f"{stem}.scores.json", bleu, ribes),
        "significance": None if sig is None else significance(tmp_path / f"{stem}.sig.json", *sig),
    }


def manifest(path: Path, systems: list[dict]) -> str:
    """The manifest a rule writes for these systems (the table builders' records): an entry per replica's
    scores, then one with the significance test, the switches, derived corpus and update ratio in every
    entry's info."""
    written = []
    for system in systems:
        names = {key: system[key] for key in ("experiment", "pair", "variant")}
        info = {"switches": system["switches"], "derived": system.get("derived")}
        info["update_ratio"] = system.get("update_ratio", 1)
        scores = system["scores"] if isinstance(system["scores"], list) else [system["scores"]]
        seeds = system.get("seeds") or [None] * len(scores)
        for seed, path_ in zip(seeds, scores, strict=True):
            written.append(Entry({"scores": path_}, **names, seed=seed, testset=system["testset"], info=info))
        if system.get("significance"):
            files = {"significance": system["significance"]}
            written.append(Entry(files, **names, testset=system["testset"], info=info))
    return str(write_manifest(path, written))


def test_table1_marks_what_is_significant_against_the_transformer(tmp_path):
    entries = [  # systems out of the paper's order: the table puts them back
        entry(tmp_path, "pascal", {"pascal": {"heads": 2}}, 21.5, (1.496, 0.004, 3)),
        entry(tmp_path, "transformer", {}, 20.004),
        entry(tmp_path, "lisa", {"lisa": {}}, 20.3, (0.296, 0.2)),
        entry(tmp_path, "sh", {"sennrich_haddow": {}}, 19.5, (-0.504, 0.03)),
        entry(tmp_path, "transformer", {}, 30.0, pair="en-ja", ribes=80.123),
        entry(tmp_path, "pascal", {"pascal": {}}, 31.0, (1.0, 0.001), pair="en-ja", ribes=81.0),
    ]
    _, frame = main_table(entries)  # the markdown cells: one seed, so no ± sd
    assert frame.to_dict("records") == [
        {"task": "toy en-de test", "system": "Transformer", "variant": "transformer", "n": 1,
         "BLEU": "20.00", "mark": "", "delta": None, "p": None, "RIBES": "n/a"},
        {"task": "toy en-de test", "system": "+S&H", "variant": "sh", "n": 1, "BLEU": "19.50",
         "mark": "", "delta": -0.5, "p": 0.03, "RIBES": "n/a"},
        {"task": "toy en-de test", "system": "+LISA", "variant": "lisa", "n": 1, "BLEU": "20.30",
         "mark": "", "delta": 0.3, "p": 0.2, "RIBES": "n/a"},
        {"task": "toy en-de test", "system": "+PASCAL", "variant": "pascal", "n": 1, "BLEU": "21.50",
         "mark": "‡", "delta": 1.5, "p": 0.004, "RIBES": "n/a"},
        {"task": "toy en-ja test", "system": "Transformer", "variant": "transformer", "n": 1,
         "BLEU": "30.00", "mark": "", "delta": None, "p": None, "RIBES": "80.12"},
        {"task": "toy en-ja test", "system": "+PASCAL", "variant": "pascal", "n": 1, "BLEU": "31.00",
         "mark": "", "delta": 1.0, "p": 0.001, "RIBES": "81.00"},  # p < 0.01 but one seed: no ‡
    ]  # fmt: skip
    no_ribes = entry(tmp_path, "plain", {}, 30.0, pair="en-ja")
    with pytest.raises(InputError, match="no RIBES for a Japanese target"):
        main_table([no_ribes])


def test_table3_lists_pascal_variants_by_layer_and_variance(tmp_path):
    entries = [
        entry(tmp_path, "layer2", {"pascal": {"layer": 2}}, 19.0, (-1.0, 0.002)),
        entry(tmp_path, "parent_only", {"pascal": {"parent_only": True, "q": 0.4}}, 20.1, (0.1, 0.5)),
        entry(tmp_path, "layer1", {"pascal": {"heads": 2}}, 21.0, (1.0, 0.009, 2)),
    ]
    frame, _ = ablation_table(entries)
    assert frame[["variant", "layer", "heads", "variance", "q", "BLEU", "delta", "mark"]].to_dict(
        "records"
    ) == [
        {"variant": "layer1", "layer": 1, "heads": "2", "variance": "1", "q": 0.0, "BLEU": 21.0,
         "delta": 1.0, "mark": "‡"},
        {"variant": "parent_only", "layer": 1, "heads": "all", "variance": "parent-only", "q": 0.4,
         "BLEU": 20.1, "delta": 0.1, "mark": ""},
        {"variant": "layer2", "layer": 2, "heads": "all", "variance": "1", "q": 0.0, "BLEU": 19.0,
         "delta": -1.0, "mark": ""},  # one seed a side
    ]  # fmt: skip
    with pytest.raises(InputError, match="PASCAL variants only"):
        ablation_table([entry(tmp_path, "lisa", {"lisa": {}}, 20.0, (0.0, 1.0))])


def test_figure2_rows_go_bucket_by_bucket_without_empty_buckets(tmp_path):
    def length(name: str, buckets: list) -> dict:
        path = tmp_path / f"{name}.length.json"
        rows = [{"bucket": b, "n_sentences": n, "bleu": s} for b, n, s in buckets]
        path.write_text(json.dumps({"buckets": rows}), encoding="utf-8")
        return {"variant": name, "length": str(path)}

    entries = [
        length("transformer", [("0-7", 3, 10.0), ("8-11", 2, 20.0), (">=12", 0, None)]),
        length("pascal", [("0-7", 3, 11.111), ("8-11", 2, 19.0), (">=12", 0, None)]),
    ]
    assert length_rows(entries).values.tolist() == [
        ["0-7", "transformer", 10.0, 3],
        ["0-7", "pascal", 11.11, 3],
        ["8-11", "transformer", 20.0, 2],
        ["8-11", "pascal", 19.0, 2],
    ]


def test_the_table_command_writes_markdown_csv_and_provenance(tmp_path):
    entries = [
        entry(tmp_path, "transformer", {}, 20.0),
        entry(tmp_path, "pascal", {"pascal": {}}, 21.5, (1.5, 0.004)),
    ]
    out = tmp_path / "table1.md"
    run = ["bugliarello2020-table", "--table", "main", "--manifest", manifest(tmp_path / "m.json", entries)]
    assert cli_main([*run, "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "Table 1" in text
    rows = [line.split("|")[1:-1] for line in text.splitlines() if line.startswith("| toy")]
    assert [[cell.strip() for cell in row] for row in rows] == [
        ["toy en-de test", "Transformer", "transformer", "1", "20.00", "", "", "", "n/a"],  # blank, not nan
        ["toy en-de test", "+PASCAL", "pascal", "1", "21.50", "", "1.50", "0.00", "n/a"],  # one seed: no ‡
    ]
    assert "given only where both have two or more training seeds" in text
    assert (tmp_path / "table1.csv").read_text(encoding="utf-8").splitlines()[0] == (
        "task,system,variant,n,BLEU,BLEU sd,mark,delta,p,RIBES,RIBES sd,BLEU seed ?,RIBES seed ?"
    )
    assert "1 seed (?)" in text and "Significance test: sacreBLEU's two-sided paired bootstrap" in text
    provenance = json.loads((tmp_path / "table1.provenance.json").read_text(encoding="utf-8"))
    assert [source["path"] for source in provenance["sources"]] == [
        entries[0]["scores"],
        entries[1]["scores"],
        entries[1]["significance"],
    ]


def written_deviations(out: Path) -> list[str]:
    """The keys of the deviations a table command wrote, checked against the markdown under the table."""
    keys = json.loads(out.with_suffix(".provenance.json").read_text(encoding="utf-8"))["deviations"]
    text = out.read_text(encoding="utf-8")
    by_key = {deviation.key: deviation for deviation in DEVIATIONS}
    assert text.split("**Deviations from the paper**\n\n", 1)[1].splitlines() == [
        f"- {by_key[key].text}" for key in keys
    ]
    return keys


def test_each_table_carries_the_deviations_of_its_systems_and_no_others(tmp_path):
    """Stanza for CoreNLP and the two-sided bootstrap under Tables 1 and 3; the S&H labels, the
    dependency linearisation and the Japanese tokenisers only where those systems or targets are."""
    check_registry(DEVIATIONS, TABLE_KEYS)
    plain = [
        entry(tmp_path, "transformer", {}, 20.0),
        entry(tmp_path, "pascal", {"pascal": {}}, 21.5, (1.5, 0.004)),
    ]
    full = [
        *plain,
        entry(tmp_path, "sh", {"sennrich_haddow": {}}, 20.5, (0.5, 0.3)),
        {**entry(tmp_path, "mt", {}, 20.1, (0.1, 0.6)), "derived": "multitask"},
        entry(tmp_path, "transformer", {}, 30.0, pair="en-ja", ribes=80.0),
    ]

    def written(name: str, systems: list[dict], table: str) -> list[str]:
        out = tmp_path / f"{name}.md"
        run = ["bugliarello2020-table", "--manifest", manifest(tmp_path / f"{name}.json", systems)]
        assert cli_main([*run, "--table", table, "--out", str(out)]) == 0
        return written_deviations(out)

    assert written("a", plain, "main") == ["stanza_parser", "two_sided_bootstrap"]
    assert written("b", full, "main") == [
        "stanza_parser", "ud_labels", "dependency_linearisation", "multitask_equal_updates",
        "two_sided_bootstrap",
        "japanese_tokenisation",
    ]  # fmt: skip
    # a multi-task run trained longer than the others (`variant_train`) is labelled so instead
    longer = [
        *plain,
        {**entry(tmp_path, "mt", {}, 20.1, (0.1, 0.6)), "derived": "multitask", "update_ratio": 3},
    ]
    assert "multitask_translation_tokens" in written("d", longer, "main")
    assert "multitask_equal_updates" not in written("d", longer, "main")
    ablation = [entry(tmp_path, "pascal", {"pascal": {}}, 21.5, (1.5, 0.004))]
    assert written("c", ablation, "ablation") == ["stanza_parser", "two_sided_bootstrap"]
    assert "CoreNLP" in (tmp_path / "c.md").read_text(encoding="utf-8")


# --- what the study's targets plan ------------------------------------------------------------------


def plan(*args: str) -> list[dict[str, str]]:
    result = snakemake("-n", "-p", "--forceall", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    return dry_run_jobs(result.stdout)


def counts(jobs: list[dict[str, str]]) -> Counter:
    return Counter(job["rule"] for job in jobs)


CHAIN = {  # toyworld en-de up to the network vocabulary (see test_workflow_studies)
    "toyworld": 1,
    "tokenize": 6,
    "clean": 1,
    "clean_shared": 1,
    "truecase_train": 3,
    "truecase_apply": 6,
    "bpe_learn": 1,
    "bpe_apply": 6,
    "bpe_vocab_shared": 1,
    "network_vocab": 1,
}


def test_table1_plans_its_runs_streams_and_tests_only():
    """Transformer (the baseline's run), PASCAL, LISA, S&H and multi-task: five runs; gold trees of
    the three splits, both parent streams and the labels of each; the derived multi-task corpus; four
    significance tests; no length buckets or figures."""
    jobs = plan("results/tables/bugliarello2020/table1.md")
    multitask = ("train", "valid", "source", "vocab")
    assert counts(jobs) == {
        **CHAIN,
        "bugliarello2020_gold_parse": 3,
        "bugliarello2020_parents": 6,
        "bugliarello2020_dep_labels": 3,
        **{f"bugliarello2020_multitask_{part}": 1 for part in multitask},
        "train": 5,
        "average": 5,
        "translate": 5,
        "postprocess": 5,
        "evaluate": 5,
        "significance": 4,
        "bugliarello2020_table1": 1,
    }
    gold = [job for job in jobs if job["rule"] == "bugliarello2020_gold_parse"]
    (train_parse,) = [job for job in gold if "train" in job["output"]]
    assert "--kept data/toyworld/en-de/clean/train.kept" in train_parse["shell"]
    assert not [job for job in gold if "valid" in job["output"] and "--kept" in job["shell"]]
    translations = {job["output"]: job["shell"] for job in jobs if job["rule"] == "translate"}
    aux = sorted(
        shlex.split(shell)[shlex.split(shell).index("--aux") + 1]
        for shell in translations.values()
        if "--aux" in shell
    )
    assert aux == [
        "dep_labels=data/toyworld/en-de/inputs/test.dep_labels",
        "parents_first=data/toyworld/en-de/inputs/test.parents_first",
        "parents_x2=data/toyworld/en-de/inputs/test.parents_x2",
    ]


def test_table3_plans_the_pascal_run_and_the_baseline_only():
    rules = counts(plan("results/tables/bugliarello2020/table3.md"))
    assert (rules["train"], rules["bugliarello2020_parents"], rules["significance"]) == (
        2,
        3,
        1,
    )
    assert rules["bugliarello2020_table3"] == 1 and "bugliarello2020_table1" not in rules


def test_figure2_plans_length_buckets_and_no_significance():
    rules = counts(plan("results/figures/bugliarello2020/length_bugliarello2020_en-de_test.png"))
    assert rules["bugliarello2020_length"] == 5 and rules["bugliarello2020_length_csv"] == 1
    assert rules["figure"] == 1 and rules["train"] == 5
    assert "significance" not in rules


def test_the_default_dag_builds_every_registered_table_and_figure():
    everything = {job["rule"]: job for job in plan()}
    wanted = {
        "results/tables/bugliarello2020/bugliarello2020.md",
        "results/tables/bugliarello2020/table1.md",
        "results/tables/bugliarello2020/table3.md",
        "results/figures/bugliarello2020/length_bugliarello2020_en-de_test.png",
    }
    assert wanted <= set(everything["all"]["input"].split(", "))
    study = plan("bugliarello2020")
    (target,) = [job for job in study if job["rule"] == "bugliarello2020"]
    assert set(target["input"].split(", ")) == wanted


def test_the_demo_has_sh_and_multitask_with_their_inputs_runs_and_table1_rows():
    """config.yaml: the S&H variant with its label stream, the multi-task baseline with its derived
    corpus (training, valid and test files, vocabulary) and decoding on it."""
    jobs = plan("--", "results/tables/bugliarello2020/table1.md")
    rules = counts(jobs)
    assert rules["train"] == 5 and rules["bugliarello2020_dep_labels"] == 3
    assert rules["significance"] == 4
    derived = "data/toyworld/en-de/derived/multitask"
    made = {job["rule"]: job["output"] for job in jobs if "multitask" in job["rule"]}
    assert made == {
        "bugliarello2020_multitask_train": f"{derived}/train.en, {derived}/train.de",
        "bugliarello2020_multitask_valid": f"{derived}/valid.en, {derived}/valid.de",
        "bugliarello2020_multitask_source": f"{derived}/test.en",
        "bugliarello2020_multitask_vocab": f"{derived}/vocab.txt",
    }
    trainings = [json.loads(shlex.split(job["shell"])[shlex.split(job["shell"]).index("--config-json") + 1])
                 for job in jobs if job["rule"] == "train"]  # fmt: skip
    (multitask,) = [run["data"] for run in trainings if run["data"]["vocab"].startswith(derived)]
    assert multitask == {
        "train_src": f"{derived}/train.en",
        "train_tgt": f"{derived}/train.de",
        "valid_src": f"{derived}/valid.en",
        "valid_tgt": f"{derived}/valid.de",
        "vocab": f"{derived}/vocab.txt",
    }
    translations = [job["shell"] for job in jobs if job["rule"] == "translate"]
    assert sum(f"--input {derived}/test.en" in shell for shell in translations) == 1
    assert sum(f"--vocab {derived}/vocab.txt" in shell for shell in translations) == 1
    (table,) = [job for job in jobs if job["rule"] == "bugliarello2020_table1"]
    written = planned_manifest(table["shell"])
    rows = {(item["variant"], item["info"]["derived"]): None for item in written}
    assert list(rows) == [
        ("transformer", None),
        ("pascal", None),
        ("lisa", None),
        ("sennrich_haddow", None),
        ("multitask", "multitask"),
    ]
    assert written[-1]["files"] == {
        "significance": "results/bugliarello2020/en-de/multitask/test.significance.json"
    }


def test_table1_names_the_multitask_baseline_from_its_derived_corpus(tmp_path):
    rows = [
        entry(tmp_path, "transformer", {}, 30.0),
        {**entry(tmp_path, "multitask", {}, 30.5, sig=(0.5, 0.2)), "derived": "multitask"},
        entry(tmp_path, "pascal", {"pascal": {}}, 31.0, sig=(1.0, 0.005, 3)),
    ]
    table, _ = main_table(rows)
    assert list(table["system"]) == ["Transformer", "+multi-task", "+PASCAL"]
    assert list(table["mark"]) == ["", "", "‡"]


@pytest.mark.slow  # ~30 s: four Snakemake jobs, each starting the CLI
def test_the_multitask_rules_write_the_derived_corpus_of_toyworld_lines(tmp_path):
    """The derived-corpus rules on a few toyworld sentences (gold trees, words split into subwords),
    run by Snakemake from their inputs: the training split doubled with <TR>/<PA> sources and the
    linearised gold trees as parse targets (checked against the recursive definition), tagged valid
    and test sources, the valid targets copied, and a vocabulary holding the tags and brackets."""
    raw = tmp_path / "toyworld"
    assert cli_main(["toyworld", "--outdir", str(raw), "--train", "4", "--valid", "2", "--test", "2",
                     "--contrawsd", "1", "--image-size", "8"]) == 0  # fmt: skip
    work = tmp_path / "wf"
    base = work / "data/toyworld/en-de"

    def subwords(words: list[str]) -> str:  # a valid BPE segmentation: long words in two pieces
        return " ".join(f"{w[:3]}@@ {w[3:]}" if len(w) > 4 else w for w in words)

    trees = {}
    for split in ("train", "valid", "test"):
        trees[split] = read_conllu(raw / f"raw/{split}.en.conllu")
        write_lines(base / f"bpe/{split}.en", [subwords(tree.forms) for tree in trees[split]])
        write_lines(base / f"bpe/{split}.de", read_lines(raw / f"raw/{split}.de"))
    (base / "parse").mkdir()
    shutil.copy(raw / "raw/train.en.conllu", base / "parse/train.en.conllu")
    derived = "data/toyworld/en-de/derived/multitask"
    targets = [f"{derived}/{name}" for name in ("train.en", "train.de", "valid.en", "valid.de", "test.en")]
    targets.append(f"{derived}/vocab.txt")
    config = default_config_with({})  # the study's experiment alone: a small DAG to plan
    config["experiments"] = {"bugliarello2020": config["experiments"]["bugliarello2020"]}
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    workflow = ["-s", str(REPO / "Snakefile"), "--configfile", str(work / "config.yaml")]
    result = snakemake("--cores", "1", *workflow, "--directory", str(work), "--", *targets)
    assert result.returncode == 0, result.stdout + result.stderr
    out = {name: list(read_lines(work / derived / name)) for name in ("train.en", "train.de", "valid.en",
           "valid.de", "test.en", "vocab.txt")}  # fmt: skip
    bpe = {split: list(read_lines(base / f"bpe/{split}.en")) for split in trees}
    german = list(read_lines(base / "bpe/train.de"))
    assert out["train.en"] == [f"<TR> {line} <TR>" for line in bpe["train"]] + [
        f"<PA> {line} <PA>" for line in bpe["train"]
    ]
    assert out["train.de"] == german + [recursive(tree) for tree in trees["train"]]
    assert out["valid.en"] == [f"<TR> {line} <TR>" for line in bpe["valid"]]
    assert out["valid.de"] == list(read_lines(base / "bpe/valid.de"))
    assert out["test.en"] == [f"<TR> {line} <TR>" for line in bpe["test"]]
    tokens = {line.split()[0] for line in out["vocab.txt"]}
    assert {"<TR>", "<PA>", "(root", "(nsubj", ")"} <= tokens


def test_the_full_config_parses_with_stanza_from_the_configured_models():
    jobs = plan(
        "--configfile", "experiments/bugliarello2020.yaml", "--", "results/tables/bugliarello2020/table3.md"
    )
    parses = [job for job in jobs if job["rule"] == "bugliarello2020_parse"]
    assert {job["output"] for job in parses} == {
        f"data/nc11/en-de/parse/{split}.en.conllu" for split in ("train", "newstest2015")
    }
    assert all("--model-dir models/stanza" in job["shell"] for job in parses)
    tables = counts(jobs)
    # 9 PASCAL runs + Transformer, each with the config's three seeds (the table reads every replica)
    assert tables["train"] == 3 * 10 and "bugliarello2020_table1" not in tables


def test_the_multi30k_config_parses_with_the_parser_it_trains_on_ewt():
    """The real-data config: UD EWT from the mirror -> `stanza-train` into parser_models -> every
    English split parsed through --model-dir with those models as inputs; the parser table scores
    them on EWT test."""
    jobs = plan(
        "--configfile", "experiments/multi30k_bugliarello2020.yaml", "--config", "mirror=../shared/data",
        "--", "results/tables/bugliarello2020/parser.md", "results/tables/bugliarello2020/table1.md",
    )  # fmt: skip
    by_rule = {job["rule"]: job for job in jobs}
    assert by_rule["bugliarello2020_treebank_download"]["shell"].startswith(
        "nmtvariants download ud_ewt --dest data/ud_ewt/raw --mirror ../shared/data"
    )
    trainer = by_rule["bugliarello2020_stanza_train"]
    assert (
        trainer["output"]
        == "models/stanza/en_tagger.pt, models/stanza/en_parser.pt, models/stanza/en_training.json"
    )
    assert "--tagger-steps 600" in trainer["shell"] and "--parser-steps 1500" in trainer["shell"]
    parses = [job for job in jobs if job["rule"] == "bugliarello2020_parse"]
    assert {job["output"] for job in parses} == {
        f"data/multi30k/en-de/parse/{split}.en.conllu"
        for split in ("train", "valid", "test_2016_flickr", "test_2018_flickr")
    }
    for job in parses:
        assert "models/stanza/en_parser.pt" in job["input"] and "--model-dir models/stanza" in job["shell"]
    score = by_rule["bugliarello2020_parser_score"]
    assert "data/ud_ewt/raw/test.conllu" in score["input"] and "stanza-score" in score["shell"]
    assert by_rule["bugliarello2020_parser_table"]["output"].startswith(
        "results/tables/bugliarello2020/parser.md"
    )
    # three variants with three seeds each; one test per variant and test set, over every seed
    assert counts(jobs)["train"] == 3 * 3 and counts(jobs)["significance"] == 4


def test_an_experiment_without_a_transformer_is_refused_at_start_up(tmp_path):
    config = default_config_with({})
    del config["experiments"]["bugliarello2020"]["variants"]["transformer"]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    result = snakemake("-n", "--configfile", str(path))
    assert result.returncode != 0
    assert "experiments.bugliarello2020.variants: the PASCAL study compares against a Transformer" in (
        result.stdout + result.stderr
    )


def test_an_ablation_list_must_name_experiments_of_the_study():
    config = default_config_with({"studies": {"bugliarello2020": {"ablations": ["baseline"]}}})
    with pytest.raises(
        ConfigError, match=r"ablations: baseline is not an experiment of study bugliarello2020"
    ):
        Bugliarello2020Plan(config, {})
    config["studies"]["bugliarello2020"]["ablations"] = ["bugliarello2020"]
    plan = Bugliarello2020Plan(config, {})
    assert plan.main_experiments() == [] and plan.ablation_experiments() == ["bugliarello2020"]
    assert {e.variant for e in plan.entries(plan.ablation_experiments(), pascal_only=True)} == {"pascal"}
