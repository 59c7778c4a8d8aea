"""The whole workflow on a toy run, as a user gets it: toyworld -> preprocessing -> train -> average
-> translate -> postprocess -> evaluate -> tables -> report, by real Snakemake in a temporary folder
(tests/toy_workflow.py), then the content a user reads.

Every expectation is computed here independently of the stage that wrote it: scores and signatures
with sacreBLEU on the workflow's own hypothesis and raw reference, line and token counts from the
raw files, the round-trip column from the JSON reports, commits with git on the copy. The run has
32 jobs; the measured ones (preprocessing, training) pay the CLI's start-up (about 2 s of CPU each),
the rest start in the run's fork server: ~15 s on 2 idle cores (more on a busy machine): marked slow.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pandas as pd
import pytest
import sacrebleu
from toy_workflow import TARGET, run_snakemake, toy_config, workflow_copy

from nmtvariants.fileio import read_lines
from nmtvariants.training.plateau import plateau_record

pytestmark = pytest.mark.slow

SCORE_COLUMNS = [
    *("experiment", "pair", "variant", "testset", "n"),
    *("BLEU", "BLEU sd", "chrF", "chrF sd", "TER", "TER sd"),
    *("BLEU seed 1234", "chrF seed 1234", "TER seed 1234"),  # one seed: config.yaml's
]
PREPROCESSING_COLUMNS = [
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
STATISTICS_COLUMNS = ["corpus", "split", "language", "sentences", "tokens", "types", "tokens/sentence"]
REPORT_SECTIONS = [
    "baseline: translation quality",
    "Data statistics",
    "Preprocessing",
    "Scores and their signatures",
    "Training runs",
    "Data checksums",
    "Hardware",
    "Configuration",
]
SYSTEM = "results/baseline/en-de/baseline"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    root = tmp_path_factory.mktemp("e2e")
    config = toy_config()
    commit = workflow_copy(root, config)
    result = run_snakemake(root, TARGET)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    (run_dir,) = (root / "models" / "runs").iterdir()
    return SimpleNamespace(root=root, commit=commit, config=config, run_dir=run_dir)


def text(run: SimpleNamespace, name: str) -> str:
    return (run.root / name).read_text(encoding="utf-8")


def sections(markdown: str) -> list[str]:
    return [line[3:] for line in markdown.splitlines() if line.startswith("## ")]


def sacrebleu_scores(run: SimpleNamespace) -> dict[str, tuple[float, str]]:
    """metric -> (score, signature) from sacreBLEU on the postprocessed hypothesis and raw reference."""
    hyp = list(read_lines(run.root / SYSTEM / "test.hyp"))
    ref = list(read_lines(run.root / "data/toyworld/raw/test.de"))
    scores = {}
    for label, metric in (
        ("BLEU", sacrebleu.metrics.BLEU()),
        ("chrF", sacrebleu.metrics.CHRF()),
        ("TER", sacrebleu.metrics.TER()),
    ):
        scores[label] = (metric.corpus_score(hyp, [ref]).score, str(metric.get_signature()))
    return scores


def test_scores_table_rows_columns_values_and_signatures(run: SimpleNamespace) -> None:
    frame = pd.read_csv(run.root / "results/tables/baseline/baseline.csv")
    assert list(frame.columns) == SCORE_COLUMNS
    assert frame[SCORE_COLUMNS[:4]].values.tolist() == [["baseline", "en-de", "baseline", "test"]]
    expected = sacrebleu_scores(run)
    hyp_lines = len(list(read_lines(run.root / SYSTEM / "test.hyp")))
    assert hyp_lines == run.config["toyworld"]["sizes"]["test"]
    markdown = text(run, "results/tables/baseline/baseline.md")
    for metric, (score, signature) in expected.items():
        assert frame[metric].iloc[0] == pytest.approx(score, abs=1e-9), metric
        assert f"- {metric}: `{signature}`" in markdown
    scores = json.loads(text(run, f"{SYSTEM}/test.scores.json"))
    assert {scores["scores"][m]["signature"] for m in ("bleu", "chrf", "ter")} == {
        signature for _, signature in expected.values()
    }


def test_preprocessing_table_rows_columns_and_round_trip(run: SimpleNamespace) -> None:
    frame = pd.read_csv(run.root / "results/tables/preprocessing.csv")
    assert list(frame.columns) == PREPROCESSING_COLUMNS
    assert frame[["corpus", "pair", "lang"]].values.tolist() == [
        ["toyworld", "en-de", "en"],
        ["toyworld", "en-de", "de"],
    ]
    train = run.config["toyworld"]["sizes"]["train"]
    for row in frame.to_dict("records"):
        lang = row["lang"]
        tokens = sum(len(line.split()) for line in read_lines(run.root / f"data/toyworld/tok/train.{lang}"))
        assert row["train pairs in"] == train and row["tokens (tokenised)"] == tokens
        pieces = sum(
            len(line.split()) for line in read_lines(run.root / f"data/toyworld/en-de/bpe/train.{lang}")
        )
        assert row["subwords after BPE"] == pieces
        report = json.loads(text(run, f"results/toyworld/en-de/roundtrip/test.{lang}.json"))
        assert report["files"]["bpe"] == f"data/toyworld/en-de/bpe/test.{lang}"
        assert row["round-trip exact %"] == pytest.approx(
            100 * report["inverse"]["identical"] / report["lines"]
        )


def test_data_statistics_rows_count_the_raw_files(run: SimpleNamespace) -> None:
    frame = pd.read_csv(run.root / "results/tables/data_statistics.csv")
    assert list(frame.columns) == STATISTICS_COLUMNS
    assert len(frame) == 3 * 4  # train/valid/test x toyworld's four languages
    for row in frame.to_dict("records"):
        lines = list(read_lines(run.root / f"data/toyworld/raw/{row['split']}.{row['language']}"))
        assert row["sentences"] == len(lines) == run.config["toyworld"]["sizes"][row["split"]]
        assert row["tokens"] == sum(len(line.split()) for line in lines)


def test_every_result_names_the_commit_that_computed_it(run: SimpleNamespace) -> None:
    clean = {"commit": run.commit, "dirty": False}
    assert json.loads(text(run, f"{SYSTEM}/test.scores.json"))["provenance"] == clean
    assert json.loads((run.run_dir / "run.json").read_text(encoding="utf-8"))["provenance"] == clean
    provenance = json.loads(text(run, "results/tables/baseline/baseline.provenance.json"))
    assert provenance["written_by"] == clean
    assert [source["provenance"] for source in provenance["sources"]] == [clean]
    report = text(run, TARGET)
    assert f"report written by commit `{run.commit}`" in report
    assert f"models trained by commit `{run.commit}`" in report
    assert report.count(f"computed by commit `{run.commit}`") == 3  # the three tables


def test_report_sections_and_content(run: SimpleNamespace) -> None:
    report = text(run, TARGET)
    assert report.startswith("# nmtvariants report\n")
    assert sections(report) == REPORT_SECTIONS
    _, signature = sacrebleu_scores(run)["BLEU"]
    scores_section = report.split("## Scores and their signatures")[1].split("\n## ")[0]
    assert re.search(
        rf"\| {SYSTEM}/test.scores.json \| baseline/en-de/baseline \| test \| BLEU \| [0-9.]+ "
        rf"\| `{re.escape(signature)}` \| `{run.commit}` \|",
        scores_section,
    )
    runs_section = report.split("## Training runs")[1].split("\n## ")[0]
    updates = run.config["experiments"]["baseline"]["train"]["max_updates"]
    row = next(line for line in runs_section.splitlines() if line.startswith(f"| runs/{run.run_dir.name} |"))
    assert row.startswith(f"| runs/{run.run_dir.name} | {updates} | max_updates | ")
    assert row.endswith(f" | `{run.commit}` |")
    plateau = json.loads((run.run_dir / "run.json").read_text(encoding="utf-8"))["plateau"]
    assert plateau == plateau_record(run.run_dir / "train_log.csv")  # what the report's cells show
    assert "sacreBLEU signature: none" not in report.split("## Data statistics")[0]


def test_the_runs_fork_server_served_the_unmeasured_commands_and_stopped(run: SimpleNamespace) -> None:
    """The Snakefile's fork server (nmtvariants.fork_server): the run's torch commands that Snakemake
    does not measure (average, translate) ran in it and succeeded; measured ones (train, `benchmark:`)
    ran in their own processes; the server stopped with the run."""
    lines = text(run, "logs/fork_server.log").splitlines()
    served = [line for line in lines if "): exit status" in line]
    assert all("exit status 0 " in line for line in served), served
    commands = {line.split("fork server: ")[1].split(" (pid")[0] for line in served}
    assert {"average", "translate"} <= commands and "train" not in commands, commands
    assert "stopped after" in lines[-1]
