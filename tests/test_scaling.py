"""Input-sized resource requests, their growth on retries, and the cluster plan.

The requests are checked where a cluster needs them: in the workflow's own dry run, for jobs whose
input is toy-sized and WMT-sized (sparse files: Snakemake reads sizes, not bytes), against the cost
curves computed independently from their definition. The plan's arithmetic is checked against a
hand-summed example, and the fitted curves against the rehearsal's own measurements.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nmtvariants.scaling import costs, plan

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "scale_data_path.json"
MIB = 2**20


def test_requests_grow_with_input_and_attempt() -> None:
    toy = costs.mem_mb("tokenize", 1.0), costs.runtime_minutes("tokenize", 1.0)
    assert toy == (costs.FLOOR_MB, costs.FLOOR_MINUTES)
    wmt = 600.0  # MiB: one side of WMT14 EN-DE, raw
    stage = costs.STAGES["bpe_learn"]
    predicted_mb = max(costs.FLOOR_MB, (stage.c + stage.d * wmt) * costs.MEMORY_HEADROOM)
    assert costs.mem_mb("bpe_learn", wmt) == math.ceil(predicted_mb)
    assert costs.mem_mb("bpe_learn", wmt, attempt=2) == math.ceil(predicted_mb * costs.RETRY_GROWTH)
    predicted_min = max(costs.FLOOR_MINUTES, stage.a * wmt**stage.b * costs.TIME_HEADROOM / 60)
    assert costs.runtime_minutes("bpe_learn", wmt) == math.ceil(predicted_min)
    assert costs.runtime_minutes("bpe_learn", wmt, attempt=3) == math.ceil(predicted_min * 4)


def test_decoding_memory_covers_the_model_and_the_cache_budget() -> None:
    """translate keeps each batch's decoder cache within DECODER_CACHE_MB (inference/translate.py), so
    a job holds the model, that budget and a fixed rest: the BASE model's decode (beam 16, WMT
    sentences) peaked at 9.5 GB in batches of 64 before the budget, 3.6 GB with it (scale_data_path.md)."""
    base, big = 240.0, 840.0  # MiB: averaged BASE and BIG checkpoints
    assert costs.decoding_mem_mb(4000, base) == 2 * 240 + 2048 + 1500 >= 3610  # MB, the measured peak
    expected = 2 * big + costs.DECODER_CACHE_MB + costs.DECODING_OVERHEAD_MB
    assert costs.decoding_mem_mb(4000, big) == math.ceil(expected)
    assert costs.decoding_mem_mb(4000, big, attempt=2) == math.ceil(expected * costs.RETRY_GROWTH)


def test_training_memory_is_the_larger_of_config_and_data() -> None:
    assert costs.train_mem_mb(4000, 0.5) == 4000
    wmt_enfr = 35_762_532 * costs.STAGES["train_data"].mb_per_pair  # WMT14 EN-FR's BPE'd training text
    big = costs.train_mem_mb(4000, wmt_enfr)
    assert big == math.ceil(costs.STAGES["train_data"].peak_mb(wmt_enfr) * costs.MEMORY_HEADROOM)
    assert big > 4000
    assert costs.train_mem_mb(4000, wmt_enfr, attempt=2) == math.ceil(
        costs.STAGES["train_data"].peak_mb(wmt_enfr) * costs.MEMORY_HEADROOM * costs.RETRY_GROWTH
    )


def test_sharded_stages_ask_for_one_core_where_the_work_is_short() -> None:
    """Toy and test-set jobs take one core (a two-core job waits for two free cores at once); a WMT
    training corpus, or one whose size is not known before it is downloaded, takes the most."""
    for stage in ("tokenize", "truecase_apply"):
        cost = costs.STAGES[stage]
        assert costs.threads(stage, 20_000, 2) == 1  # toyworld's training split
        assert costs.threads(stage, plan.TEST_SET_LINES, 2) == 1
        assert costs.threads(stage, plan.KNOWN_PAIRS["wmt14_ende"], 2) == 2
        assert costs.threads(stage, None, 2) == 2
        # the switch sits where the predicted one-core time reaches the threshold
        pairs = (costs.SHARDING_FROM_SECONDS / cost.a) ** (1 / cost.b) / cost.mb_per_pair
        assert costs.threads(stage, math.floor(pairs * 0.99), 2) == 1
        assert costs.threads(stage, math.ceil(pairs * 1.01), 2) == 2


def test_every_sized_rule_has_a_curve() -> None:
    """The rules name themselves in sized_mem_mb/sized_runtime; each must map to a fitted stage."""
    text = (REPO / "rules" / "preprocess.smk").read_text()
    rules = re.findall(r"^rule (\w+):", text, re.M)
    sized = set(re.findall(r'sized_(?:mem_mb|runtime)\("(\w+)"\)', text))
    assert sized == set(rules)
    assert all(costs.STAGE_OF_RULE[rule] in costs.STAGES for rule in sized)


def test_slurm_profile_retries_so_that_requests_can_grow() -> None:
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    assert profile["retries"] >= 2


def test_fitted_curves_reproduce_the_rehearsal() -> None:
    """costs.py holds the rehearsal's fits (benchmarks/results/scale_data_path.json), and they describe
    its training-corpus jobs: seconds within 25% for the median job of each growing stage (the machine
    was shared: single jobs scatter more), and memory requests that cover every job's measured peak."""
    measured = json.loads(RESULTS.read_text())
    for stage, fit in measured["fits"].items():
        cost = costs.STAGES[stage]
        for name in ("a", "b", "c", "d"):
            assert getattr(cost, name) == pytest.approx(fit[name], rel=0.02), (stage, name)
        if fit["b"] == 0:  # an input that does not grow with the corpus: a constant, nothing to check
            continue
        errors = sorted(abs(cost.seconds(p["input_mb"]) / p["seconds"] - 1) for p in fit["points"])
        assert errors[len(errors) // 2] <= 0.25, (stage, errors)
        for point in fit["points"]:  # the request made from the curve covers every measured peak
            assert costs.mem_mb(stage, point["input_mb"]) >= point["max_rss_mb"], (stage, point)


def _dry_run(root: Path, *targets: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", *targets, "-n", "-s", str(REPO / "Snakefile"), "-d", str(root),
         "--configfile", str(root / "config.yaml")],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _requests(stdout: str, rule: str) -> list[tuple[int, int]]:
    found, current = [], None
    for line in stdout.splitlines():
        if started := re.match(r"^(?:local)?rule (\w+):", line):
            current = started.group(1)
        elif current == rule and "resources:" in line:
            values = dict(re.findall(r"(\w+)=([^,]+)", line))
            found.append((int(values["mem_mb"]), int(values["runtime"])))
    return found


@pytest.mark.parametrize("train_mib", [1, 700])
def test_dry_run_requests_follow_the_input(tmp_path: Path, train_mib: int) -> None:
    """The real workflow plans a tokenize and a clean job on a toy-sized and a WMT-sized corpus; their
    requests are the cost curves at the input's size (sparse files of that size)."""
    paper = yaml.safe_load((REPO / "experiments" / "emelin2019.yaml").read_text())
    corpus = dict(paper["corpora"]["wmt14_ende"], pairs=["en-de"], testsets=["newstest2014-full"])
    corpus["source"] = ["wmt14_ende", "wmt13:en-de", "wmt14/full:en-de"]
    config = {"mirror": None, "corpora": {"wmt14_ende": corpus}, "experiments": {}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    raw = tmp_path / "data" / "wmt14_ende" / "raw"
    raw.mkdir(parents=True)
    for split in ("train", "newstest2013", "newstest2014-full"):
        for lang in ("en", "de"):
            with (raw / f"{split}.{lang}").open("wb") as handle:
                handle.truncate(train_mib * MIB if split == "train" else 300_000)
    tok = tmp_path / "data" / "wmt14_ende" / "tok"
    tok.mkdir()
    for lang in ("en", "de"):
        with (tok / f"train.{lang}").open("wb") as handle:
            handle.truncate(train_mib * MIB)
    stdout = _dry_run(tmp_path, "data/wmt14_ende/tok/newstest2013.en", "data/wmt14_ende/en-de/clean/train.en")
    tokenize, clean = _requests(stdout, "tokenize"), _requests(stdout, "clean")
    assert tokenize == [
        (costs.mem_mb("tokenize", 300_000 / MIB), costs.runtime_minutes("tokenize", 300_000 / MIB))
    ]
    assert clean == [(costs.mem_mb("clean", 2 * train_mib), costs.runtime_minutes("clean", 2 * train_mib))]
    if train_mib == 1:
        assert clean == [(costs.FLOOR_MB, costs.FLOOR_MINUTES)]


DRY_RUN = """
rule tokenize:
    input: data/wmt/raw/train.en
    output: data/wmt/tok/train.en
    jobid: 4
    wildcards: corpus=wmt, split=train, lang=en
    threads: 2
    resources: tmpdir=/tmp, runtime=<TBD>, mem_mb=<TBD>

rule tokenize:
    output: data/wmt/tok/newstest2013.en
    jobid: 5
    wildcards: corpus=wmt, split=newstest2013, lang=en
    resources: tmpdir=/tmp

rule bpe_learn:
    jobid: 7
    wildcards: corpus=wmt, src=en, tgt=de
    resources: tmpdir=/tmp

rule train:
    jobid: 9
    wildcards: run=abc123
    threads: 8

localrule all:
    jobid: 0
"""


def test_plan_sums_the_curves_over_the_dry_runs_jobs() -> None:
    jobs = plan.parse_dry_run(DRY_RUN)
    assert [(job.rule, job.threads) for job in jobs] == [
        ("tokenize", 2), ("tokenize", 1), ("bpe_learn", 1), ("train", 8), ("all", 1)
    ]  # fmt: skip
    stages = {
        "tokenize": costs.StageCost(a=2.0, b=1.0, c=100.0, d=0.0, mb_per_pair=1e-4),
        "bpe_learn": costs.StageCost(a=10.0, b=1.5, c=50.0, d=0.5, mb_per_pair=2e-4),
    }
    plans = plan.plan_data_path(jobs, {"wmt": 1_000_000}, stages)
    # by hand: tokenize train 100 MiB -> 200 s, test set 3000 lines -> 0.3 MiB -> 0.6 s
    assert plans["tokenize"].jobs == 2
    assert plans["tokenize"].core_seconds == pytest.approx(200.6)
    assert plans["tokenize"].longest_seconds == pytest.approx(200.0)
    # bpe_learn: 200 MiB -> 10 * 200^1.5 s, 50 + 0.5 * 200 MB
    assert plans["bpe_learn"].core_seconds == pytest.approx(10 * 200**1.5)
    assert plans["bpe_learn"].peak_mb == pytest.approx(150.0)
    assert plans["tokenize"].wall_seconds(cores=4) == pytest.approx(200.0)
    assert plans["tokenize"].wall_seconds(cores=1) == pytest.approx(200.6)
    training = plan.plan_training(jobs, {"abc123": 7.2e9}, tokens_per_gpu_second=1e5)
    assert training.gpu_hours == pytest.approx(20.0)
    with pytest.raises(KeyError):
        plan.plan_data_path(jobs, {}, stages)


def test_run_tokens_counts_every_gpu_or_the_effective_batch() -> None:
    assert plan.run_tokens({"max_updates": 100, "batch_tokens": 1000, "update_freq": 2}, gpus=4) == 800_000
    assert (
        plan.run_tokens({"max_updates": 100, "batch_tokens": 1000, "effective_batch_tokens": 25_000}, 4)
        == 2.5e6
    )


def test_plan_command_end_to_end(tmp_path: Path) -> None:
    """`nmtvariants plan` on the paper config's WMT14 EN-DE corpus: the data-path rows from the
    workflow's own dry run, and a clear exit 2 when a corpus's size is unknown."""
    paper = yaml.safe_load((REPO / "experiments" / "emelin2019.yaml").read_text())
    corpus = dict(paper["corpora"]["wmt14_ende"], pairs=["en-de"], testsets=["newstest2014-full"])
    corpus["source"] = ["wmt14_ende", "wmt13:en-de", "wmt14/full:en-de"]
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"mirror": None, "corpora": {"wmt14_ende": corpus}, "experiments": {}}))
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    command = [sys.executable, "-m", "nmtvariants", "plan", "--configfile", str(config), "--cores", "8"]
    command += ["--snakefile", str(REPO / "Snakefile"), "data/wmt14_ende/en-de/bpe/train.de"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {line.split("|")[1].strip(): line for line in done.stdout.splitlines() if line.startswith("| ")}
    assert {"tokenize", "clean", "truecase_train", "truecase_apply", "bpe_learn", "bpe_apply"} <= set(rows)
    expected = costs.STAGES["bpe_learn"].seconds(
        plan.KNOWN_PAIRS["wmt14_ende"] * costs.STAGES["bpe_learn"].mb_per_pair
    )
    assert f"| {expected / 3600:,.2f} |" in rows["bpe_learn"]
    config.write_text(yaml.safe_dump({"mirror": None, "corpora": {"wmt_other": corpus}, "experiments": {}}))
    command[-1] = "data/wmt_other/en-de/bpe/train.de"
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 2
    assert "give --pairs wmt_other=N" in done.stderr and "Traceback" not in done.stderr
