"""The Emelin 2019 and Bugliarello 2020 tables over seeds: every replica of a system is read, rows give
the mean ± sample sd over seeds with n, and the significance marks come from one test over sentences
and every replica of both systems (the core rule `significance`, `nmtvariants significance`).

The expected numbers are computed here independently of the library: means and standard deviations
with :mod:`statistics`, corpus BLEU with sacreBLEU itself, and the p-value by redoing the documented
draws of the replica bootstrap with ``sacrebleu.corpus_bleu`` on every resampled test set.
"""

from __future__ import annotations

import json
import re
import shlex
import statistics
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sacrebleu
from manifests import planned_manifest, score_manifest
from workflow_configs import dry_run_jobs, snakemake

from nmtvariants.cli import main
from nmtvariants.evaluation.significance import REPLICA_METHOD
from nmtvariants.fileio import write_lines
from nmtvariants.reporting.manifest import Entry, write_manifest

SEEDS = [1, 2, 3]
SAMPLES, TEST_SEED = 100, 7

# --- what the paper configs plan: one test per variant, reading every seed's output -----------------


def significance_jobs(*args: str) -> list[dict[str, str]]:
    result = snakemake("-n", "-p", "--forceall", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    return dry_run_jobs(result.stdout)


def option_values(shell: str, option: str) -> list[str]:
    words = shlex.split(shell)
    return [words[index + 1] for index, word in enumerate(words) if word == option]


def wildcards(job: dict[str, str]) -> dict[str, str]:
    return dict(part.split("=", 1) for part in job["wildcards"].split(", "))


@pytest.mark.parametrize(
    ("configfile", "table", "reference"),
    [
        ("experiments/emelin2019.yaml", "results/tables/emelin2019/bootstrap.md", "baseline"),
        ("experiments/bugliarello2020.yaml", "results/tables/bugliarello2020/table1.md", "transformer"),
    ],
)
def test_with_three_seeds_each_test_reads_three_outputs_of_both_systems(configfile, table, reference):
    jobs = significance_jobs(table, "--configfile", configfile)
    tests = [job for job in jobs if job["rule"] == "significance"]
    assert tests and all("significance" in job["shell"] for job in tests)
    for job in tests:
        found = wildcards(job)
        folder = f"results/{found['experiment']}/{found['pair']}"

        def replicas(variant: str, found: dict[str, str] = found, folder: str = folder) -> list[str]:
            names = [variant, f"{variant}-seed2", f"{variant}-seed3"]
            return [f"{folder}/{name}/{found['testset']}.hyp" for name in names]

        assert found["variant"] != reference
        assert option_values(job["shell"], "--system") == replicas(found["variant"])
        assert option_values(job["shell"], "--baseline") == replicas(reference)
        assert job["output"] == f"{folder}/{found['variant']}/{found['testset']}.significance.json"
    # each result once: one job per (experiment, pair, variant, test set)
    assert len({job["output"] for job in tests}) == len(tests)
    (builder,) = [job for job in jobs if job["output"].startswith(table)]
    read = re.findall(r"results/[^\s\"',=]+?\.significance\.json", builder["shell"])
    assert sorted(set(read)) == sorted(job["output"] for job in tests)


def test_the_one_seed_demo_tests_one_output_against_one():
    jobs = significance_jobs(
        "results/tables/bugliarello2020/table1.md", "results/tables/emelin2019/bootstrap.md"
    )
    tests = [job for job in jobs if job["rule"] == "significance"]
    assert len(tests) == 8  # four variants against the Transformer, four against Emelin's baseline
    for job in tests:
        found = wildcards(job)
        assert option_values(job["shell"], "--system") == [
            f"results/{found['experiment']}/{found['pair']}/{found['variant']}/{found['testset']}.hyp"
        ]
        assert len(option_values(job["shell"], "--baseline")) == 1
    (manifest_job,) = [job for job in jobs if job["rule"] == "bugliarello2020_table1"]
    written = planned_manifest(manifest_job["shell"])
    replicas = Counter((e["pair"], e["variant"], e["testset"]) for e in written if "scores" in e["files"])
    assert replicas and set(replicas.values()) == {1}


# --- the tables from three recorded seeds ------------------------------------------------------------

REFS = [
    "Ein Mann fährt Fahrrad auf der Straße .",
    "Zwei Hunde spielen im Schnee .",
    "Eine Frau liest ein Buch im Park .",
    "Kinder spielen Fußball auf einer Wiese .",
    "Ein Mädchen isst ein Eis .",
    "Der alte Mann sitzt auf einer Bank .",
]
OUTPUTS = {  # three replicas (seeds 1, 2, 3) of each system
    "baseline": [
        ["Ein Mann fährt Rad auf der Straße .", "Zwei Hunde spielen in Schnee .",
         "Eine Frau liest Buch im Park .", "Kinder spielen Fußball auf Wiese .", "Ein Mädchen isst Eis .",
         "Der Mann sitzt auf der Bank ."],
        ["Ein Mann fährt Fahrrad auf Straße .", "Zwei Hunde spielen im Schnee .",
         "Eine Frau liest ein Buch .", "Kinder spielen Ball auf einer Wiese .", "Ein Mädchen isst Eis .",
         "Der alte Mann sitzt ."],
        ["Ein Mann fährt Rad .", "Zwei Hunde spielen im Schnee .", "Eine Frau liest im Park .",
         "Kinder spielen Fußball auf einer Wiese .", "Mädchen isst ein Eis .",
         "Der Mann sitzt auf einer Bank ."],
    ],
    "lexical": [
        ["Ein Mann fährt Fahrrad auf der Straße .", "Zwei Hunde spielen im Schnee .",
         "Eine Frau liest Buch im Park .", "Kinder spielen Ball auf Wiese .", "Ein Mädchen isst Eis .",
         "Der Mann sitzt ."],
        ["Ein Mann fährt Fahrrad auf der Straße .", "Zwei Hunde spielen im Schnee .",
         "Eine Frau liest ein Buch im Park .", "Kinder spielen Fußball auf Wiese .",
         "Ein Mädchen isst ein Eis .", "Der Mann sitzt auf einer Bank ."],
        ["Ein Mann fährt auf der Straße .", "Zwei Hunde spielen im Schnee .",
         "Eine Frau liest ein Buch im Park .", "Kinder spielen Fußball auf einer Wiese .",
         "Ein Mädchen isst Eis .", "Der alte Mann sitzt auf der Bank ."],
    ],
}  # fmt: skip


def corpus_bleu(hyps: list[str], refs: list[str]) -> float:
    return sacrebleu.corpus_bleu(hyps, [refs]).score


def independent_p(baseline: list[list[str]], system: list[list[str]], refs: list[str]) -> float:
    """The replica bootstrap as documented: numpy default_rng(seed) draws the sentences, then the
    system's replicas, then the baseline's; each sample compares the mean corpus BLEU of the drawn
    replicas on the drawn sentences; two-sided centred p."""
    rng = np.random.default_rng(TEST_SEED)
    lines = len(refs)
    sentences = rng.choice(lines, size=(SAMPLES, lines), replace=True)
    drawn_system = rng.choice(len(system), size=(SAMPLES, len(system)), replace=True)
    drawn_baseline = rng.choice(len(baseline), size=(SAMPLES, len(baseline)), replace=True)

    def resampled(hyps: list[str], sample: int) -> float:
        indices = sentences[sample]
        return corpus_bleu([hyps[i] for i in indices], [refs[i] for i in indices])

    differences = []
    for sample in range(SAMPLES):
        ours = statistics.mean(resampled(system[k], sample) for k in drawn_system[sample])
        theirs = statistics.mean(resampled(baseline[k], sample) for k in drawn_baseline[sample])
        differences.append(ours - theirs)
    observed = statistics.mean(corpus_bleu(h, refs) for h in system) - statistics.mean(
        corpus_bleu(h, refs) for h in baseline
    )
    centred = np.abs(differences) - np.mean(np.abs(differences))
    return (1 + int(np.sum(centred > abs(observed)))) / (SAMPLES + 1)


def replica_folder(variant: str, seed: int) -> str:
    return variant if seed == SEEDS[0] else f"{variant}-seed{seed}"


@pytest.fixture
def recorded(tmp_path: Path) -> dict:
    """Each replica's output, its score JSON (sacreBLEU of the output) and the replica test of lexical
    against the baseline (`significance`, 100 samples, seed 7)."""
    write_lines(tmp_path / "ref", REFS)
    hyps: dict[str, list[str]] = {}
    scores: dict[str, list[str]] = {}
    for variant, outputs in OUTPUTS.items():
        for seed, lines in zip(SEEDS, outputs, strict=True):
            folder = tmp_path / replica_folder(variant, seed)
            folder.mkdir()
            write_lines(folder / "test.hyp", lines)
            hyps.setdefault(variant, []).append(str(folder / "test.hyp"))
            bleu = corpus_bleu(lines, REFS)
            record = {
                "system": f"toy/en-de/{replica_folder(variant, seed)}",
                "testset": "test",
                "scores": {
                    "bleu": {"score": bleu, "signature": "nrefs:1|tok:13a"},
                    "tok-bleu": {"score": bleu + 1.0, "signature": "nrefs:1|tok:none"},
                },
            }
            (folder / "test.scores.json").write_text(json.dumps(record), encoding="utf-8")
            scores.setdefault(variant, []).append(str(folder / "test.scores.json"))
    test = tmp_path / "lexical" / "test.significance.json"
    args = ["significance", "--ref", str(tmp_path / "ref"), "-l", "de", "--metrics", "bleu"]
    args += [word for path in hyps["baseline"] for word in ("--baseline", path)]
    args += [word for path in hyps["lexical"] for word in ("--system", path)]
    args += ["--samples", str(SAMPLES), "--seed", str(TEST_SEED), "--json", str(test)]
    assert main(args) in (0, None)
    bleu = {variant: [corpus_bleu(lines, REFS) for lines in outputs] for variant, outputs in OUTPUTS.items()}
    return {"scores": scores, "significance": str(test), "bleu": bleu, "tmp": tmp_path}


def method_note() -> str:
    return REPLICA_METHOD.format(n=SAMPLES, seed=TEST_SEED)


def test_bugliarello_table1_gives_mean_sd_over_seeds_and_the_replica_test(recorded):
    entries = []
    for variant, switches in (("baseline", {}), ("lexical", {"pascal": {}})):
        info = {"switches": switches, "derived": None}
        for seed, scores in zip(SEEDS, recorded["scores"][variant], strict=True):
            entries.append(Entry({"scores": scores}, "toy", "en-de", variant, seed, "test", info=info))
    test = {"significance": recorded["significance"]}
    entries.append(Entry(test, "toy", "en-de", "lexical", testset="test", info=entries[-1].info))
    out = recorded["tmp"] / "table1.md"
    manifest = str(write_manifest(recorded["tmp"] / "m1.json", entries))
    assert main(["bugliarello2020-table", "--table", "main", "--manifest", manifest, "--out", str(out)]) == 0
    table = pd.read_csv(out.with_suffix(".csv")).set_index("variant")
    p_value = independent_p(OUTPUTS["baseline"], OUTPUTS["lexical"], REFS)
    for variant in OUTPUTS:
        row, bleu = table.loc[variant], recorded["bleu"][variant]
        assert row["n"] == 3
        assert row["BLEU"] == pytest.approx(statistics.mean(bleu))
        assert row["BLEU sd"] == pytest.approx(statistics.stdev(bleu))
        assert [row[f"BLEU seed {seed}"] for seed in SEEDS] == pytest.approx(bleu)
    delta = statistics.mean(recorded["bleu"]["lexical"]) - statistics.mean(recorded["bleu"]["baseline"])
    assert table.loc["lexical", "delta"] == pytest.approx(round(delta, 2))
    assert table.loc["lexical", "p"] == pytest.approx(round(p_value, 4))
    mark = table.loc["lexical", "mark"]
    assert ("" if pd.isna(mark) else mark) == ("‡" if p_value < 0.01 else "")
    text = out.read_text(encoding="utf-8")
    mean, sd = statistics.mean(recorded["bleu"]["lexical"]), statistics.stdev(recorded["bleu"]["lexical"])
    assert f"| {mean:.2f} ± {sd:.2f} |" in text
    assert "Mean ± sample standard deviation over 3 seeds (1, 2, 3)" in text
    assert method_note() in " ".join(text.split())
    # Table 3 reads the same result (one test per variant) and shows the same spread
    out3 = recorded["tmp"] / "table3.md"
    manifest = str(write_manifest(recorded["tmp"] / "m3.json", entries[len(SEEDS) :]))
    assert main(["bugliarello2020-table", "--table", "ablation", "--manifest", manifest,
                 "--out", str(out3)]) == 0  # fmt: skip
    ablation = pd.read_csv(out3.with_suffix(".csv"))
    assert ablation["BLEU sd"].tolist() == pytest.approx([statistics.stdev(recorded["bleu"]["lexical"])])
    assert ablation["n"].tolist() == [3]


def test_emelin_tables_give_mean_sd_over_seeds_and_the_replica_test(recorded):
    tmp = recorded["tmp"]
    files = [path for variant in OUTPUTS for path in recorded["scores"][variant]]
    seeds = [seed for _ in OUTPUTS for seed in SEEDS]
    table1 = tmp / "table1_bleu.md"
    manifest = score_manifest(tmp / "m1.json", files, seeds)
    args = ["--manifest", manifest, "--title", "T1", "--out", str(table1)]
    assert main(["emelin2019-bleu", *args]) == 0
    bleu = pd.read_csv(table1.with_suffix(".csv"))
    for variant in OUTPUTS:
        for testset in ("test", "mean"):  # one test set: its mean is its score, seed by seed
            row = bleu[(bleu["variant"] == variant) & (bleu["testset"] == testset)].iloc[0]
            assert row["n"] == 3
            assert row["BLEU"] == pytest.approx(statistics.mean(recorded["bleu"][variant]))
            assert row["BLEU sd"] == pytest.approx(statistics.stdev(recorded["bleu"][variant]))
            assert row["tok. BLEU sd"] == pytest.approx(statistics.stdev(recorded["bleu"][variant]))
            assert [row[f"BLEU seed {seed}"] for seed in SEEDS] == pytest.approx(recorded["bleu"][variant])
    assert "over 3 seeds (1, 2, 3)" in table1.read_text(encoding="utf-8")

    table4 = tmp / "table4.md"
    switches = {"baseline": {}, "lexical": {"shortcuts": {"kind": "lexical"}}}
    manifest = score_manifest(tmp / "m4.json", files, seeds, switches)
    args = ["--manifest", manifest, "--title", "T4", "--out", str(table4)]
    assert main(["emelin2019-variants", *args]) == 0
    variants = pd.read_csv(table4.with_suffix(".csv")).set_index("variant")
    delta = statistics.mean(recorded["bleu"]["lexical"]) - statistics.mean(recorded["bleu"]["baseline"])
    assert variants.loc["lexical", "Δ BLEU"] == pytest.approx(delta)
    assert variants.loc["lexical", "BLEU sd"] == pytest.approx(statistics.stdev(recorded["bleu"]["lexical"]))

    boot = tmp / "bootstrap.md"
    test = Entry({"significance": recorded["significance"]}, "toy", "en-de", "lexical", testset="test")
    manifest = str(write_manifest(tmp / "mb.json", [test]))
    args = ["--manifest", manifest, "--title", "B", "--out", str(boot)]
    assert main(["emelin2019-bootstrap", *args]) == 0
    table = pd.read_csv(boot.with_suffix(".csv")).set_index("variant")
    for variant in OUTPUTS:
        assert table.loc[variant, "n"] == 3
        assert table.loc[variant, "BLEU"] == pytest.approx(statistics.mean(recorded["bleu"][variant]))
        assert table.loc[variant, "BLEU sd"] == pytest.approx(statistics.stdev(recorded["bleu"][variant]))
    assert table.loc["lexical", "Δ BLEU"] == pytest.approx(delta)
    assert table.loc["lexical", "p (BLEU)"] == pytest.approx(
        independent_p(OUTPUTS["baseline"], OUTPUTS["lexical"], REFS)
    )
    text = " ".join(boot.read_text(encoding="utf-8").split())
    assert method_note() in text and "One training seed per variant" not in text
