"""Paired bootstrap: sacreBLEU's PairedTest against a naive resampling loop, and its sanity cases."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import numpy as np
import pytest
from data_sources import RealData
from sacrebleu.metrics import BLEU

from nmtvariants.cli import main
from nmtvariants.errors import InputError
from nmtvariants.evaluation.significance import paired_bootstrap
from nmtvariants.fileio import read_lines, write_lines


@pytest.fixture(scope="module")
def systems(real_data: RealData) -> tuple[list[str], list[str], list[str]]:
    """Real references; a good system (most lines right) and a poor one (half the words dropped)."""
    refs = list(read_lines(real_data.file("wmt/en-de/newstest2014.de.gz")))[:120]
    rng = random.Random(7)
    good = [line if i % 4 else " ".join(line.split()[:-3]) for i, line in enumerate(refs)]
    poor = [" ".join(w for w in line.split() if rng.random() < 0.5) for line in refs]
    return refs, good, poor


def test_system_against_itself_has_p_one(systems: tuple[list[str], list[str], list[str]]) -> None:
    refs, good, _ = systems
    result = paired_bootstrap(good, good, [refs], "de", metrics=("bleu", "chrf"))
    for record in result["metrics"].values():
        assert record["p_value"] == 1.0
        assert record["delta"] == 0.0
    assert result["identical_outputs"] is True


def test_clearly_better_system_is_significant(systems: tuple[list[str], list[str], list[str]]) -> None:
    refs, good, poor = systems
    result = paired_bootstrap(poor, good, [refs], "de", metrics=("bleu", "ter"), n_samples=1000)
    assert result["metrics"]["bleu"]["delta"] > 20
    assert result["metrics"]["bleu"]["p_value"] < 0.05
    assert result["metrics"]["ter"]["p_value"] < 0.05
    assert result["metrics"]["bleu"]["signature"].startswith("nrefs:1|bs:1000|seed:12345")


def test_tiny_difference_is_not_significant(systems: tuple[list[str], list[str], list[str]]) -> None:
    refs, good, _ = systems
    almost = list(good)
    almost[5] = " ".join(almost[5].split()[:-1])
    assert paired_bootstrap(good, almost, [refs], "de")["metrics"]["bleu"]["p_value"] > 0.05


def test_p_value_and_ci_equal_a_naive_bootstrap_loop(systems: tuple[list[str], list[str], list[str]]) -> None:
    """Resample sentence indices with the same generator, rescore each sample from scratch."""
    refs, good, poor = systems
    refs, good, poor = refs[:40], good[:40], poor[:40]
    n_samples, seed = 200, 4321
    ours = paired_bootstrap(poor, good, [refs], "de", n_samples=n_samples, seed=seed)["metrics"]["bleu"]

    bleu = BLEU()
    observed = abs(bleu.corpus_score(good, [refs]).score - bleu.corpus_score(poor, [refs]).score)
    indices = np.random.default_rng(seed).choice(len(refs), size=(n_samples, len(refs)), replace=True)
    diffs, sys_scores = [], []
    for sample in indices:
        sample_refs = [[refs[i] for i in sample]]
        s_sys = bleu.corpus_score([good[i] for i in sample], sample_refs).score
        s_base = bleu.corpus_score([poor[i] for i in sample], sample_refs).score
        diffs.append(abs(s_sys - s_base))
        sys_scores.append(s_sys)
    diffs_arr = np.array(diffs)
    count = int(((diffs_arr - diffs_arr.mean()) > observed).sum())
    assert ours["p_value"] == pytest.approx((count + 1) / (n_samples + 1))
    ordered = np.sort(sys_scores)
    lower, upper = ordered[n_samples // 40], ordered[n_samples - n_samples // 40 - 1]
    assert ours["system"]["ci95"] == pytest.approx(0.5 * (upper - lower), abs=1e-3)
    assert ours["system"]["mean"] == pytest.approx(np.mean(sys_scores), abs=1e-3)


def test_seed_is_fixed_and_environment_restored(systems: tuple[list[str], list[str], list[str]]) -> None:
    refs, good, poor = systems
    before = os.environ.get("SACREBLEU_SEED")
    first = paired_bootstrap(poor[:50], good[:50], [refs[:50]], n_samples=100, seed=1)
    second = paired_bootstrap(poor[:50], good[:50], [refs[:50]], n_samples=100, seed=1)
    assert first == second
    assert os.environ.get("SACREBLEU_SEED") == before


def test_length_mismatch_is_an_input_error() -> None:
    with pytest.raises(InputError, match="line-parallel"):
        paired_bootstrap(["a"], ["a", "b"], [["a", "b"]])


def test_over_one_replica_each_the_replica_test_is_sacrebleus_paired_bootstrap(
    systems: tuple[list[str], list[str], list[str]],
) -> None:
    """replica_bootstrap draws the sentences exactly as sacreBLEU does, so with one replica per side
    (the replica draws are then all 0) it gives the same p-value, sample for sample."""
    from nmtvariants.evaluation.significance import REPLICA_TEST, replica_bootstrap

    refs, good, poor = (part[:60] for part in systems)
    ours = replica_bootstrap([poor], [good], [refs], "de", ("bleu", "chrf"), n_samples=300, seed=21)
    theirs = paired_bootstrap(poor, good, [refs], "de", ("bleu", "chrf"), n_samples=300, seed=21)
    assert ours["test"] == REPLICA_TEST and ours["replicas"] == {"baseline": 1, "system": 1}
    for name in ("bleu", "chrf"):
        assert ours["metrics"][name]["p_value"] == theirs["metrics"][name]["p_value"]
        assert ours["metrics"][name]["delta"] == pytest.approx(theirs["metrics"][name]["delta"], abs=1e-9)
        assert ours["metrics"][name]["baseline"]["sd"] is None  # one seed: no spread


def test_replicas_of_identical_systems_are_not_significant(
    systems: tuple[list[str], list[str], list[str]],
) -> None:
    from nmtvariants.evaluation.significance import replica_bootstrap

    refs, good, poor = (part[:40] for part in systems)
    result = replica_bootstrap([good, poor], [poor, good], [refs], "de", n_samples=100)
    assert result["identical_outputs"] is True and result["metrics"]["bleu"]["p_value"] == 1.0
    with pytest.raises(InputError, match="line-parallel"):
        replica_bootstrap([good], [poor[:-1]], [refs], "de")


def test_the_replicas_command_writes_the_test_over_every_seed(
    tmp_path: Path, systems: tuple[list[str], list[str], list[str]]
) -> None:
    from nmtvariants.evaluation.significance import replica_bootstrap

    refs, good, poor = (part[:40] for part in systems)
    outputs = {
        "b1": poor,
        "b2": [*poor[:20], *good[20:]],
        "s1": good,
        "s2": [*good[:30], *poor[30:]],
        "s3": good,
    }
    for name, lines in outputs.items():
        write_lines(tmp_path / name, lines)
    write_lines(tmp_path / "ref", refs)
    out = tmp_path / "sig.json"
    args = ["significance", "--ref", str(tmp_path / "ref"), "-l", "de", "--samples", "120"]
    args += [word for name in ("b1", "b2") for word in ("--baseline", str(tmp_path / name))]
    args += [word for name in ("s1", "s2", "s3") for word in ("--system", str(tmp_path / name))]
    assert main([*args, "--seed", "5", "--json", str(out)]) == 0
    record = json.loads(out.read_text(encoding="utf-8"))
    expected = replica_bootstrap(
        [poor, outputs["b2"]], [good, outputs["s2"], good], [refs], "de", n_samples=120, seed=5
    )
    assert record["replicas"] == {"baseline": 2, "system": 3}
    assert record["metrics"]["bleu"]["p_value"] == expected["metrics"]["bleu"]["p_value"]
    assert [file["path"] for file in record["system_files"]] == [
        str(tmp_path / n) for n in ("s1", "s2", "s3")
    ]
    assert record["method"].startswith("paired bootstrap over sentences and replicas")


def test_with_one_output_each_the_command_is_sacrebleus_paired_bootstrap(
    tmp_path: Path, systems: tuple[list[str], list[str], list[str]]
) -> None:
    """One command for one run per system and for replicas: with one output each its p-value is
    sacreBLEU's paired bootstrap's."""
    refs, good, poor = (part[:60] for part in systems)
    for name, lines in (("ref", refs), ("base", poor), ("sys", good)):
        write_lines(tmp_path / name, lines)
    out = tmp_path / "sig.json"
    args = ["significance", "--baseline", str(tmp_path / "base"), "--system", str(tmp_path / "sys")]
    args += ["--ref", str(tmp_path / "ref"), "-l", "de", "--samples", "200", "--json", str(out)]
    assert main(args) == 0
    record = json.loads(out.read_text(encoding="utf-8"))
    theirs = paired_bootstrap(poor, good, [refs], "de", n_samples=200)
    assert record["metrics"]["bleu"]["p_value"] == theirs["metrics"]["bleu"]["p_value"] < 0.05
    assert len(record["system_files"][0]["sha256"]) == 64
