"""The preprocessing table as a user gets it: the real workflow (tokenize, clean, truecase, BPE,
network vocabulary, round trip, then workflow_scripts/preprocessing_table.py) run by Snakemake in a
temporary folder on a hand-made corpus, and every number checked against a count made here from the
raw lines.

The corpus is lower-case text whose tokens are already separated by spaces (plus one line with
attached punctuation, split here by hand), so the tokenised and truecased forms are known without
running the tokenizer or the truecaser; three pairs are built to be dropped, one per reason.
The workflow run is slow (a dozen jobs); a fast test runs the same commands in this process and
checks the table function the script calls.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from workflow_configs import default_config_with

from nmtvariants.cli import main
from nmtvariants.fileio import read_lines, write_lines
from nmtvariants.reporting.preprocessing import PairFiles, preprocessing_table

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
CLEAN = {"min": 1, "max": 12, "ratio": 3}

KEPT = [
    ("the dog runs in the park .", "der hund rennt im park ."),
    ("a man rides a bike on the road .", "ein mann fährt ein rad auf der straße ."),
    ("two children play with a red ball .", "zwei kinder spielen mit einem roten ball ."),
    ("the woman reads a book .", "die frau liest ein buch ."),
    ("a dog sleeps on the green grass .", "ein hund schläft auf dem grünen gras ."),
    ("the weather is very nice today .", "das wetter ist heute sehr schön ."),
    ("two men walk in the park .", "zwei männer gehen im park ."),
    ("the children read a red book .", "die kinder lesen ein rotes buch ."),
    ("a woman rides a red bike .", "eine frau fährt ein rotes rad ."),
    ("the man sleeps in the grass .", "der mann schläft im gras ."),
]
# raw line -> its tokens (the tokenizer splits attached punctuation)
ATTACHED = ("hello, world.", "hallo, welt.")
ATTACHED_TOKENS = (["hello", ",", "world", "."], ["hallo", ",", "welt", "."])
DROPPED = {
    "empty": ("", "ein leerer satz ."),
    "too_long": (" ".join(["word"] * 13), " ".join(["wort"] * 13)),
    "ratio": ("yes", "ja das ist gut"),
}
TEST = [("The dog runs in the park.", "Der Hund rennt im Park."), ("A man reads.", "Ein Mann liest.")]
COLUMNS = [
    "corpus",
    "pair",
    "lang",
    "train pairs in",
    "kept",
    "dropped",
    "tokens (tokenised)",
    "tokens after clean",
    "word types",
    "subwords after BPE",
    "subword types",
    "subwords/token",
    "network vocab",
    "round-trip exact %",
    "round-trip mismatches",
]


def train_pairs() -> list[tuple[str, str]]:
    """Raw training pairs: kept ones, the attached-punctuation one (kept), and the dropped ones."""
    return [*KEPT[:5], ATTACHED, *KEPT[5:], *DROPPED.values()]


def tokens(side: int) -> tuple[list[list[str]], list[list[str]]]:
    """(all tokenised training lines, kept ones) of one side, by hand."""
    kept = [pair[side].split() for pair in KEPT[:5]] + [ATTACHED_TOKENS[side]]
    kept += [pair[side].split() for pair in KEPT[5:]]
    return kept + [pair[side].split() for pair in DROPPED.values()], kept


def workflow_copy(root: Path) -> None:
    for name in ("Snakefile", "config.yaml"):
        shutil.copy2(REPO / name, root / name)
    for name in ("rules", "schemas", "envs", "workflow", "workflow_scripts"):
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__"))
    config = default_config_with({})
    # one corpus of our own instead of the default ones, and no training
    config["corpora"] = {
        "hand": {
            "source": "multi30k",  # never downloaded: its raw files are written below
            "pairs": ["en-de"],
            "testsets": ["test"],
            "preprocess": {
                "aggressive_hyphen": False,
                "escape": False,
                "clean": CLEAN,
                "truecase": True,
                "bpe": {"merges": 30, "threshold": 0, "translit": []},
            },
        }
    }
    config["experiments"] = {}
    (root / "hand.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    raw = root / "data" / "hand" / "raw"
    raw.mkdir(parents=True)
    for side, lang in enumerate(("en", "de")):
        write_lines(raw / f"train.{lang}", [pair[side] for pair in train_pairs()])
        write_lines(raw / f"valid.{lang}", [pair[side] for pair in KEPT[:2]])
        write_lines(raw / f"test.{lang}", [pair[side] for pair in TEST])


@pytest.fixture(scope="module")
def workflow(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("preprocessing")
    workflow_copy(root)
    env = dict(os.environ, PYTHONPATH=str(root / "src"), OMP_NUM_THREADS="1")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    result = subprocess.run(
        [*SNAKEMAKE, "--configfile", "hand.yaml", "--cores", "1", "results/tables/preprocessing.md"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "download_hand" not in result.stdout + result.stderr  # the raw files were used as written
    return root


@pytest.mark.slow
def test_rows_and_columns(workflow):
    frame = pd.read_csv(workflow / "results" / "tables" / "preprocessing.csv")
    assert list(frame.columns) == COLUMNS
    assert frame[["corpus", "pair", "lang"]].values.tolist() == [
        ["hand", "en-de", "en"],
        ["hand", "en-de", "de"],
    ]
    text = (workflow / "results" / "tables" / "preprocessing.md").read_text(encoding="utf-8")
    assert text.startswith("# Preprocessing\n") and "clean-corpus-n.perl" in text


def check_cleaning_counts(frame: pd.DataFrame) -> None:
    pairs = len(train_pairs())
    assert frame["train pairs in"].tolist() == [pairs, pairs]
    assert frame["kept"].tolist() == [len(KEPT) + 1] * 2
    assert frame["dropped"].tolist() == ["empty 1, ratio 1, too_long 1"] * 2
    for side, row in enumerate(frame.to_dict("records")):
        everything, kept = tokens(side)
        assert row["tokens (tokenised)"] == sum(map(len, everything))
        assert row["tokens after clean"] == sum(map(len, kept))
        assert row["word types"] == len({token for line in kept for token in line})


def check_bpe_counts(frame: pd.DataFrame, bpe: Path) -> None:
    all_types: set[str] = set()
    for side, (row, lang) in enumerate(zip(frame.to_dict("records"), ("en", "de"), strict=True)):
        segmented = [line.split() for line in read_lines(bpe / f"train.{lang}")]
        _, kept = tokens(side)
        # the BPE file is a segmentation of the cleaned text: joining the pieces gives the words back
        assert [" ".join(line).replace("@@ ", "").split() for line in segmented] == kept
        types = {piece for line in segmented for piece in line}
        all_types |= types
        assert row["subwords after BPE"] == sum(map(len, segmented))
        assert row["subwords after BPE"] > row["tokens after clean"]  # 30 merges leave words split
        assert row["subword types"] == len(types)
        assert row["subwords/token"] == pytest.approx(row["subwords after BPE"] / row["tokens after clean"])
    assert frame["network vocab"].tolist() == [4 + len(all_types)] * 2  # <pad> <s> </s> <unk> + types


@pytest.mark.slow
def test_cleaning_counts_match_the_hand_made_corpus(workflow):
    check_cleaning_counts(pd.read_csv(workflow / "results" / "tables" / "preprocessing.csv"))


@pytest.mark.slow
def test_bpe_and_vocabulary_counts(workflow):
    frame = pd.read_csv(workflow / "results" / "tables" / "preprocessing.csv")
    check_bpe_counts(frame, workflow / "data" / "hand" / "en-de" / "bpe")


@pytest.mark.slow
def test_round_trip_columns_by_hand(workflow):
    """The truecaser learned lower-case nouns from the lower-case training text, so the German test
    lines lose their capitalised nouns ("Hund", "Park", "Mann") on the way back: both differ only in
    case. The English lines have nothing capitalised but the first word, which detruecasing restores."""
    frame = pd.read_csv(workflow / "results" / "tables" / "preprocessing.csv")
    assert frame["round-trip exact %"].tolist() == [100.0, 0.0]
    assert frame["round-trip mismatches"].tolist() == ["none", f"case {len(TEST)}"]


def test_table_from_the_commands_run_in_process(tmp_path):
    """The same chain without Snakemake (each command through the CLI entry point, in this process),
    then the table function the script calls: fast enough for the default suite. The round trip is
    left to the workflow test above."""
    raw, work = tmp_path / "raw", tmp_path / "work"
    raw.mkdir()
    work.mkdir()
    langs = ("en", "de")
    for side, lang in enumerate(langs):
        write_lines(raw / f"train.{lang}", [pair[side] for pair in train_pairs()])
        assert (
            main(
                [
                    "tokenize",
                    "-l",
                    lang,
                    "--no-escape",
                    "-o",
                    str(work / f"tok.{lang}"),
                    str(raw / f"train.{lang}"),
                ]
            )
            == 0
        )
    clean = [f"--min={CLEAN['min']}", f"--max={CLEAN['max']}", f"--ratio={CLEAN['ratio']}"]
    assert (
        main(
            [
                *("clean", "--src-in", str(work / "tok.en"), "--tgt-in", str(work / "tok.de")),
                *("--src-out", str(work / "clean.en"), "--tgt-out", str(work / "clean.de"), *clean),
                *("--report", str(work / "drops.json")),
            ]
        )
        == 0
    )
    for lang in langs:
        assert (
            main(
                ["truecase", "train", "--model", str(work / f"tc-model.{lang}"), str(work / f"clean.{lang}")]
            )
            == 0
        )
        assert (
            main(
                [
                    "truecase",
                    "apply",
                    "--model",
                    str(work / f"tc-model.{lang}"),
                    "-o",
                    str(work / f"tc.{lang}"),
                    str(work / f"clean.{lang}"),
                ]
            )
            == 0
        )
    bpe = work / "bpe"
    bpe.mkdir()
    assert (
        main(
            [
                *(
                    "bpe",
                    "learn",
                    "--input",
                    f"en={work / 'tc.en'}",
                    "--input",
                    f"de={work / 'tc.de'}",
                    "-s",
                    "30",
                ),
                *("--codes", str(bpe / "codes"), "--vocab-dir", str(bpe)),
            ]
        )
        == 0
    )
    for lang in langs:
        assert (
            main(
                [
                    *("bpe", "apply", "--codes", str(bpe / "codes"), "--vocab", str(bpe / f"vocab.{lang}")),
                    *("--threshold", "0", "-o", str(bpe / f"train.{lang}"), str(work / f"tc.{lang}")),
                ]
            )
            == 0
        )
    assert main(["vocab", str(bpe / "train.en"), str(bpe / "train.de"), "-o", str(bpe / "vocab.txt")]) == 0

    files = PairFiles(
        corpus="hand",
        pair="en-de",
        drops_json=work / "drops.json",
        vocab=bpe / "vocab.txt",
        tokenized_train={lang: work / f"tok.{lang}" for lang in langs},
        truecased_train={lang: work / f"tc.{lang}" for lang in langs},
        bpe_train={lang: bpe / f"train.{lang}" for lang in langs},
    )
    frame = preprocessing_table([files])
    assert list(frame.columns) == COLUMNS[:-2]  # no round-trip reports given, no round-trip columns
    check_cleaning_counts(frame)
    check_bpe_counts(frame, bpe)
