"""`scores-table` on score files written by the real `evaluate`: the rows, columns and values a user
reads, checked against sacreBLEU's own corpus scores on the same files, and the signature notes."""

from __future__ import annotations

import json
import statistics

import numpy as np
import pandas as pd
import pytest
import sacrebleu

from nmtvariants.cli import main
from nmtvariants.fileio import write_lines
from nmtvariants.reporting.replicas import TOY_BASELINE_SPREAD

REFERENCE = [
    "Ein Mann fährt mit dem Fahrrad die Straße entlang.",
    "Zwei Kinder spielen im Park mit einem roten Ball.",
    "Die Frau liest ein Buch auf der Bank.",
    "Ein Hund läuft über die grüne Wiese.",
    "Das Wetter ist heute sehr schön.",
]
SYSTEMS = {
    "toy/en-de/baseline": [
        "Ein Mann fährt mit dem Rad die Straße entlang.",
        "Zwei Kinder spielen im Park mit einem Ball.",
        "Die Frau liest ein Buch auf einer Bank.",
        "Ein Hund rennt über die Wiese.",
        "Das Wetter ist heute schön.",
    ],
    "toy/en-de/shortcuts": [
        "Ein Mann fährt mit dem Fahrrad die Straße entlang.",
        "Zwei Kinder spielen im Park mit einem roten Ball.",
        "Eine Frau liest das Buch auf der Bank.",
        "Ein Hund läuft über die grüne Wiese.",
        "Heute ist das Wetter sehr schön.",
    ],
}


@pytest.fixture
def table(tmp_path):
    """Evaluate both systems with the CLI, then build the table from the two score files."""
    write_lines(tmp_path / "ref.de", REFERENCE)
    score_files = []
    for system, hypotheses in SYSTEMS.items():
        variant = system.rsplit("/", 1)[1]
        write_lines(tmp_path / f"{variant}.de", hypotheses)
        out = tmp_path / f"{variant}.scores.json"
        code = main(
            [
                *("evaluate", "--hyp", str(tmp_path / f"{variant}.de"), "--ref", str(tmp_path / "ref.de")),
                *("-l", "de", "--metrics", "bleu,chrf,ter", "--system", system, "--testset", "toytest"),
                *("--json", str(out)),
            ]
        )
        assert code == 0
        score_files.append(out)
    md = tmp_path / "tables" / "scores.md"
    seeds = ["--seeds", "1234", "1234"]
    code = main(["scores-table", *map(str, score_files), *seeds, "--title", "Toy: quality", "--out", str(md)])
    assert code == 0
    return md, score_files


def test_rows_columns_and_values_match_sacrebleu(table):
    md, _ = table
    frame = pd.read_csv(md.with_suffix(".csv"))
    assert list(frame.columns) == [
        *("experiment", "pair", "variant", "testset", "n"),
        *("BLEU", "BLEU sd", "chrF", "chrF sd", "TER", "TER sd"),
        *("BLEU seed 1234", "chrF seed 1234", "TER seed 1234"),
    ]
    assert frame.n.tolist() == [1, 1] and frame["BLEU sd"].isna().all()  # one seed: no spread
    assert frame["BLEU seed 1234"].tolist() == frame.BLEU.tolist()
    assert frame[["experiment", "pair", "variant", "testset"]].values.tolist() == [
        ["toy", "en-de", "baseline", "toytest"],
        ["toy", "en-de", "shortcuts", "toytest"],
    ]
    for row, hypotheses in zip(frame.to_dict("records"), SYSTEMS.values(), strict=True):
        expected_bleu = sacrebleu.corpus_bleu(hypotheses, [REFERENCE]).score
        expected_chrf = sacrebleu.corpus_chrf(hypotheses, [REFERENCE]).score
        expected_ter = sacrebleu.corpus_ter(hypotheses, [REFERENCE]).score
        assert row["BLEU"] == pytest.approx(expected_bleu, abs=1e-9)
        assert row["chrF"] == pytest.approx(expected_chrf, abs=1e-9)
        assert row["TER"] == pytest.approx(expected_ter, abs=1e-9)
    # the two systems differ, so a table that repeated one row's numbers would fail above
    assert frame.BLEU.iloc[0] != frame.BLEU.iloc[1]


def test_markdown_shows_title_rounded_values_and_one_signature_per_metric(table):
    md, _ = table
    text = md.read_text(encoding="utf-8")
    assert text.startswith("# Toy: quality\n")
    assert "1 seed (1234)" in text and "±" not in text
    assert "a significance mark tests the sampling of test sentences only" in text
    assert "Toy world" not in text  # not asked for: real data, as far as the command knows


def test_a_toy_table_says_toy_world_the_seed_count_and_the_measured_spread(table):
    md, score_files = table
    out = md.with_name("toy.md")
    args = ["scores-table", *map(str, score_files), "--seeds", "1234", "1234", "--toy", "--out", str(out)]
    assert main([*args, "--title", "Toy: quality"]) == 0
    text = out.read_text(encoding="utf-8")
    spread = TOY_BASELINE_SPREAD
    assert "**Toy world, 1 seed**: tiny models on the generated toyworld corpus" in text
    listed = ", ".join(map(str, spread.seeds))
    assert f"varies by {spread.bleu:.2f} between seeds {listed} ({spread.source}, {spread.date})" in text
    assert text.index("**Toy world") < text.index("1 seed (1234)")  # the lead, then the seeds note
    bleu = sacrebleu.corpus_bleu(SYSTEMS["toy/en-de/shortcuts"], [REFERENCE]).score
    row = next(line for line in text.splitlines() if "| shortcuts" in line)
    assert f"{bleu:.2f}" in row
    metric = sacrebleu.metrics.BLEU()
    metric.corpus_score(SYSTEMS["toy/en-de/baseline"], [REFERENCE])
    signature = str(metric.get_signature())
    assert "tok:13a" in signature and f"version:{sacrebleu.__version__}" in signature
    assert "Signatures:" in text and f"- BLEU: `{signature}`" in text
    for label in ("chrF", "TER"):
        assert sum(line.startswith(f"- {label}: `") for line in text.splitlines()) == 1
    assert "disagree" not in text


def test_provenance_lists_each_score_file_with_its_signatures(table):
    md, score_files = table
    record = json.loads(md.with_suffix(".provenance.json").read_text(encoding="utf-8"))
    assert record["title"] == "Toy: quality"
    assert [source["path"] for source in record["sources"]] == [p.as_posix() for p in score_files]
    for source, system in zip(record["sources"], SYSTEMS, strict=True):
        assert source["system"] == system and source["testset"] == "toytest"
        assert set(source["signatures"]) == {"BLEU", "chrF", "TER"}
        assert source["provenance"]["commit"]


def test_disagreeing_tokenizers_are_stated_in_the_notes(tmp_path):
    write_lines(tmp_path / "ref.de", REFERENCE)
    write_lines(tmp_path / "hyp.de", SYSTEMS["toy/en-de/baseline"])
    files = []
    for tokenize in ("13a", "intl"):
        out = tmp_path / f"{tokenize}.json"
        args = ["evaluate", "--hyp", str(tmp_path / "hyp.de"), "--ref", str(tmp_path / "ref.de"), "-l", "de"]
        args += ["--metrics", "bleu", "--tokenize", tokenize, "--system", f"toy/en-de/{tokenize}"]
        assert main([*args, "--testset", "toytest", "--json", str(out)]) == 0
        files.append(out)
    md = tmp_path / "scores.md"
    assert main(["scores-table", *map(str, files), "--title", "T", "--out", str(md)]) == 0
    text = md.read_text(encoding="utf-8")
    assert "- BLEU: **signatures disagree across rows**" in text
    assert "tok:13a" in text and "tok:intl" in text


# --- replicas: three recorded seeds -----------------------------------------------------------------

# Each system's three replicas: different hypotheses per seed, so that the mean and the spread matter.
REPLICAS = {
    "baseline": [
        SYSTEMS["toy/en-de/baseline"],
        [*SYSTEMS["toy/en-de/baseline"][:3], *REFERENCE[3:]],
        [REFERENCE[0], *SYSTEMS["toy/en-de/baseline"][1:]],
    ],
    "shortcuts": [
        SYSTEMS["toy/en-de/shortcuts"],
        [*SYSTEMS["toy/en-de/shortcuts"][:4], "Das Wetter ist schön."],
        [SYSTEMS["toy/en-de/baseline"][0], *SYSTEMS["toy/en-de/shortcuts"][1:]],
    ],
}
SEEDS = [1, 2, 3]


def three_seed_scores(tmp_path):
    """Score files of both systems' three replicas, in folders named as the workflow names them
    (the first seed's under the variant's name, the others ``<variant>-seed<N>``)."""
    write_lines(tmp_path / "ref.de", REFERENCE)
    files, seeds = [], []
    for variant, replicas in REPLICAS.items():
        for seed, hypotheses in zip(SEEDS, replicas, strict=True):
            replica = variant if seed == SEEDS[0] else f"{variant}-seed{seed}"
            hyp = tmp_path / replica / "toytest.hyp"
            hyp.parent.mkdir()
            write_lines(hyp, hypotheses)
            out = hyp.with_suffix(".scores.json")
            args = ["evaluate", "--hyp", str(hyp), "--ref", str(tmp_path / "ref.de"), "-l", "de"]
            args += ["--metrics", "bleu,chrf", "--system", f"toy/en-de/{replica}", "--testset", "toytest"]
            assert main([*args, "--json", str(out)]) == 0
            files.append(out)
            seeds.append(str(seed))
    return files, seeds


def test_three_seeds_give_mean_sample_sd_n_and_each_seeds_score(tmp_path):
    files, seeds = three_seed_scores(tmp_path)
    md = tmp_path / "table.md"
    assert main(["scores-table", *map(str, files), "--seeds", *seeds, "--title", "T", "--out", str(md)]) == 0
    frame = pd.read_csv(md.with_suffix(".csv"))
    assert frame.variant.tolist() == ["baseline", "shortcuts"] and frame.n.tolist() == [3, 3]
    text = md.read_text(encoding="utf-8")
    assert "Mean ± sample standard deviation over 3 seeds (1, 2, 3)" in text
    for row, replicas in zip(frame.to_dict("records"), REPLICAS.values(), strict=True):
        bleu = [sacrebleu.corpus_bleu(hyps, [REFERENCE]).score for hyps in replicas]
        chrf = [sacrebleu.corpus_chrf(hyps, [REFERENCE]).score for hyps in replicas]
        assert len(set(bleu)) == 3  # the replicas differ
        for label, values in (("BLEU", bleu), ("chrF", chrf)):
            assert row[label] == pytest.approx(statistics.mean(values), abs=1e-9)
            assert row[f"{label} sd"] == pytest.approx(statistics.stdev(values), abs=1e-9)
            assert [row[f"{label} seed {seed}"] for seed in SEEDS] == pytest.approx(values, abs=1e-9)
        line = next(line for line in text.splitlines() if f"| {row['variant']} " in line)
        assert f"{statistics.mean(bleu):.2f} ± {statistics.stdev(bleu):.2f}" in line


def test_without_seeds_the_replica_folders_give_the_seeds(tmp_path):
    files, _ = three_seed_scores(tmp_path)
    md = tmp_path / "table.md"
    assert main(["scores-table", *map(str, files), "--title", "T", "--out", str(md)]) == 0
    frame = pd.read_csv(md.with_suffix(".csv"))
    assert frame.variant.tolist() == ["baseline", "shortcuts"] and frame.n.tolist() == [3, 3]
    # the first seed's folder carries no seed: its value is unrecorded, not guessed
    assert [column for column in frame.columns if column.startswith("BLEU seed")] == [
        "BLEU seed ?",
        "BLEU seed 2",
        "BLEU seed 3",
    ]


def naive_replica_bootstrap(
    baseline: list[list[str]], system: list[list[str]], n_samples: int, seed: int
) -> float:
    """The test of nmtvariants.evaluation.significance.replica_bootstrap written as a plain loop: the
    same draws from the same generator, each sample's BLEU rescored from scratch by sacreBLEU."""
    rng = np.random.default_rng(seed)
    n = len(REFERENCE)
    sentences = rng.choice(n, size=(n_samples, n), replace=True)
    drawn_system = rng.choice(len(system), size=(n_samples, len(system)), replace=True)
    drawn_baseline = rng.choice(len(baseline), size=(n_samples, len(baseline)), replace=True)

    def bleu(hypotheses: list[str], lines) -> float:
        return sacrebleu.corpus_bleu([hypotheses[i] for i in lines], [[REFERENCE[i] for i in lines]]).score

    everything = range(n)
    observed = statistics.mean(bleu(h, everything) for h in system) - statistics.mean(
        bleu(h, everything) for h in baseline
    )
    differences = []
    for sample in range(n_samples):
        system_mean = statistics.mean(bleu(system[j], sentences[sample]) for j in drawn_system[sample])
        baseline_mean = statistics.mean(bleu(baseline[j], sentences[sample]) for j in drawn_baseline[sample])
        differences.append(system_mean - baseline_mean)
    mean_absolute = sum(abs(d) for d in differences) / n_samples
    exceeding = sum(1 for d in differences if abs(d) - mean_absolute > abs(observed))
    return (exceeding + 1) / (n_samples + 1)


def test_significance_over_all_replicas_equals_a_naive_loop_and_is_named(tmp_path):
    files, seeds = three_seed_scores(tmp_path)
    md = tmp_path / "table.md"
    options = ["--reference", "baseline", "--significance-samples", "150", "--significance-seed", "99"]
    args = ["scores-table", *map(str, files), "--seeds", *seeds, *options, "--title", "T", "--out", str(md)]
    assert main(args) == 0
    frame = pd.read_csv(md.with_suffix(".csv"))
    expected = naive_replica_bootstrap(REPLICAS["baseline"], REPLICAS["shortcuts"], 150, 99)
    assert frame["BLEU p"].iloc[1] == pytest.approx(expected, abs=1e-12)
    assert np.isnan(frame["BLEU p"].iloc[0])  # the reference is not tested against itself
    text = md.read_text(encoding="utf-8")
    assert (
        "Significance (BLEU p): each variant against baseline on the same test set, over all replicas" in text
    )
    assert "paired bootstrap over sentences and replicas" in text and "default_rng(seed 99)" in text
    row = next(line for line in text.splitlines() if "| shortcuts " in line)
    assert row.rstrip(" |").endswith(f" {expected:.3f}")  # p with three decimals


def test_a_changed_hypothesis_is_not_tested_silently(tmp_path):
    files, seeds = three_seed_scores(tmp_path)
    write_lines(tmp_path / "shortcuts-seed2" / "toytest.hyp", REFERENCE)
    args = ["scores-table", *map(str, files), "--seeds", *seeds, "--reference", "baseline"]
    assert main([*args, "--title", "T", "--out", str(tmp_path / "t.md")]) != 0
